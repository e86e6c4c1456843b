package orchestrator

import (
	"context"
	"time"
)

// Store is the coordinator's durable state: runners, agents, sessions, runs, events and callbacks. It is
// the truth: the coordinator keeps nothing in memory that a restart could lose.
//
// Implementations live in subpackages (store/sqlstore for SQLite and PostgreSQL) and run the conformance
// suite in store/storetest. Rules every implementation follows:
//
//   - Missing records are [ErrNotFound]; uniqueness violations and lost guards are [ErrConflict].
//   - Guarded updates (Update*, Claim*) change a record only when its current status is one of the
//     expected ones, in one atomic statement; concurrent callers can never both win.
//   - Times are stored with at least microsecond precision and returned in UTC.
//   - Returned records are fresh copies the caller may modify.
//   - Lists are ordered oldest first (by creation time, then id) unless a filter says otherwise.
//   - Deleting a missing record is ErrNotFound; a cursor (AfterID) naming a record that no longer exists
//     is ErrNotFound.
//   - JSON payloads come back byte for byte as stored.
type Store interface {
	// InTx runs fn in one transaction: either everything fn did through tx is committed, or nothing is.
	// Calling InTx on a tx runs fn in the same transaction. Inside fn use only tx: on SQLite the
	// transaction holds the store's only write connection, so a call through the outer Store waits for fn
	// to finish and never returns.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Store) error) error

	// PutRunner inserts the runner or replaces the record with the same ID. A new record has no secret
	// hash; a replaced one keeps its own.
	PutRunner(ctx context.Context, r *RunnerInfo) error
	GetRunner(ctx context.Context, id string) (*RunnerInfo, error)
	ListRunners(ctx context.Context, f RunnerFilter) ([]*RunnerInfo, error)
	// TouchRunner records a heartbeat: sets LastHeartbeatAt and, when the runner was stale, makes it online.
	// An unknown or offline runner is ErrNotFound (it must register again).
	TouchRunner(ctx context.Context, id string, at time.Time) (*RunnerInfo, error)
	// UpdateRunnerStatus moves a runner to status when its current status is one of from
	// (and, when heartbeatBefore is non-zero, its last heartbeat is older than it).
	UpdateRunnerStatus(ctx context.Context, id string, from []RunnerStatus, to RunnerStatus, heartbeatBefore time.Time) (*RunnerInfo, error)
	DeleteRunner(ctx context.Context, id string) error
	// SetRunnerSecretHash stores the SHA-256 hash of the runner's secret (see [Registration]); an empty
	// hash clears it, so that no secret is valid. The hash lives beside the runner's record, not in
	// [RunnerInfo], so that no listing and no log of a runner carries it. An unknown runner is ErrNotFound.
	SetRunnerSecretHash(ctx context.Context, id string, hash []byte) error
	// GetRunnerSecretHash returns the hash SetRunnerSecretHash stored, empty when there is none. An
	// unknown runner is ErrNotFound.
	GetRunnerSecretHash(ctx context.Context, id string) ([]byte, error)

	// CreateAgent inserts an agent; a taken name is ErrConflict.
	CreateAgent(ctx context.Context, a *Agent) error
	GetAgent(ctx context.Context, name string) (*Agent, error)
	// ListAgents returns agents ordered by name.
	ListAgents(ctx context.Context, f AgentFilter) ([]*Agent, error)
	// UpdateAgent replaces the blueprint and UpdatedAt of an existing agent.
	UpdateAgent(ctx context.Context, a *Agent) error
	DeleteAgent(ctx context.Context, name string) error
	// DeleteRunnerAgents deletes every agent owned by the runner and returns how many there were.
	DeleteRunnerAgents(ctx context.Context, runnerID string) (int, error)

	CreateSession(ctx context.Context, s *Session) error
	// CreateSessionWithRun creates a session and its first run in one atomic write: both exist after it,
	// or neither (a taken id of either is ErrConflict). It is how a run is started, so a store may make it
	// cheaper than the two creations in a transaction.
	CreateSessionWithRun(ctx context.Context, s *Session, r *Run) error
	// CreateSessionWithRunOnce is CreateSessionWithRun that also records k, with the run's and the
	// session's ids, in the same atomic write: a key recorded already is ErrConflict, and nothing is
	// created. Of concurrent creates with one key, exactly one succeeds.
	CreateSessionWithRunOnce(ctx context.Context, s *Session, r *Run, k *IdempotencyKey) error
	GetSession(ctx context.Context, id string) (*Session, error)
	ListSessions(ctx context.Context, f SessionFilter) ([]*Session, error)
	// UpdateSession applies u when the session's status is one of from (any status when from is empty) and
	// returns the updated session.
	UpdateSession(ctx context.Context, id string, from []SessionStatus, u SessionUpdate) (*Session, error)
	// DeleteSession deletes the session with its runs, events and callbacks (as parent or child).
	DeleteSession(ctx context.Context, id string) error
	// DeleteEndedSessions deletes up to limit sessions that ended (completed, failed or stopped) before
	// before, each with its runs, events, callbacks and webhooks, and returns how many it deleted
	// (retention). Sessions something is still on its way to are kept: one with a child that will call it
	// back, one with undelivered callbacks, one whose webhook is still being delivered.
	DeleteEndedSessions(ctx context.Context, before time.Time, limit int) (int, error)

	CreateRun(ctx context.Context, r *Run) error
	GetRun(ctx context.Context, id string) (*Run, error)
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// ClaimRuns atomically moves up to p.Max pending, unparked, due (RunAt not after p.Now) runs that the
	// runner described by p can execute (see [Demands.Matches]) to claimed, bound to the runner, highest
	// Priority first and oldest first within one (by RunAt, or CreatedAt for a run not delayed), and
	// returns them in that order. It never takes a run past its AgentLimit or KeyLimit, counted over the
	// runs claimed or running in the whole store, whatever claims run concurrently. None to take is an
	// empty result, not an error. A run is never claimed twice. Parked runs cost the claim nothing. Claiming several runs at once is one write instead of one per run: under load,
	// most of what a busy runner asks for.
	ClaimRuns(ctx context.Context, p ClaimParams) ([]*Run, error)
	// UpdateRun applies u when the run's status is one of from (any status when from is empty) and, when
	// runnerID is non-empty, the run is held by that runner. A run held by another runner is ErrConflict.
	UpdateRun(ctx context.Context, id string, from []RunStatus, runnerID string, u RunUpdate) (*Run, error)
	// SetRunsParked sets Parked on the listed runs that are still pending and returns how many changed.
	SetRunsParked(ctx context.Context, ids []string, parked bool) (int, error)
	// NextRunAt returns the earliest RunAt after after of a pending delayed run, the zero time when there
	// is none: when a runner parked in a long poll must next be woken.
	NextRunAt(ctx context.Context, after time.Time) (time.Time, error)
	// TakeStopRequests returns the runner's claimed or running runs with a stop requested that was never
	// sent, or sent before resendBefore, and marks them sent at now.
	TakeStopRequests(ctx context.Context, runnerID string, now, resendBefore time.Time) ([]*Run, error)

	// AppendEvents appends events to a session, assigning each the next sequence number (written back into
	// the events) and raising the session's LastEventSeq. An unknown session is ErrNotFound.
	AppendEvents(ctx context.Context, sessionID string, events []*Event) error
	// ListEvents returns up to limit events with Seq > afterSeq, in Seq order.
	ListEvents(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]*Event, error)
	// LastEvent returns the newest event of one of the given types with Seq > afterSeq; ErrNotFound if none.
	LastEvent(ctx context.Context, sessionID string, types []string, afterSeq int64) (*Event, error)

	CreateCallback(ctx context.Context, c *Callback) error
	// ListCallbacks returns callbacks oldest first.
	ListCallbacks(ctx context.Context, f CallbackFilter) ([]*Callback, error)
	// MarkCallbacksDelivered sets DeliveredAt and DeliveredRun on the listed callbacks that are not yet
	// delivered, and returns how many it marked.
	MarkCallbacksDelivered(ctx context.Context, ids []string, runID string, at time.Time) (int, error)

	// CreateWebhook records a webhook delivery to make.
	CreateWebhook(ctx context.Context, w *Webhook) error
	// ClaimWebhooks leases up to limit pending webhooks that are due (NextAttemptAt not after now), oldest
	// due first: it moves their NextAttemptAt to leaseUntil, so no other coordinator replica takes them
	// while this one delivers, and returns them.
	ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*Webhook, error)
	// UpdateWebhook records the outcome of a delivery attempt: Status, Attempts, NextAttemptAt, LastError
	// and DeliveredAt of w.
	UpdateWebhook(ctx context.Context, w *Webhook) error

	// CreateIdempotencyKey records an idempotency key with what its create answered; a key already
	// recorded is ErrConflict. Called in the transaction that creates the run, it makes the key unique
	// across coordinator replicas: of concurrent creates with one key, exactly one commits.
	CreateIdempotencyKey(ctx context.Context, k *IdempotencyKey) error
	GetIdempotencyKey(ctx context.Context, key string) (*IdempotencyKey, error)
	// DeleteIdempotencyKeys deletes up to limit keys created before before and returns how many it deleted.
	DeleteIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error)
	// CreateSchedule inserts a schedule; a taken id is ErrConflict.
	CreateSchedule(ctx context.Context, s *Schedule) error
	GetSchedule(ctx context.Context, id string) (*Schedule, error)
	// ListSchedules returns the schedules f selects, in the order [ScheduleFilter] gives.
	ListSchedules(ctx context.Context, f ScheduleFilter) ([]*Schedule, error)
	// UpdateSchedule writes every field of s but ID, AgentName and CreatedAt when the stored schedule's
	// Revision still equals s.Revision, and increments both. Of writers that read the same revision only
	// one wins, the others get ErrConflict: that is how exactly one coordinator replica fires each tick.
	UpdateSchedule(ctx context.Context, s *Schedule) error
	DeleteSchedule(ctx context.Context, id string) error

	// Close releases the store's resources.
	Close() error
}

// IdempotencyKey is a create remembered under the key its caller gave: a digest of the request, to tell a
// retry from a different request, and the answer.
type IdempotencyKey struct {
	Key         string
	RequestHash string
	RunID       string
	SessionID   string
	CreatedAt   time.Time
}

// BriefUpdater is an optional [Store] capability: the guarded updates of runs and sessions, returning only
// the few fields that decide what follows a run's start or end instead of the whole record. A run's end is
// the most frequent write a coordinator makes, and reading back every column of the run and of its
// session costs a store about as much as the two updates (on SQLite, an UPDATE of a run takes about
// 10 µs, with every column returned about 30). The coordinator uses it when its store has it.
//
// Each method is exactly its Store counterpart — the same guard, the same errors, the same changes,
// AppendEvents included — except for what it returns.
type BriefUpdater interface {
	UpdateRunBrief(ctx context.Context, id string, from []RunStatus, runnerID string, u RunUpdate) (*RunBrief, error)
	UpdateSessionBrief(ctx context.Context, id string, from []SessionStatus, u SessionUpdate) (*SessionBrief, error)
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
	From     []RunStatus
	RunnerID string
	Update   RunUpdate
}

// SessionsUpdate is one session's guarded update in [BatchBriefUpdater.UpdateSessionsBrief]: the
// arguments of [BriefUpdater.UpdateSessionBrief].
type SessionsUpdate struct {
	ID     string
	From   []SessionStatus
	Update SessionUpdate
}

// RunBrief is the part of a run that a coordinator needs after it changed the run: which session it
// belongs to, what it runs, how its caller is told of its end, its holder and status after the change, and
// what its metrics and trace need (when it was created, the trace it belongs to).
type RunBrief struct {
	ID          string
	SessionID   string
	AgentName   string
	AgentType   AgentType
	Mode        Mode
	Status      RunStatus
	RunnerID    string
	CallbackURL string
	// Limited is set when the run counts against a concurrency limit: its end frees a slot.
	Limited     bool
	TraceParent string
	CreatedAt   time.Time
}

// Brief returns the run's brief.
func (r *Run) Brief() *RunBrief {
	return &RunBrief{
		ID: r.ID, SessionID: r.SessionID, AgentName: r.AgentName, AgentType: r.AgentType, Mode: r.Mode,
		Status: r.Status, RunnerID: r.RunnerID, CallbackURL: r.CallbackURL,
		Limited: r.AgentLimit > 0 || r.ConcurrencyKey != "", TraceParent: r.TraceParent, CreatedAt: r.CreatedAt,
	}
}

// SessionBrief is the part of a session that a coordinator needs after it changed the session: what it
// runs, whom it calls back, its status and its newest event after the change.
type SessionBrief struct {
	ID              string
	AgentName       string
	AgentType       AgentType
	Status          SessionStatus
	ParentSessionID string
	LastEventSeq    int64
}

// Brief returns the session's brief.
func (s *Session) Brief() *SessionBrief {
	return &SessionBrief{
		ID: s.ID, AgentName: s.AgentName, AgentType: s.AgentType, Status: s.Status,
		ParentSessionID: s.ParentSessionID, LastEventSeq: s.LastEventSeq,
	}
}

// RunnerFilter selects runners. Zero fields select everything.
type RunnerFilter struct {
	Statuses []RunnerStatus
	// HeartbeatBefore selects runners whose last heartbeat is older than it.
	HeartbeatBefore time.Time
}

// AgentFilter selects agents. Zero fields select everything.
type AgentFilter struct {
	Type AgentType
	// Tags: the agent must carry all of them.
	Tags []string
	// RunnerID: agents owned by this runner.
	RunnerID string
}

// SessionFilter selects sessions, oldest first, in pages.
type SessionFilter struct {
	Statuses        []SessionStatus
	AgentName       string
	ParentSessionID string
	// AfterID continues a listing after the session with this id (the cursor of the previous page).
	AfterID string
	// Limit bounds the page; zero means no bound.
	Limit int
	// EndedBefore selects ended sessions whose EndedAt is older than it (retention).
	EndedBefore time.Time
	// NewestFirst lists the newest sessions first (created_at, then id, descending) instead of the oldest;
	// AfterID then continues toward older ones. A dashboard shows what just started without paging through
	// the whole history.
	NewestFirst bool
}

// RunFilter selects runs, oldest first.
type RunFilter struct {
	Statuses  []RunStatus
	SessionID string
	// RunnerID selects runs claimed by this runner.
	RunnerID string
	// DemandRunnerID selects runs pinned to this runner (Demands.RunnerID).
	DemandRunnerID string
	AgentName      string
	// CreatedBefore selects runs created before it (the no-match timeout).
	CreatedBefore time.Time
	// Parked, when set, selects runs whose Parked equals it.
	Parked  *bool
	AfterID string
	Limit   int
}

// CallbackFilter selects callbacks.
type CallbackFilter struct {
	ParentSessionID string
	ChildSessionID  string
	// Pending selects only callbacks not yet delivered.
	Pending bool
}

// ClaimParams describes the claiming runner; the store matches it against each pending run's demands and
// agent type exactly as [Demands.Matches] does.
type ClaimParams struct {
	Runner *RunnerInfo
	Now    time.Time
	// Max is the most runs one claim takes (a runner asks for as many as it has free slots); 0 means 1.
	Max int
}

// SessionUpdate lists the session fields to change; nil fields are left alone.
type SessionUpdate struct {
	Status            *SessionStatus
	RunnerID          *string
	CurrentRunID      *string
	ExecutorSessionID *string
	Result            *Result
	// ClearResult removes the result (Result must be nil).
	ClearResult bool
	Error       *string
	// EndedAt sets the end time; ClearEndedAt removes it (a resumed session).
	EndedAt      *time.Time
	ClearEndedAt bool
	UpdatedAt    time.Time
	// AppendEvents are appended to the session by the same update, exactly as [Store.AppendEvents]
	// appends them (each gets the next sequence number, written back, and the returned session's
	// LastEventSeq counts them), and only when the guard lets the update through. A run's end changes the
	// session and records its result and run_ended events: one statement fewer than doing both apart.
	AppendEvents []*Event
}

// RunUpdate lists the run fields to change; nil fields are left alone.
type RunUpdate struct {
	Status          *RunStatus
	RunnerID        *string
	Error           *string
	StopRequestedAt *time.Time
	StartedAt       *time.Time
	EndedAt         *time.Time
	// Usage records the run's usage (nil leaves it).
	Usage *Usage
}

// WriteChecker is an optional capability of a [Store], and of a [Coordinator] whose store has it
// (coordinator.Coordinator): CheckWrite makes a small real write and reports whether it failed — a full disk, a
// read-only database, a lost connection. The HTTP API's readiness check (GET /ready) answers 503 while
// it fails, so a load balancer stops sending work to a coordinator that cannot record it. Implementations
// may reuse a result for about a second, so that frequent checks cost the store little.
type WriteChecker interface {
	CheckWrite(ctx context.Context) error
}
