package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/cmdline"
	"github.com/agentorchestrator/orchestrator/internal/tags"
)

// Blueprint is an agent's definition: what it is called, what it accepts and produces, and how it runs.
//
// Deterministic blueprints live on a runner's host (a directory of *.json files, see [LoadBlueprints]) and
// are announced when the runner registers; AI blueprints live in the coordinator's registry. The JSON field
// names are the blueprint files'.
type Blueprint struct {
	// Name is how callers invoke the agent: letters, digits, '.', '_' and '-', starting with a letter or digit.
	Name string `json:"name"`
	// Type is agent or deterministic. Blueprints loaded from a runner's directory are deterministic unless
	// they say otherwise; "autonomous" and "procedural" are accepted as aliases.
	Type AgentType `json:"type,omitempty"`
	// Description tells callers (and AI orchestrators) what the agent does.
	Description string `json:"description,omitempty"`
	// Tags label the agent for discovery (GET /agents?tags=).
	Tags []string `json:"tags,omitempty"`
	// ParametersSchema is a JSON Schema (draft-07 unless "$schema" says 2020-12) for the parameters. AI
	// agents without one accept the implicit {prompt} schema ([ImplicitPromptSchema]).
	ParametersSchema json.RawMessage `json:"parameters_schema,omitempty"`
	// OutputSchema, when set, is the JSON Schema the agent's result_data must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Demands constrain which runners may execute the agent's runs (AI agents; deterministic agents always
	// run on the runner that announced them).
	Demands *Demands `json:"demands,omitempty"`

	// Command is the program a deterministic agent runs, split into words the way a POSIX shell would,
	// without being one: blanks separate words; single quotes keep everything literally; double quotes
	// keep everything but a backslash before ", \, $ or `; a backslash outside quotes escapes the next
	// character. Nothing is expanded ($VAR, globs, ~) and operators (; | & > <) are ordinary characters:
	// the words go straight to exec, so a command can never do more than run its own program.
	Command string `json:"command,omitempty"`
	// Env is added to the deterministic command's environment. It is the operator's: any name may be set.
	Env map[string]string `json:"env,omitempty"`
	// AllowedEnv lists the environment variables a run's metadata.env may set; a run that sets any other is
	// refused. Empty (the default) allows none. Names that change which code programs run (LD_*, BASH_ENV,
	// PATH, PYTHON*, …, see [Blueprint.CheckRunEnv]) cannot be listed.
	AllowedEnv []string `json:"allowed_env,omitempty"`
	// TimeoutSeconds, when positive, bounds each run of the agent, whatever its executor: a deterministic
	// run's process group is killed on expiry, and the coordinator stops, then fails, any run held past it
	// (error code "timeout"; the retry policy applies). A start request's timeout_seconds overrides it.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Retry is how the agent's failed runs are retried (see [RetryPolicy]); a start request's retry
	// overrides it. Nil: AI agents retry the model API's passing failures ([DefaultAgentRetryPolicy]),
	// deterministic agents are not retried.
	Retry *RetryPolicy `json:"retry,omitempty"`

	// SystemPrompt is given to an AI agent.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// MCPServers are the MCP servers an AI agent may use, in Claude Code's mcpServers format. A malformed
	// entry (a stdio server without a command, an http server without a url, a field of the wrong type) is
	// refused when the blueprint is registered or loaded.
	MCPServers map[string]json.RawMessage `json:"mcp_servers,omitempty"`
	// ExecutorConfig is passed through to the executor (model, permission mode, allowed tools, ...).
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	// OutputRetries is how many times an AI agent is resumed with validation feedback when its answer does
	// not match the output schema. Nil means the executor's default.
	OutputRetries *int `json:"output_retries,omitempty"`
	// Disabled agents are listed but cannot be started.
	Disabled bool `json:"disabled,omitempty"`

	// MaxConcurrent, when positive, bounds the agent's runs claimed or running at once across all runners
	// (an agent that calls a rate-limited API, or needs a licence). Runs over it stay pending and are
	// claimed in order as slots free. It applies to runs created while it is set. At most 10000.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// MaxConcurrentPerKey bounds the agent's runs at once that carry the same concurrency key
	// ([StartRunParams].ConcurrencyKey); zero means 1. At most 10000.
	MaxConcurrentPerKey int `json:"max_concurrent_per_key,omitempty"`
	// RateLimit, when set, bounds how many of the agent's runs start per time window ([RateLimit]).
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Cache, when set, answers identical starts of a deterministic agent from a completed result
	// ([CachePolicy]). AI agents cannot have one.
	Cache *CachePolicy `json:"cache,omitempty"`
	// Version is the operator's label for the blueprint's behaviour (a tool's release, say). It is part of
	// the blueprint's content hash: changing it invalidates the agent's cached results.
	Version string `json:"version,omitempty"`

	// Approval, when Required, makes every new session of the agent wait for a person's approval before
	// any runner gets its run (docs/human-input.md).
	Approval *ApprovalPolicy `json:"approval,omitempty"`
}

// maxConcurrency is the most of a blueprint's runs at once, or of its runs with one concurrency key.
const maxConcurrency = 10000

// implicitPromptSchema is ImplicitPromptSchema as the schema fields hold it, made once.
var implicitPromptSchema = json.RawMessage(ImplicitPromptSchema)

// EffectiveParametersSchema returns the schema parameters are validated against: the declared one, or the
// implicit prompt schema for AI agents. It is nil for a deterministic agent that declares none (any object).
func (b *Blueprint) EffectiveParametersSchema() json.RawMessage {
	if len(b.ParametersSchema) > 0 {
		return b.ParametersSchema
	}
	if b.Type == AgentTypeAgent {
		return implicitPromptSchema
	}
	return nil
}

// Timeout returns TimeoutSeconds as a duration (zero for none).
func (b *Blueprint) Timeout() time.Duration {
	if b.TimeoutSeconds <= 0 {
		return 0
	}
	return time.Duration(b.TimeoutSeconds * float64(time.Second))
}

// maxTimeoutSeconds caps timeout_seconds at 7 days, far from the overflow of a time.Duration.
const maxTimeoutSeconds = 7 * 24 * 3600

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateName checks an agent name.
func ValidateName(name string) error {
	if name == "" {
		return Errorf(ErrInvalid, "invalid_blueprint", "name is required")
	}
	if !namePattern.MatchString(name) {
		return Errorf(ErrInvalid, "invalid_blueprint",
			"name %q must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Validate checks a blueprint as a coordinator would before accepting it: a valid name and type, a command
// that splits, well-formed schemas (checked against the JSON Schema meta-schema), and sane settings. It
// does not require a command: a deterministic agent implemented by a Go function (executor/gofunc) has
// none. [LoadBlueprints], which reads blueprints for the command-running executor, does. It does not modify b.
func (b *Blueprint) Validate() error {
	if err := ValidateName(b.Name); err != nil {
		return err
	}
	switch b.Type {
	case AgentTypeAgent, AgentTypeDeterministic:
	case "":
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: type is required (agent or deterministic)", b.Name)
	default:
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: unknown type %q", b.Name, b.Type)
	}
	if b.Command != "" {
		if _, err := cmdline.Split(b.Command); err != nil {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: command: %v", b.Name, err)
		}
	}
	if b.TimeoutSeconds < 0 || b.TimeoutSeconds > maxTimeoutSeconds {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: timeout_seconds must be between 0 and %d (7 days)", b.Name, maxTimeoutSeconds)
	}
	if err := b.Retry.Validate(); err != nil {
		return err
	}
	if b.MaxConcurrent < 0 || b.MaxConcurrent > maxConcurrency || b.MaxConcurrentPerKey < 0 || b.MaxConcurrentPerKey > maxConcurrency {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: max_concurrent and max_concurrent_per_key must be between 0 and %d", b.Name, maxConcurrency)
	}
	if b.RateLimit != nil {
		if err := b.RateLimit.validate(); err != nil {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: %v", b.Name, err)
		}
	}
	if b.Cache != nil {
		if b.Type != AgentTypeDeterministic {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: cache is for deterministic agents only: an AI agent's output is not a function of its input", b.Name)
		}
		if err := b.Cache.validate(); err != nil {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: %v", b.Name, err)
		}
	}
	if len(b.Version) > 128 {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: version must be at most 128 characters", b.Name)
	}
	if b.Approval != nil && (b.Approval.TimeoutSeconds < 0 || b.Approval.Timeout() > MaxInputTimeout) {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: approval.timeout_seconds must be between 0 and %d (30 days)", b.Name, int(MaxInputTimeout.Seconds()))
	}
	if b.OutputRetries != nil && (*b.OutputRetries < 0 || *b.OutputRetries > 10) {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: output_retries must be between 0 and 10", b.Name)
	}
	for k := range b.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: env name %q is not valid", b.Name, k)
		}
	}
	if err := validateAllowedEnv(b.AllowedEnv); err != nil {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: %v", b.Name, err)
	}
	for _, tag := range b.Tags {
		if err := tags.Validate(tag); err != nil {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: %v", b.Name, err)
		}
	}
	if b.Demands != nil {
		if err := b.Demands.Validate(); err != nil {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: demands: %v", b.Name, err)
		}
		if b.Demands.RunnerID != "" {
			return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: demands: runner_id cannot be set on a blueprint", b.Name)
		}
	}
	if problems := checkMCPServers(b.MCPServers); len(problems) > 0 {
		return Errorf(ErrInvalid, "invalid_blueprint", "blueprint %q: mcp_servers: %s", b.Name, strings.Join(problems, "; "))
	}
	if len(b.ParametersSchema) > 0 {
		if _, err := CompileSchema(b.ParametersSchema); err != nil {
			return schemaError(err, "blueprint %q: parameters_schema", b.Name)
		}
	}
	if len(b.OutputSchema) > 0 {
		if _, err := CompileSchema(b.OutputSchema); err != nil {
			return schemaError(err, "blueprint %q: output_schema", b.Name)
		}
	}
	return nil
}

// ParseBlueprint decodes and validates one blueprint. Unknown fields are rejected so that a misspelt key
// ("parameter_schema") is an error rather than silently ignored. defaultType is applied when the document
// has no "type" (runner directories default to deterministic).
func ParseBlueprint(data []byte, defaultType AgentType) (*Blueprint, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Blueprint
	if err := dec.Decode(&b); err != nil {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "invalid JSON: unexpected data after the blueprint")
	}
	if b.Type == "" {
		b.Type = defaultType
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &b, nil
}

// LoadBlueprints reads every *.json file in dir (not recursively), in name order, and returns the
// blueprints. Files without a "type" get defaultType: [AgentTypeDeterministic] for a runner's directory,
// [AgentTypeAgent] for a coordinator's directory of AI agents. A deterministic blueprint must have a
// command. Every file is checked; the error names each file that failed and why, so one run shows every
// mistake. Two files declaring the same name are an error. A missing directory is an error; an empty one
// is not.
func LoadBlueprints(dir string, defaultType AgentType) ([]*Blueprint, error) {
	entries, err := os.ReadDir(dir) // sorted by name; not Glob, which would read [ * ? in dir as a pattern
	if err != nil {
		return nil, fmt.Errorf("blueprints directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	var (
		out  []*Blueprint
		errs []error
		seen = map[string]string{}
	)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		b, err := ParseBlueprint(data, defaultType)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		if b.Type == AgentTypeDeterministic && strings.TrimSpace(b.Command) == "" {
			errs = append(errs, Errorf(ErrInvalid, "invalid_blueprint", "%s: blueprint %q: command is required for a deterministic agent", f, b.Name))
			continue
		}
		if prev, ok := seen[b.Name]; ok {
			errs = append(errs, Errorf(ErrInvalid, "invalid_blueprint", "%s: name %q is already declared in %s", f, b.Name, prev))
			continue
		}
		seen[b.Name] = f
		out = append(out, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
