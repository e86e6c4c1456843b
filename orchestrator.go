package orchestrator

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AgentType says how an agent is executed.
type AgentType string

const (
	// AgentTypeAgent is an AI agent: driven by a prompt, resumable.
	AgentTypeAgent AgentType = "agent"
	// AgentTypeDeterministic is a program with typed parameters and structured output. Its blueprint is owned
	// by the runner that announced it, and its sessions cannot be resumed.
	AgentTypeDeterministic AgentType = "deterministic"
)

// ParseAgentType accepts the canonical names and their older aliases (autonomous → agent, procedural →
// deterministic). The empty string is returned as is so callers can apply their own default.
func ParseAgentType(s string) (AgentType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return "", nil
	case "agent", "autonomous", "ai":
		return AgentTypeAgent, nil
	case "deterministic", "procedural":
		return AgentTypeDeterministic, nil
	}
	return "", fmt.Errorf("unknown agent type %q (want agent or deterministic)", s)
}

// UnmarshalJSON accepts the aliases of [ParseAgentType].
func (t *AgentType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("agent type must be a string")
	}
	v, err := ParseAgentType(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Mode is how the caller of a run learns its outcome.
type Mode string

const (
	// ModeSync: the caller waits for the run to end and gets its result in the response.
	ModeSync Mode = "sync"
	// ModeAsyncPoll: the caller gets the session id at once and polls (or long-polls) for the result.
	ModeAsyncPoll Mode = "async_poll"
	// ModeAsyncCallback: the parent session is resumed with the child's result when the child ends.
	ModeAsyncCallback Mode = "async_callback"
)

// Valid reports whether m is one of the known modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeSync, ModeAsyncPoll, ModeAsyncCallback:
		return true
	}
	return false
}

// RunType says whether a run starts a new session or resumes an existing one.
type RunType string

const (
	RunTypeStart  RunType = "start"
	RunTypeResume RunType = "resume"
)

// RunStatus is the state of a run.
//
//	pending → claimed → running → completed | failed | stopped
//	pending → failed | stopped
//	claimed → failed | stopped
type RunStatus string

const (
	RunPending   RunStatus = "pending"
	RunClaimed   RunStatus = "claimed"
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunStopped   RunStatus = "stopped"
)

// Terminal reports whether no further transition can leave s.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunStopped
}

// runTransitions lists, for each status, the statuses a run may move to.
var runTransitions = map[RunStatus][]RunStatus{
	RunPending: {RunClaimed, RunFailed, RunStopped},
	RunClaimed: {RunRunning, RunCompleted, RunFailed, RunStopped},
	RunRunning: {RunCompleted, RunFailed, RunStopped},
}

// CanTransition reports whether a run may move from s to next.
func (s RunStatus) CanTransition(next RunStatus) bool {
	for _, n := range runTransitions[s] {
		if n == next {
			return true
		}
	}
	return false
}

// SessionStatus is the state of a session.
//
//	pending → running → completed | failed | stopped
//	pending → failed | stopped
//	completed | failed | stopped → pending (an AI session resumed)
//	waiting → pending (its approval granted) | failed (refused, expired) | stopped
//	running ⇄ waiting (its agent asked a person a question; answered, expired)
//	waiting → completed | failed | stopped (its run ended while a question was open)
//
// A session is waiting while it has an open [InputRequest]: created so by an approval gate, or moved
// there from running when its agent asks a question.
type SessionStatus string

const (
	SessionPending   SessionStatus = "pending"
	SessionRunning   SessionStatus = "running"
	SessionCompleted SessionStatus = "completed"
	SessionFailed    SessionStatus = "failed"
	SessionStopped   SessionStatus = "stopped"
	// SessionWaiting: the session waits for a person to answer an [InputRequest].
	SessionWaiting SessionStatus = "waiting"
)

// Ended reports whether the session has no run in progress.
func (s SessionStatus) Ended() bool {
	return s == SessionCompleted || s == SessionFailed || s == SessionStopped
}

var sessionTransitions = map[SessionStatus][]SessionStatus{
	SessionPending:   {SessionRunning, SessionCompleted, SessionFailed, SessionStopped},
	SessionRunning:   {SessionCompleted, SessionFailed, SessionStopped, SessionWaiting},
	SessionWaiting:   {SessionPending, SessionRunning, SessionCompleted, SessionFailed, SessionStopped},
	SessionCompleted: {SessionPending},
	SessionFailed:    {SessionPending},
	SessionStopped:   {SessionPending},
}

// CanTransition reports whether a session may move from s to next.
func (s SessionStatus) CanTransition(next SessionStatus) bool {
	for _, n := range sessionTransitions[s] {
		if n == next {
			return true
		}
	}
	return false
}

// RunnerStatus is a runner's liveness as the coordinator sees it.
type RunnerStatus string

const (
	// RunnerOnline: heartbeats arrive; the runner may claim runs.
	RunnerOnline RunnerStatus = "online"
	// RunnerStale: no heartbeat for a while; the runner may not claim new runs but keeps what it holds.
	RunnerStale RunnerStatus = "stale"
	// RunnerOffline: presumed dead; its blueprints are gone and its runs have failed. It must register again.
	RunnerOffline RunnerStatus = "offline"
)
