package orchestrator

import (
	"context"
	"encoding/json"
)

// Executor performs one run on a runner. Implementations: executor/deterministic (a command as a
// subprocess), executor/gofunc (Go functions in-process), executor/process (an external program speaking the
// stdin protocol), executor/claudecode (Claude Code, the AI executor). Every implementation runs the
// conformance table in executor/executortest.
type Executor interface {
	// Execute runs inv to its end and returns its result. Events (stderr lines, messages, progress) go to
	// events while it runs; the runner forwards them to the session.
	//
	// The returned Result describes the run's outcome: an ExitCode that is set and not 0, or a non-empty Error, means the
	// run failed. A non-nil error means the executor could not do its job at all (the program could not be
	// started); the run fails with that error. A nil Result with a nil error means the run completed and
	// its result is in the events it appended (a result event, else the last assistant message): the
	// coordinator derives the session's result from them (executor/process, for a program that exits 0
	// without a result file).
	//
	// When ctx is cancelled (the run was stopped, or the runner is shutting down) Execute must end the work
	// promptly, kill anything it started, and return. A stopped or timed-out run returns its partial Result
	// with Error "stopped" (or "timed out after …") and a nil error.
	Execute(ctx context.Context, inv *Invocation, events EventSink) (*Result, error)
}

// Invocation is everything an executor needs to perform one run.
type Invocation struct {
	// Mode is start or resume.
	Mode      RunType
	RunID     string
	SessionID string
	// AgentName is the name the agent was invoked by (possibly suffixed, "name@lnch_…").
	AgentName string
	// Blueprint is the agent's definition; for deterministic agents the runner's own blueprint.
	Blueprint *Blueprint
	// Parameters are validated, with schema defaults applied. For a resume, the new input ({"prompt": …}).
	Parameters json.RawMessage
	// ProjectDir is the working directory for the run.
	ProjectDir string
	// OutputSchema, when set, is what result_data must match.
	OutputSchema json.RawMessage
	// Metadata is the run's caller-supplied metadata (metadata.env adds environment variables).
	Metadata json.RawMessage
	// ExecutorSessionID is the executor's own session id, for a resume.
	ExecutorSessionID string
	// Attempt numbers the attempts at the run's session under its retry policy, from 1. An executor that
	// resumes its own session on a retry (Claude Code's --resume) knows by it that an earlier attempt
	// failed; most executors can ignore it.
	Attempt int
	// MaxBudgetUSD, when set, is what the session's tree may still spend, in US dollars, when the run was
	// claimed. The coordinator enforces the budget itself; an executor whose tool can bound its own spend
	// (Claude Code's --max-budget-usd) passes it on as a second line of defence.
	MaxBudgetUSD *float64
	// Env is added to the environment of any process the executor starts: AGENT_SESSION_ID, AGENT_RUN_ID
	// and, when the runner has a gateway, AGENT_ORCHESTRATOR_API_URL and AGENT_ORCHESTRATOR_TOKEN.
	Env map[string]string
}

// EventSink receives a run's events while it executes.
type EventSink interface {
	Emit(ctx context.Context, events ...Event) error
}

// EventSinkFunc adapts a function to [EventSink].
type EventSinkFunc func(ctx context.Context, events ...Event) error

// Emit calls f.
func (f EventSinkFunc) Emit(ctx context.Context, events ...Event) error { return f(ctx, events...) }

// DiscardEvents is an EventSink that drops everything.
var DiscardEvents EventSink = EventSinkFunc(func(context.Context, ...Event) error { return nil })

// Environment variables given to the processes executors start.
const (
	EnvSessionID = "AGENT_SESSION_ID"
	EnvRunID     = "AGENT_RUN_ID"
	EnvAPIURL    = "AGENT_ORCHESTRATOR_API_URL"
	EnvAPIToken  = "AGENT_ORCHESTRATOR_TOKEN"
)
