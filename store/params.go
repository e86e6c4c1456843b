package store

import (
	"encoding/json"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// RunnerFilter selects runners. Zero fields select everything.
type RunnerFilter struct {
	Statuses []orchestrator.RunnerStatus
	// HeartbeatBefore selects runners whose last heartbeat is older than it.
	HeartbeatBefore time.Time
}

// AgentFilter selects agents. Zero fields select everything.
type AgentFilter struct {
	Type orchestrator.AgentType
	// Tags: the agent must carry all of them.
	Tags []string
	// RunnerID: agents owned by this runner.
	RunnerID string
}

// CallbackFilter selects callbacks.
type CallbackFilter struct {
	ParentSessionID string
	ChildSessionID  string
	// Pending selects only callbacks not yet delivered.
	Pending bool
}

// ClaimParams describes the claiming runner; the store matches it against each pending run's demands and
// agent type exactly as [orchestrator.Demands.Matches] does.
type ClaimParams struct {
	Runner *orchestrator.RunnerInfo
	Now    time.Time
	// Max is the most runs one claim takes (a runner asks for as many as it has free slots); 0 means 1.
	Max int
}

// SessionUpdate lists the session fields to change; nil fields are left alone.
type SessionUpdate struct {
	Status            *orchestrator.SessionStatus
	RunnerID          *string
	CurrentRunID      *string
	ExecutorSessionID *string
	Result            *orchestrator.Result
	// ClearResult removes the result (Result must be nil).
	ClearResult bool
	Error       *string
	// ErrorCode sets the session's machine-readable failure code ([orchestrator.Session.ErrorCode]); an
	// empty string clears it.
	ErrorCode *string
	// CachedFrom sets the session whose result this one shares ([orchestrator.Session].CachedFrom).
	CachedFrom *string
	// Attempt sets the session's current attempt ([orchestrator.Session.Attempt]).
	Attempt *int
	// NextAttemptAt sets when the session's next attempt is due; ClearNextAttemptAt removes it.
	NextAttemptAt      *time.Time
	ClearNextAttemptAt bool
	// EndedAt sets the end time; ClearEndedAt removes it (a resumed session).
	EndedAt      *time.Time
	ClearEndedAt bool
	UpdatedAt    time.Time
	// AppendEvents are appended to the session by the same update, exactly as [Store.AppendEvents]
	// appends them (each gets the next sequence number, written back, and the returned session's
	// LastEventSeq counts them), and only when the guard lets the update through. A run's end changes the
	// session and records its result and run_ended events: one statement fewer than doing both apart.
	AppendEvents []*orchestrator.Event
	// AddUsage is added to the session's usage totals ([orchestrator.Session.Usage]) by the same update,
	// as an increment of the stored figures (never a read, then a write), so concurrent additions are all
	// counted. Usage events among AppendEvents are added too, as [Store.AppendEvents] adds them.
	AddUsage *orchestrator.Usage
}

// RunUpdate lists the run fields to change; nil fields are left alone.
type RunUpdate struct {
	Status          *orchestrator.RunStatus
	RunnerID        *string
	Error           *string
	StopRequestedAt *time.Time
	StartedAt       *time.Time
	EndedAt         *time.Time
	// Usage records the run's usage (nil leaves it).
	Usage *orchestrator.Usage
	// TimedOutAt records when the run was found past its timeout.
	TimedOutAt *time.Time
}

// InputRequestClose is how [Store.CloseInputRequest] closes an open input request.
type InputRequestClose struct {
	// Status is answered, expired or cancelled.
	Status orchestrator.InputRequestStatus
	// Answer and AnsweredBy are recorded with an answer.
	Answer     json.RawMessage
	AnsweredBy string
	At         time.Time
}
