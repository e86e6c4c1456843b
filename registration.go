package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// RunnerRegistration is what a runner tells the coordinator about itself when it registers.
type RunnerRegistration struct {
	Hostname string `json:"hostname"`
	// ProjectDir is the working directory of the runner's executions.
	ProjectDir string `json:"project_dir,omitempty"`
	// ExecutorType names the executor (deterministic, claude-code, process, func, ...).
	ExecutorType string `json:"executor_type,omitempty"`
	// ExecutorProfile names the executor's configuration; demands match on it.
	ExecutorProfile string `json:"executor_profile,omitempty"`
	// Executor describes the executor for operators; the coordinator stores it and never interprets it.
	Executor json.RawMessage `json:"executor,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	// RequireMatchingTags makes the runner take only runs that demand at least one of its tags.
	RequireMatchingTags bool `json:"require_matching_tags,omitempty"`
	// MaxConcurrent is how many runs the runner executes at once (informational; the runner enforces it).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// AcceptsAgents says whether the runner executes AI agent runs. When absent it is true for a runner that
	// announces no blueprints and false for one that does: deterministic runners run only their own
	// blueprints.
	AcceptsAgents *bool `json:"accepts_agents,omitempty"`
	// Blueprints are the deterministic agents this runner owns.
	Blueprints []*Blueprint `json:"blueprints,omitempty"`
	// RunnerSecret is the secret an earlier registration of this runner returned, when it holds one. A
	// runner registering again (after a 404 from a heartbeat or a poll, say) presents it: registering under
	// the id of a runner that is online is refused without it (see coordinator.Coordinator.RegisterRunner).
	RunnerSecret string `json:"runner_secret,omitempty"`
}

// RunnerID returns the runner id for a registration: stable for the same hostname, project directory and
// executor profile, so a runner that restarts (or registers again after being declared offline) keeps its
// identity, and its runs' history stays attached to it.
func (r *RunnerRegistration) RunnerID() string {
	h := sha256.Sum256([]byte(r.Hostname + "\x00" + r.ProjectDir + "\x00" + r.ExecutorProfile))
	return ids.Runner + hex.EncodeToString(h[:8])
}

// RunnerInfo is a registered runner as the coordinator records it.
type RunnerInfo struct {
	ID                  string          `json:"runner_id"`
	Hostname            string          `json:"hostname"`
	ProjectDir          string          `json:"project_dir,omitempty"`
	ExecutorType        string          `json:"executor_type,omitempty"`
	ExecutorProfile     string          `json:"executor_profile,omitempty"`
	Executor            json.RawMessage `json:"executor,omitempty"`
	Tags                []string        `json:"tags,omitempty"`
	RequireMatchingTags bool            `json:"require_matching_tags"`
	MaxConcurrent       int             `json:"max_concurrent"`
	AcceptsAgents       bool            `json:"accepts_agents"`
	Status              RunnerStatus    `json:"status"`
	RegisteredAt        time.Time       `json:"registered_at"`
	LastHeartbeatAt     time.Time       `json:"last_heartbeat_at"`
}

// Registration is the coordinator's answer to a runner's registration.
type Registration struct {
	RunnerID string `json:"runner_id"`
	// Blueprints maps each announced name to the name callers use (they differ after a collision).
	Blueprints               []RegisteredBlueprint `json:"blueprints"`
	HeartbeatIntervalSeconds float64               `json:"heartbeat_interval_seconds"`
	PollTimeoutSeconds       float64               `json:"poll_timeout_seconds"`
	// MaxResultBytes is the largest result the coordinator accepts in a run's report, measured as the
	// result's JSON encoding ([Limits].MaxResultBytes). The runner cuts a larger result to fit before it
	// reports it (runner.Config.MaxResultBytes). Zero: not announced (an older coordinator).
	MaxResultBytes int64 `json:"max_result_bytes,omitempty"`
	// RunnerSecret is this runner's own credential: "aors_" and 32 random bytes, base64url. The
	// coordinator keeps only its SHA-256 hash. Over HTTP every later call of the runner carries it (see
	// package httpapi); the runner presents it again when it registers again.
	RunnerSecret string `json:"runner_secret,omitempty"`
}

// RegisteredBlueprint pairs an announced blueprint name with its registered name.
type RegisteredBlueprint struct {
	Name           string `json:"name"`
	RegisteredName string `json:"registered_name"`
}
