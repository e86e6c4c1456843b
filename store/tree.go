package store

import "github.com/agentorchestrator/orchestrator"

// TreeMember is a session found by [Store.LiveDescendants], with its current run: what a stop that
// reaches it through its tree must act on.
type TreeMember struct {
	SessionID       string
	ParentSessionID string
	AgentType       orchestrator.AgentType
	Status          orchestrator.SessionStatus
	// CurrentRunID is the session's current run, RunStatus that run's status (empty when the session has
	// no run) and StopRequested whether a stop of it was already asked for.
	CurrentRunID  string
	RunStatus     orchestrator.RunStatus
	RunnerID      string // the runner holding the current run, if any
	StopRequested bool
}

// DescendantsParams select the descendants of a session ([Store.LiveDescendants]).
type DescendantsParams struct {
	// SessionID is the session whose descendants are wanted (it is not itself among them).
	SessionID string
	// IncludeDetached also walks into detached children and their subtrees. A stop that cascades from a
	// parent leaves them out; a budget, which bounds everything below its owner, takes them in.
	IncludeDetached bool
}
