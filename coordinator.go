package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// Coordinator is the API that clients, runners and the MCP server call. Package coordinator implements
// it in-process over a store (package store); httpapi.Client implements it over HTTP, so a runner or a
// tool works the same embedded or remote.
type Coordinator interface {
	// ListAgents lists agents; deterministic agents carry their parameters_schema inline.
	ListAgents(ctx context.Context, p ListAgentsParams) ([]*AgentInfo, error)
	// GetAgent returns one agent with both schemas (the implicit prompt schema for AI agents without one).
	GetAgent(ctx context.Context, name string) (*AgentInfo, error)
	// CreateAgent adds an AI agent to the coordinator's registry.
	CreateAgent(ctx context.Context, b *Blueprint) (*AgentInfo, error)
	// UpdateAgent replaces a registry agent's blueprint. The name cannot change.
	UpdateAgent(ctx context.Context, name string, b *Blueprint) (*AgentInfo, error)
	// DeleteAgent removes a registry agent. Runner-owned agents go away with their runner.
	DeleteAgent(ctx context.Context, name string) error

	// StartRun starts a session (or resumes one) and queues its run. Parameters are validated first; a
	// failure is a *ValidationError and nothing is created. In sync mode it waits for the run to end (up to
	// p.Wait) and returns its outcome, as WaitRun does.
	StartRun(ctx context.Context, p StartRunParams) (*StartRunResult, error)
	GetRun(ctx context.Context, id string) (*Run, error)
	// WaitRun returns a run's outcome once it has ended — its end status, its own result and error — or,
	// when wait elapses first, the run's ids and its session's current status without a result. An unknown
	// run is ErrNotFound.
	//
	// It exists because a session's outcome is not always its run's: a session can be resumed the moment a
	// run ends (by the callback of a child started in async_callback mode that ended first), and then the
	// session's status and result are already the next run's. A caller that started a run and waits for it
	// (a sync start that outlives its first wait) waits with WaitRun, not WaitSession.
	WaitRun(ctx context.Context, id string, wait time.Duration) (*StartRunResult, error)
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// StopRun stops a run: a pending run at once, a claimed or running one through its runner.
	StopRun(ctx context.Context, id string) (*Run, error)

	GetSession(ctx context.Context, id string) (*Session, error)
	ListSessions(ctx context.Context, f SessionFilter) (*SessionPage, error)
	// WaitSession returns the session once it has ended, or as it is when wait elapses.
	WaitSession(ctx context.Context, id string, wait time.Duration) (*Session, error)
	// StopSession stops the session's current run, if any, and — unless opts says NoCascade — every live
	// descendant of the session but a detached one and its subtree (see [StopOpts]). At most one opts is
	// read.
	StopSession(ctx context.Context, id string, opts ...StopOpts) (*Session, error)
	// DeleteSession deletes an ended session with its runs and events; a live one is ErrConflict.
	DeleteSession(ctx context.Context, id string) error
	// SessionTree returns the session and its descendants, with each one's usage and each subtree's
	// sums, listed within p's bounds. An unknown session is ErrNotFound.
	SessionTree(ctx context.Context, id string, p TreeParams) (*SessionTree, error)
	// ListEvents returns up to limit events after the given sequence number. When wait is positive and there
	// are none yet, it waits up to wait for the next ones (an empty result means none came).
	ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*Event, error)
	// AppendEvents adds events to a session (executors, through the runner or its gateway).
	AppendEvents(ctx context.Context, sessionID string, events []Event) ([]*Event, error)

	// RegisterRunner registers (or re-registers) a runner with its blueprints.
	RegisterRunner(ctx context.Context, r *RunnerRegistration) (*Registration, error)
	// Heartbeat keeps a runner alive; ErrNotFound means it must register again.
	Heartbeat(ctx context.Context, runnerID string) error
	// PollWork waits up to p.Wait for work for the runner: runs it can execute (at most p.Max) or stops for
	// runs it holds. It returns the moment either exists; an empty Work means the wait elapsed. An unknown or
	// offline runner is ErrNotFound: it must register again.
	PollWork(ctx context.Context, p PollParams) (*Work, error)
	// ReportRun records a run's progress (started) or end (completed, failed, stopped). Only the runner that
	// holds the run may report (else ErrConflict); reporting the same end twice is harmless.
	ReportRun(ctx context.Context, r RunReport) error
	// DeregisterRunner removes a runner and its blueprints; runs it still holds fail.
	DeregisterRunner(ctx context.Context, runnerID string) error
	ListRunners(ctx context.Context) ([]*RunnerInfo, error)
}

// BatchReporter is a Coordinator that records several run reports at once. A runner whose coordinator
// implements it sends the final reports that become ready together as one call (one HTTP request, one
// store transaction) instead of one call each; the in-process coordinator and the HTTP client implement
// it.
type BatchReporter interface {
	// ReportRuns records each report as ReportRun would and returns one error per report, in order: nil
	// where the report was applied or repeated one already applied. One report's refusal does not affect
	// the others.
	ReportRuns(ctx context.Context, reports []RunReport) []error
}

// BatchStarter is a Coordinator that starts several runs in one call (a fan-out): one request, one store
// transaction, all or none. The in-process coordinator and the HTTP client implement it.
type BatchStarter interface {
	// StartRuns validates every item as StartRun would and, when all are valid, starts them all; else it
	// starts none and returns an ErrInvalid error (code invalid_runs) listing each invalid item's index
	// and error in its "items" detail. Items start new sessions, in async modes.
	StartRuns(ctx context.Context, ps []StartRunParams) ([]*StartRunResult, error)
}

// ListAgentsParams filters the agent list.
type ListAgentsParams struct {
	Type AgentType
	Tags []string
}

// AgentInfo is an agent as callers see it.
type AgentInfo struct {
	Name        string    `json:"name"`
	Type        AgentType `json:"type"`
	Description string    `json:"description,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	// ParametersSchema is inline for deterministic agents in listings; GetAgent always fills it.
	ParametersSchema json.RawMessage `json:"parameters_schema,omitempty"`
	OutputSchema     json.RawMessage `json:"output_schema,omitempty"`
	// AllowedEnv are the variables a run's metadata.env may set (the blueprint's allowed_env).
	AllowedEnv []string `json:"allowed_env,omitempty"`
	// RunnerID is the runner that owns a deterministic agent.
	RunnerID string `json:"runner_id,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// Cache and RateLimit are the agent's result cache and rate limit policies, when it has them.
	Cache     *CachePolicy `json:"cache,omitempty"`
	RateLimit *RateLimit   `json:"rate_limit,omitempty"`
	// Blueprint is the full definition of a registry (AI) agent, returned by GetAgent.
	Blueprint *Blueprint `json:"blueprint,omitempty"`
}

// Schemas returns the agent's schemas as the API shows them: parameters is the schema parameters are
// validated against (the implicit prompt schema for an AI agent that declares none), and either is JSON
// null when there is none.
func (a *AgentInfo) Schemas() (parameters, output json.RawMessage) {
	parameters, output = a.ParametersSchema, a.OutputSchema
	if len(parameters) == 0 && a.Type == AgentTypeAgent {
		parameters = implicitPromptSchema
	}
	if len(parameters) == 0 {
		parameters = json.RawMessage("null")
	}
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	return parameters, output
}

// StartRunParams is a request to start or resume a session (POST /runs).
type StartRunParams struct {
	AgentName string `json:"agent_name"`
	// Parameters must match the agent's parameters_schema.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Prompt is sugar for Parameters {"prompt": Prompt}; giving both is an error.
	Prompt string `json:"prompt,omitempty"`
	// Mode is how the caller learns the outcome: sync, async_poll (the default) or async_callback. The
	// legacy value "resume" means Type resume, in sync mode when Wait is set (see StartRun).
	Mode Mode `json:"mode,omitempty"`
	// Type is start (default) or resume. Resume needs SessionID.
	Type      RunType `json:"type,omitempty"`
	SessionID string  `json:"session_id,omitempty"`
	// ParentSessionID links the new session to the session that started it; async_callback needs it.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// ProjectDir is the working directory the run should use (it also becomes a demand).
	ProjectDir   string          `json:"project_dir,omitempty"`
	Demands      *Demands        `json:"demands,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	// CallbackURL receives the result as a signed POST when the session ends.
	CallbackURL string `json:"callback_url,omitempty"`
	// Wait bounds a sync start's wait; zero means the coordinator's default.
	Wait time.Duration `json:"-"`

	// IdempotencyKey makes the request safe to retry: while the coordinator remembers the key (24 hours by
	// default), the same key with the same request returns the first answer (Replayed set) instead of
	// starting again, and with a different request is refused (code idempotency_key_reused).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Priority is 1 (the highest, the default) to 4: claims take higher priorities first, oldest first
	// within one.
	Priority int `json:"priority,omitempty"`
	// RunAt delays the run until then; Delay (the HTTP API's "delay": "30s") until that long after the
	// request. Give at most one.
	RunAt *time.Time    `json:"run_at,omitempty"`
	Delay time.Duration `json:"-"`
	// ConcurrencyKey puts the run under the agent's max_concurrent_per_key with the other runs of the
	// agent carrying the same key.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// Cache is what the start asks of its agent's result cache: "use" (the default), "bypass" or
	// "refresh" ([CacheMode]). It changes nothing for an agent without a cache.
	Cache CacheMode `json:"cache,omitempty"`

	// Detached makes a child session outlive its parent: a stop that cascades down the tree, or the
	// parent's failure, does not reach it or the sessions below it. It still counts in its tree's limits.
	Detached bool `json:"detached,omitempty"`
	// Limits bound the tree this start roots; only a root (no ParentSessionID) may set them, and only
	// tighter than the coordinator's. See [TreeLimits].
	Limits *TreeLimits `json:"limits,omitempty"`
	// RequireApproval creates the session waiting for a person's approval (an [InputRequest] of kind
	// approval): no runner gets the run until it is approved. An agent whose blueprint requires approval
	// ([Blueprint].Approval) is gated whatever this says. ApprovalTimeoutSeconds, when positive, fails the
	// session with error code approval_timeout when nobody answered in time (default: the blueprint's,
	// else none).
	RequireApproval        bool    `json:"require_approval,omitempty"`
	ApprovalTimeoutSeconds float64 `json:"approval_timeout_seconds,omitempty"`
	// Retry overrides the agent's retry policy for this session (see [RetryPolicy]). A resume keeps the
	// session's.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// TimeoutSeconds bounds each attempt of the session, for every executor, overriding the blueprint's
	// timeout_seconds: an attempt that runs longer fails with error code "timeout" (and the retry policy
	// applies). The coordinator enforces it (see coordinator.Config.TimeoutGrace). 0 to 7 days; zero
	// means the blueprint's.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// StartTimeoutSeconds bounds how long the session may wait for a runner to take it: not claimed by
	// then, it fails with error code "start_timeout" and is not retried. 0 to 7 days; zero means no bound.
	StartTimeoutSeconds float64 `json:"start_timeout_seconds,omitempty"`
}

// StartRunResult is the answer to StartRun.
type StartRunResult struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	// Status is the session's status while the run is going (pending when queued), the run's end status
	// once it has ended (a sync start that ended within its wait, or WaitRun).
	Status SessionStatus `json:"status"`
	// Result is the run's own result, set once it has ended (a sync start that ended within its wait, or
	// WaitRun).
	Result *Result `json:"result,omitempty"`
	// Error says why a sync run failed or stopped.
	Error string `json:"error,omitempty"`
	// Replayed is set when the answer is that of an earlier request with the same idempotency key.
	Replayed bool `json:"replayed,omitempty"`
}

// SessionPage is one page of sessions.
type SessionPage struct {
	Sessions []*Session `json:"sessions"`
	// NextCursor continues the listing (SessionFilter.AfterID); empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// PollParams is a runner's request for work.
type PollParams struct {
	RunnerID string `json:"runner_id"`
	// Wait bounds how long the poll is held when there is nothing to do; the coordinator caps it at its poll
	// timeout.
	Wait time.Duration `json:"-"`
	// Max is how many runs the runner can take now (its free slots). Zero asks for stop requests only, so a
	// busy runner still hears about stops at once.
	Max int `json:"max"`
}

// RunReport is a runner's report on a run it holds.
type RunReport struct {
	RunnerID string `json:"runner_id"`
	RunID    string `json:"run_id"`
	// Status is running (started), completed, failed or stopped.
	Status RunStatus `json:"status"`
	Result *Result   `json:"result,omitempty"`
	// Error says why the run failed or stopped.
	Error string `json:"error,omitempty"`
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
	Parked *bool
	// Timed selects claimed or running runs that have a timeout (the timeout sweep).
	Timed bool
	// StartDeadlineBefore selects pending runs whose start deadline is before it (the start-deadline sweep).
	StartDeadlineBefore time.Time
	AfterID             string
	Limit               int
}
