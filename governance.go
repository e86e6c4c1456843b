package orchestrator

// A session and the sessions it started, theirs in turn, form a tree: the governance of that tree — stopping
// it as one unit, bounding its depth and size, bounding what it may spend — is described here. See
// docs/lifecycles.md ("Trees of sessions").

// StopOpts are the options of a session's stop ([Coordinator.StopSession]).
type StopOpts struct {
	// NoCascade stops only the session's own run and leaves its descendants running. By default a stop
	// cascades: every live descendant is stopped too, except a detached child (StartRunParams.Detached)
	// and the sessions below it.
	NoCascade bool `json:"no_cascade,omitempty"`
}

// TreeLimits bound a tree of sessions. A root may set them in StartRunParams.Limits; the coordinator's
// own limits (coordinator.Config.MaxTreeDepth and MaxTreeSessions) bound them, and the tighter value of
// each wins. The whole tree inherits the root's.
type TreeLimits struct {
	// MaxDepth is the deepest a session may be: the root has depth 0, its children 1, so MaxDepth 1
	// allows children and refuses grandchildren. Zero: the coordinator's limit.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxSessions is how many sessions the tree may hold, the root included, counting every session ever
	// started in it (a deleted or ended one still counts). Zero: the coordinator's limit.
	MaxSessions int `json:"max_sessions,omitempty"`
}

// Codes of the errors and reasons of tree governance.
const (
	// CodeTreeLimitExceeded refuses a start beyond a tree's depth or size (HTTP 409); the error's
	// "limit" detail names the limit (max_depth or max_sessions) and "max" its value.
	CodeTreeLimitExceeded = "tree_limit_exceeded"
	// CodeParentStopped and CodeParentFailed are the reasons a session was stopped because an ancestor
	// ended stopped or failed (or was stopped as a tree): the [EventStopRequested] event's reason and,
	// for a session whose run had not started, its ErrorCode.
	CodeParentStopped = "parent_stopped"
	CodeParentFailed  = "parent_failed"
)

// EventStopRequested is written on a session when a stop reaches it from its tree rather than by its own
// stop: {"reason": "parent_stopped" | "parent_failed" | "budget_exceeded", "by_session_id": the session
// whose stop, end or budget caused it}.
const EventStopRequested = "stop_requested"
