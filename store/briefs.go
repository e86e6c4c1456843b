package store

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// BriefUpdater is an optional [Store] capability: the guarded updates of runs and sessions, returning only
// the few fields that decide what follows a run's start or end instead of the whole record. A run's end is
// the most frequent write a coordinator makes, and reading back every column of the run and of its
// session costs a store about as much as the two updates (on SQLite, an UPDATE of a run takes about
// 10 µs, with every column returned about 30). The coordinator uses it when its store has it.
//
// Each method is exactly its Store counterpart — the same guard, the same errors, the same changes,
// AppendEvents included — except for what it returns.
type BriefUpdater interface {
	UpdateRunBrief(ctx context.Context, id string, from []orchestrator.RunStatus, runnerID string, u RunUpdate) (*RunBrief, error)
	UpdateSessionBrief(ctx context.Context, id string, from []orchestrator.SessionStatus, u SessionUpdate) (*SessionBrief, error)
}

// BatchBriefUpdater is an optional [Store] capability: the guarded updates of [BriefUpdater] for many runs,
// or many sessions, at once. A coordinator ends the runs a runner reports together with one call of each
// (the runs' updates, then their sessions' with the result and run_ended events), so that a store over a
// network can write a group of ends in one statement per table instead of a few statements per run; the
// store in package sqlstore does so on PostgreSQL. The coordinator uses it when its store has it.
//
// Each update is applied exactly as its single counterpart would apply it alone — the same guard, the same
// changes, AppendEvents included — and the result holds one brief per update, in order. An update whose
// guard does not match (the record is missing, in another status, or held by another runner) changes
// nothing and its brief is nil; the others are applied all the same. Run the call in a transaction
// ([Store.InTx]) to make a group all or nothing. An error is the store's own failure, after which nothing
// of the call may be assumed applied unless the surrounding transaction commits.
type BatchBriefUpdater interface {
	UpdateRunsBrief(ctx context.Context, us []RunsUpdate) ([]*RunBrief, error)
	UpdateSessionsBrief(ctx context.Context, us []SessionsUpdate) ([]*SessionBrief, error)
}

// RunsUpdate is one run's guarded update in [BatchBriefUpdater.UpdateRunsBrief]: the arguments of
// [BriefUpdater.UpdateRunBrief].
type RunsUpdate struct {
	ID       string
	From     []orchestrator.RunStatus
	RunnerID string
	Update   RunUpdate
}

// SessionsUpdate is one session's guarded update in [BatchBriefUpdater.UpdateSessionsBrief]: the
// arguments of [BriefUpdater.UpdateSessionBrief].
type SessionsUpdate struct {
	ID     string
	From   []orchestrator.SessionStatus
	Update SessionUpdate
}

// RunBrief is the part of a run that a coordinator needs after it changed the run: which session it
// belongs to, what it runs, how its caller is told of its end, its holder and status after the change, and
// what its metrics and trace need (when it was created, the trace it belongs to).
type RunBrief struct {
	ID          string
	SessionID   string
	AgentName   string
	AgentType   orchestrator.AgentType
	Mode        orchestrator.Mode
	Status      orchestrator.RunStatus
	RunnerID    string
	CallbackURL string
	// Limited is set when the run counts against a concurrency limit: its end frees a slot.
	Limited     bool
	TraceParent string
	CreatedAt   time.Time
	// CacheKey and CacheRole are the run's result cache key and role ([orchestrator.Run].CacheKey): the
	// end of a run that fills the cache writes it and answers the runs waiting for it.
	CacheKey  string
	CacheRole string
	// Attempt and MaxAttempts are the run's attempt and how many its session's retry policy allows: a
	// failed run whose Attempt is below MaxAttempts may be retried.
	Attempt     int
	MaxAttempts int
	// Timeout is the run's timeout (to the millisecond); TimedOut is set once the coordinator found it
	// past it.
	Timeout  time.Duration
	TimedOut bool
}

// NewRunBrief returns r's brief: what a store that implements [BriefUpdater] returns after changing r.
func NewRunBrief(r *orchestrator.Run) *RunBrief {
	return &RunBrief{
		ID: r.ID, SessionID: r.SessionID, AgentName: r.AgentName, AgentType: r.AgentType, Mode: r.Mode,
		Status: r.Status, RunnerID: r.RunnerID, CallbackURL: r.CallbackURL,
		Limited: r.AgentLimit > 0 || r.ConcurrencyKey != "", TraceParent: r.TraceParent, CreatedAt: r.CreatedAt,
		CacheKey: r.CacheKey, CacheRole: r.CacheRole,
		Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, Timeout: time.Duration(r.TimeoutSeconds*1000) * time.Millisecond, TimedOut: r.TimedOutAt != nil,
	}
}

// SessionBrief is the part of a session that a coordinator needs after it changed the session: what it
// runs, whom it calls back, its status and its newest event after the change.
type SessionBrief struct {
	ID              string
	AgentName       string
	AgentType       orchestrator.AgentType
	Status          orchestrator.SessionStatus
	ParentSessionID string
	LastEventSeq    int64
}

// NewSessionBrief returns s's brief: what a store that implements [BriefUpdater] returns after changing s.
func NewSessionBrief(s *orchestrator.Session) *SessionBrief {
	return &SessionBrief{
		ID: s.ID, AgentName: s.AgentName, AgentType: s.AgentType, Status: s.Status,
		ParentSessionID: s.ParentSessionID, LastEventSeq: s.LastEventSeq,
	}
}
