package orchestrator

import (
	"encoding/json"
	"time"
)

// Session is one invocation of an agent: its status, its lineage, its events and its result. A session has
// one run at a time; an AI session gets a new run each time it is resumed.
type Session struct {
	ID        string        `json:"session_id"`
	AgentName string        `json:"agent_name"`
	AgentType AgentType     `json:"agent_type"`
	Status    SessionStatus `json:"status"`
	// ParentSessionID is the session that started this one, if any.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// RootSessionID is the root of the session's tree (the session itself for a root), Depth its distance
	// from it (0 for a root), and Detached whether it was started to outlive its parent
	// ([StartRunParams.Detached]).
	RootSessionID string `json:"root_session_id,omitempty"`
	Depth         int    `json:"depth"`
	Detached      bool   `json:"detached,omitempty"`
	// Limits are the limits of the session's tree, the root's, inherited by every session in it: the
	// tighter of the coordinator's and what the root asked for.
	Limits *TreeLimits `json:"limits,omitempty"`
	// Callback is true when the session was started in async_callback mode. Whether a run's end calls the
	// parent back is decided by that run's mode; the runs that deliver callbacks to a session with
	// Callback set keep calling its own parent back.
	Callback   bool   `json:"callback,omitempty"`
	ProjectDir string `json:"project_dir,omitempty"`
	// Parameters are the parameters of the first run, after schema defaults were applied.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// OutputSchema is the schema result_data must match: the caller's, else the blueprint's.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Demands are the demands of the first run; a resume inherits them.
	Demands Demands `json:"demands,omitzero"`
	// Metadata is the caller's free-form metadata (metadata.env becomes the deterministic command's env).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// RunnerID is the runner of the latest run.
	RunnerID string `json:"runner_id,omitempty"`
	// CurrentRunID is the latest run.
	CurrentRunID string `json:"run_id,omitempty"`
	// ExecutorSessionID is the executor's own id for resuming (Claude Code's session id).
	ExecutorSessionID string `json:"executor_session_id,omitempty"`
	// Result is set once a run ends; a resumed session keeps its previous result until the new run ends.
	Result *Result `json:"result,omitempty"`
	// Error says why the session failed or stopped.
	Error string `json:"error,omitempty"`
	// ErrorCode is a machine code for why the session failed or stopped, when one is known: the
	// [Result.ErrorCode] of its last run, or the coordinator's own reason (a timeout, a refused approval, a
	// budget, a stopped parent, …). docs/http-api.md lists the codes.
	ErrorCode string `json:"error_code,omitempty"`
	// CachedFrom is the session whose result this one shares: set on a session answered from the result
	// cache, or that waited for an identical start in flight ([CachePolicy]).
	CachedFrom string `json:"cached_from,omitempty"`
	// WaitingReason says why a pending session's run has not started, when the coordinator knows a reason
	// other than a busy runner: "rate_limited" (its agent's [RateLimit] holds it) or "cache_in_flight" (it
	// waits for an identical start's result). It is computed when the session is read, not stored.
	WaitingReason string `json:"waiting_reason,omitempty"`
	// Attempt is the number of the session's current attempt, from 1: a retry after a failed attempt
	// counts it up, a resume starts again at 1.
	Attempt int `json:"attempt"`
	// MaxAttempts is how many attempts the session's retry policy allows (1: no retry).
	MaxAttempts int `json:"max_attempts"`
	// NextAttemptAt is when the current attempt, a retry, is due; absent on a first attempt and once the
	// session has ended.
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	// Retry is the retry policy the session was started with, when the request or the blueprint gave one.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// TraceID is the W3C trace id of the trace the session's first run belongs to (32 hex digits), empty
	// when it was started without trace context and tracing is off.
	TraceID string `json:"trace_id,omitempty"`
	// RerunOf is the session this one re-runs (see [Rerunner]), empty for a session started otherwise.
	RerunOf string `json:"rerun_of,omitempty"`
	// Usage is what the session has consumed so far, across all its runs, kept up to date as its usage
	// events arrive (see [EventUsage]); totals only (Model and Models are empty). docs/usage.md says how
	// usage events and a run's final figure are reconciled.
	Usage Usage `json:"usage"`
	// LastEventSeq is the sequence number of the newest event.
	LastEventSeq int64      `json:"last_event_seq"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
}

// Result is the outcome of a session, the same shape for every agent type.
type Result struct {
	// ResultType is "deterministic" or "agent".
	ResultType string `json:"result_type"`
	// ResultText is the raw output: a deterministic command's stdout, an AI agent's final message.
	ResultText string `json:"result_text"`
	// ResultData is structured output: stdout parsed as JSON, or an AI answer validated against the output
	// schema. Absent when there is none.
	ResultData json.RawMessage `json:"result_data,omitempty"`
	// ExitCode is the deterministic command's exit status (-1 when it did not exit by itself: killed,
	// stopped, timed out). Go function agents (executor/gofunc) report 0 returned, 1 error, 2 panic.
	ExitCode *int `json:"exit_code,omitempty"`
	// Error says what went wrong, when something did.
	Error string `json:"error,omitempty"`
	// ErrorCode classifies a failure for machines, when the executor or the coordinator knows why: for
	// example "timeout", or, for an AI agent whose model API failed, "api_overloaded", "api_rate_limited",
	// "api_error" or "usage_limit". A retry policy decides by it whether a failure is passing.
	ErrorCode string `json:"error_code,omitempty"`
	// RetryAt, when set, is the earliest time at which running again can succeed, as the executor learned
	// it (the reset time a usage limit names). A retry is not made before it.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Truncated is true when the output was cut to fit a limit — the executor's output limit, or the
	// coordinator's result limit: ResultText then holds a prefix of the output (possibly none) and
	// ResultData may be absent. An output_truncated event of the session says what was cut.
	Truncated bool `json:"truncated,omitempty"`
	// ValidationErrors are the output_schema failures, when the output did not validate.
	ValidationErrors []FieldError `json:"validation_errors,omitempty"`
	// PermissionDenials are the tool uses the AI agent was refused (Claude Code's permission_denials).
	PermissionDenials []PermissionDenial `json:"permission_denials,omitempty"`
	// Usage is what the run consumed, when its executor reports it (the coordinator keeps it on the run).
	Usage *Usage `json:"usage,omitempty"`
}

// PermissionDenial is a tool use an AI agent asked for and was refused.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
}

// Usage is what an AI agent's run consumed, as its executor reported it: tokens and cost in total, and per
// model. Cache reads and writes are input tokens served from, or written to, the model's prompt cache.
type Usage struct {
	// Model names the model, in a usage event's delta (see [EventUsage]); empty in a run's total.
	Model                    string  `json:"model,omitempty"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
	// Models breaks the usage down by model name.
	Models map[string]*ModelUsage `json:"models,omitempty"`
}

// ModelUsage is one model's part of a [Usage].
type ModelUsage struct {
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
}

// Failed reports whether the result describes a failure (an error, or a non-zero exit code).
func (r *Result) Failed() bool {
	return r != nil && (r.Error != "" || (r.ExitCode != nil && *r.ExitCode != 0))
}

// Callback records that a child session ended and its parent asked to hear about it. It is written in the
// same transaction that ends the child, so it survives any crash, and is delivered by resuming the parent.
type Callback struct {
	ID              string `json:"callback_id"`
	ParentSessionID string `json:"parent_session_id"`
	ChildSessionID  string `json:"child_session_id"`
	// Type is child_completed, child_failed or child_stopped.
	Type         string     `json:"callback_type"`
	ChildAgent   string     `json:"child_agent_name"`
	Result       *Result    `json:"result,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	DeliveredAt  *time.Time `json:"delivered_at,omitempty"`
	DeliveredRun string     `json:"delivered_run_id,omitempty"`
}
