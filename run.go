package orchestrator

import (
	"encoding/json"
	"time"
)

// Run is one unit of work queued for a runner: the start of a session, or one resume of it.
type Run struct {
	ID        string    `json:"run_id"`
	SessionID string    `json:"session_id"`
	AgentName string    `json:"agent_name"`
	AgentType AgentType `json:"agent_type"`
	Type      RunType   `json:"type"`
	Mode      Mode      `json:"mode"`
	Status    RunStatus `json:"status"`
	// Parameters after schema defaults. For a resume, the new input ({"prompt": ...}).
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Demands after merging the blueprint's, the caller's and the coordinator's own (owning runner).
	Demands      Demands         `json:"demands,omitzero"`
	ProjectDir   string          `json:"project_dir,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	// CallbackURL, when set, receives the session's result as a signed POST when the run ends.
	CallbackURL string `json:"callback_url,omitempty"`
	// Parked is set on a pending run that no live runner can take (its demands match none): claims skip it,
	// so a backlog of such runs costs claims nothing. A runner that registers and matches it unparks it;
	// the no-match timeout fails it.
	Parked bool `json:"parked,omitempty"`
	// Held is set on the pending run of a session waiting for its approval: claims skip it (it is parked
	// too, and nothing unparks it) until the approval is granted.
	Held bool `json:"held,omitempty"`
	// Priority orders claims: 1 (the highest) to 4, oldest first within a priority. Zero is the default, 1;
	// a store reads 1 back as 0.
	Priority int `json:"priority,omitempty"`
	// RunAt is when a delayed run becomes claimable; nil for a run claimable at once. A runner parked in a
	// long poll is woken when it is due.
	RunAt *time.Time `json:"run_at,omitempty"`
	// ConcurrencyKey groups the agent's runs that share KeyLimit (one key per customer, say).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// AgentLimit and KeyLimit are the agent's limits when the run was created (0: none): the most runs of
	// the agent, and of the agent with this ConcurrencyKey, claimed or running at once across all runners.
	// A claim never takes a run past them; the run stays pending until a slot frees.
	AgentLimit int `json:"agent_limit,omitempty"`
	KeyLimit   int `json:"key_limit,omitempty"`
	// RateLimit and RatePeriod are the agent's rate limit when the run was created (0: none): the claim
	// takes the run only while fewer than RateLimit runs of its RateBucket were claimed in the RatePeriod
	// before it. RateBucket is the canonical JSON of the parameter the limit is keyed by, "" for one bucket
	// per agent.
	RateLimit  int           `json:"rate_limit,omitempty"`
	RatePeriod time.Duration `json:"-"`
	RateBucket string        `json:"rate_bucket,omitempty"`
	// CacheKey is the run's result cache key ([CacheKey]), when its agent has a cache; CacheRole is what
	// the run does with it: "lead" (executes, fills the cache and answers the starts waiting for it),
	// "write" (a bypass: executes and fills the cache) or "wait" (waits, parked, for the leader's result).
	CacheKey  string `json:"cache_key,omitempty"`
	CacheRole string `json:"cache_role,omitempty"`
	// Attempt is the run's attempt within its session, from 1: a retry of a failed run is a new run with
	// the next number. MaxAttempts is how many attempts the session's policy allows.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts,omitempty"`
	// TimeoutSeconds bounds the run once a runner has taken it (the request's timeout_seconds, else the
	// blueprint's): the coordinator asks its runner to stop it then, and fails it with error code "timeout".
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// StartDeadline is when a run still pending fails with error code "start_timeout" (the request's
	// start_timeout_seconds, on a session's first run).
	StartDeadline *time.Time `json:"start_deadline,omitempty"`
	// TimedOutAt is when the coordinator found the run past its timeout and asked its runner to stop it.
	TimedOutAt *time.Time `json:"timed_out_at,omitempty"`
	// RunnerID is the runner that claimed the run.
	RunnerID string `json:"runner_id,omitempty"`
	// TraceParent is the W3C traceparent of the span that created the run: its claim, execution and report
	// continue that trace, and the executed process gets it as TRACEPARENT.
	TraceParent string `json:"traceparent,omitempty"`
	// Error says why the run failed or stopped.
	Error string `json:"error,omitempty"`
	// Usage is the tokens and cost the run consumed, from the result its runner reported (AI agents whose
	// executor reports it, such as Claude Code).
	Usage *Usage `json:"usage,omitempty"`
	// StopRequestedAt is set when someone asked to stop the run; StopSentAt when the stop was handed to the
	// runner (it is handed again if the run has not ended a while later).
	StopRequestedAt *time.Time `json:"stop_requested_at,omitempty"`
	StopSentAt      *time.Time `json:"-"`
	CreatedAt       time.Time  `json:"created_at"`
	ClaimedAt       *time.Time `json:"claimed_at,omitempty"`
	StartedAt       *time.Time `json:"started_at,omitempty"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
}

// Assignment is what a runner receives when it claims a run: the run and everything needed to execute it.
type Assignment struct {
	Run *Run `json:"run"`
	// Blueprint is the agent's definition. For a deterministic agent it is the runner's own blueprint (the
	// runner executes only what it announced and looks the command up locally; see BlueprintName).
	Blueprint *Blueprint `json:"agent_blueprint,omitempty"`
	// BlueprintName is the name the runner announced, which differs from Run.AgentName when the coordinator
	// gave the agent a suffixed name (name@runner_id) to resolve a collision.
	BlueprintName string `json:"blueprint_name"`
	// ExecutorSessionID is the executor's id for the session, for a resume.
	ExecutorSessionID string `json:"executor_session_id,omitempty"`
	// MaxBudgetUSD, when set, is what the session's tree may still spend, in US dollars, at the claim (see
	// [Invocation.MaxBudgetUSD]).
	MaxBudgetUSD *float64 `json:"max_budget_usd,omitempty"`
}

// Work is the answer to a runner's poll: runs to execute, sessions to stop, or neither (the wait elapsed).
type Work struct {
	Runs []*Assignment `json:"runs,omitempty"`
	// Stop lists sessions whose runs this runner holds and must stop now.
	Stop []string `json:"stop,omitempty"`
}

// Empty reports whether the poll returned nothing.
func (w *Work) Empty() bool { return w == nil || (len(w.Runs) == 0 && len(w.Stop) == 0) }
