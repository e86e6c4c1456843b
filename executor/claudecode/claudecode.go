// Package claudecode is the AI executor: it runs the Claude Code CLI headless for each run of an AI agent
// (docs/executors.md).
//
// # What a run does
//
// The CLI is started as
//
//	claude [ExtraArgs] -p --output-format stream-json --verbose [--resume <id>] [--model …]
//	    [--permission-mode …] [--max-turns …] [--allowedTools …] [--disallowedTools …]
//	    [--append-system-prompt=<system_prompt> | --system-prompt=…] [--mcp-config <file>]
//
// with the flags chosen by the blueprint's executor_config (below) and its system_prompt,
// in the run's project directory, leading its own process group, with the runner's environment (without
// its credentials, and as another user with [Config].Isolation) plus the invocation's (AGENT_SESSION_ID,
// AGENT_RUN_ID, the gateway's URL and token), so that the commands the agent runs can reach the
// orchestrator too.
//
//   - The prompt is rendered from the run's parameters ([renderPrompt]): parameters.prompt, then the other
//     parameters as a JSON <inputs> block, then — when the run has an output schema — instructions to answer
//     with only a JSON document matching it. It is written to the CLI's stdin (never to its command line,
//     where the variadic flags could swallow it and other users could read it).
//   - MCP: the blueprint's mcp_servers (Claude Code's mcpServers format) and, when [Config].MCPServerURL
//     gives one, the orchestrator's own MCP server (type http, with the header X-Agent-Session-Id: <session>
//     and the run's bearer token), written to a private temporary file given to --mcp-config. The
//     orchestrator server's tools are allowed without a permission prompt (--allowedTools mcp__<name>), so
//     the agent can start child agents in headless mode.
//   - The stream is mapped to the session's events as it arrives: the init line's session id becomes an
//     executor_session event (so the coordinator can resume the session), assistant text a message event
//     ({"role":"assistant","content":[{"type":"text","text":…}]}), tool_use blocks tool_call events
//     ({"tool_use_id","name","input"}), tool_result blocks tool_result events ({"tool_use_id","content",
//     "is_error"}), and the final result line a progress event with its statistics (subtype, num_turns,
//     duration_ms, total_cost_usd). Stderr lines become stderr events.
//   - The final result line's "result" is the answer: Result{ResultType "agent", ResultText answer}, with
//     ResultData when the whole answer is a JSON object or array. An error result (is_error, or a subtype
//     other than "success", such as error_max_turns) or a process that ends without one fails the run.
//
// # executor_config
//
// A blueprint's executor_config chooses these flags (snake_case keys; the CLI's camelCase spellings are
// accepted too). Keys this executor does not know are ignored, since the configuration may be meant for
// another executor; a known key with a wrong type fails the run.
//
//	model               string                      --model
//	permission_mode     string                      --permission-mode (default, acceptEdits, plan, bypassPermissions, …)
//	max_turns           positive integer            --max-turns
//	allowed_tools       list, or "a,b"              --allowedTools (tools used without a permission prompt)
//	disallowed_tools    list, or "a,b"              --disallowedTools
//	system_prompt_mode  "append" (default), "replace"  system_prompt goes to --append-system-prompt (Claude
//	                                                   Code's own system prompt stays) or --system-prompt
//
// # Output schema
//
// With an output schema the answer must be a JSON document that validates (a Markdown code fence around
// it is tolerated). When it does not, the same Claude Code session is resumed (--resume) with a prompt
// listing every validation error, up to the blueprint's output_retries times ([Config].DefaultOutputRetries
// when it sets none). The first valid answer becomes ResultData; when the retries are exhausted the run
// fails with Error "output does not match output_schema after N retries: …" and the ValidationErrors of
// the last answer.
//
// # Resume and stop
//
// A resume run (Invocation.Mode resume) passes --resume with the session's executor session id (Claude
// Code's session id, recorded from the executor_session event) and the new prompt. Cancelling the context
// stops the CLI's whole process group (SIGTERM, then SIGKILL after [Config].StopGrace); the Result then
// says "stopped". The executor never emits a result event: it returns the Result, which the runner reports.
package claudecode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// ResultType is the result_type of every result this executor returns.
const ResultType = "agent"

// Defaults of [Config].
const (
	DefaultClaudePath    = "claude"
	DefaultMCPServerName = "orchestrator"
	DefaultOutputRetries = 2
	DefaultStopGrace     = 5 * time.Second
	DefaultMaxStderrLine = 16 << 10
)

// Config configures an [Executor]. The zero value is ready to use.
type Config struct {
	// ClaudePath is the Claude Code CLI: a name looked up in PATH, or a path. Default "claude".
	ClaudePath string
	// ExtraArgs come right after the program name, before the executor's own flags; for runner-wide
	// settings ("--settings", "/etc/claude.json"). A flag given twice takes its later value, so the
	// blueprint's executor_config overrides these.
	ExtraArgs []string
	// MCPServerURL returns the orchestrator's MCP endpoint to hand the agent for a run ("" for none). The
	// agent reaches it with the header X-Agent-Session-Id (the run's session) and, when the invocation has
	// one, the run's gateway token as a bearer token. Nil means [GatewayMCP]: the runner's gateway serves
	// /mcp scoped to the run (gateway.Config.MCP), so the agent's children are its own session's.
	MCPServerURL func(inv *orchestrator.Invocation) string
	// MCPServerName is the orchestrator server's name in the agent's MCP configuration (its tools are
	// mcp__<name>__<tool>). Default "orchestrator".
	MCPServerName string
	// DefaultOutputRetries is how many times an answer that does not match the output schema is sent back
	// for correction when the blueprint does not say (output_retries). Zero means DefaultOutputRetries (2);
	// negative means none.
	DefaultOutputRetries int
	// StopGrace is how long a stopped CLI has between SIGTERM and SIGKILL. Zero or negative means
	// DefaultStopGrace (5s).
	StopGrace time.Duration
	// MaxStderrLine caps the length in bytes of one stderr line in an event. Zero means
	// DefaultMaxStderrLine (16 KiB).
	MaxStderrLine int
	// Isolation keeps the CLI from the runner: the runner's credentials are not inherited and, with
	// Isolation.User, the CLI runs as another user, who is given the run's MCP configuration (see
	// executor/isolation). The zero value hides the orchestrator's token variables.
	Isolation isolation.Config
	// Logger receives the executor's diagnostics. Nil discards them.
	Logger *slog.Logger
}

// Executor runs AI agents' runs through the Claude Code CLI. It implements [orchestrator.Executor] and is
// safe for concurrent use.
type Executor struct {
	cfg     Config
	schemas *orchestrator.SchemaCache
}

var _ orchestrator.Executor = (*Executor)(nil)

// New returns an executor with cfg, its zero fields set to their defaults.
func New(cfg Config) *Executor {
	if cfg.ClaudePath == "" {
		cfg.ClaudePath = DefaultClaudePath
	}
	if cfg.MCPServerName == "" {
		cfg.MCPServerName = DefaultMCPServerName
	}
	switch {
	case cfg.DefaultOutputRetries == 0:
		cfg.DefaultOutputRetries = DefaultOutputRetries
	case cfg.DefaultOutputRetries < 0:
		cfg.DefaultOutputRetries = 0
	}
	proc.SetDefaults(&cfg.StopGrace, &cfg.MaxStderrLine, &cfg.Logger)
	return &Executor{cfg: cfg, schemas: orchestrator.NewSchemaCache(64)}
}

// run is one Execute call.
type run struct {
	inv        *orchestrator.Invocation
	sink       orchestrator.EventSink
	emitCtx    context.Context
	log        *slog.Logger
	path       string
	env        []string
	flags      []string // the per-run flags after --resume
	claudeID   string   // Claude Code's session id, once known
	reportedID string   // the id of the last executor_session event
}

// Execute runs inv through Claude Code; see the package documentation. It returns an error, and starts
// nothing, when the invocation is unusable (no blueprint, parameters that render no prompt, an invalid
// executor_config or output schema, a resume without an executor session id) or the CLI cannot be found
// or started.
func (e *Executor) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv == nil || inv.Blueprint == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_invocation", "invocation has no blueprint")
	}
	if events == nil {
		events = orchestrator.DiscardEvents
	}
	// The stream's events and the stderr lines are emitted from two goroutines; the sink sees one at a time.
	events = &serialSink{sink: events}
	opts, err := parseOptions(inv.Blueprint.ExecutorConfig)
	if err != nil {
		return nil, err
	}
	schema, err := e.schemas.CompileOutput(inv.OutputSchema)
	if err != nil {
		return nil, err
	}
	prompt, err := renderPrompt(inv.Parameters, inv.OutputSchema)
	if err != nil {
		return nil, err
	}
	r := &run{
		inv:     inv,
		sink:    events,
		emitCtx: context.WithoutCancel(ctx),
		log:     e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", inv.AgentName),
		env:     proc.Environ(e.cfg.Isolation, inv.Env),
	}
	if inv.Mode == orchestrator.RunTypeResume {
		if inv.ExecutorSessionID == "" {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "resume_not_possible",
				"the session cannot be resumed: its earlier runs reported no Claude Code session id")
		}
		r.claudeID, r.reportedID = inv.ExecutorSessionID, inv.ExecutorSessionID
	}
	if r.path, err = proc.LookPath(e.cfg.ClaudePath, proc.Lookup(r.env, "PATH")); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return stopped(""), nil
	}

	dir, err := os.MkdirTemp("", "ao-claude-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	mcpURL := e.cfg.MCPServerURL
	if mcpURL == nil {
		mcpURL = GatewayMCP
	}
	url := mcpURL(inv)
	if url != "" {
		if _, clash := inv.Blueprint.MCPServers[e.cfg.MCPServerName]; clash {
			r.log.Warn("the blueprint's MCP server is replaced by the orchestrator's", "name", e.cfg.MCPServerName)
		}
		opts.allowedTools = append(opts.allowedTools, "mcp__"+e.cfg.MCPServerName)
	}
	mcpPath, err := writeMCPConfig(dir, inv.Blueprint.MCPServers, e.cfg.MCPServerName, url, inv)
	if err != nil {
		return nil, err
	}
	// The CLI reads its MCP configuration (private: it holds the run's token) as the user it runs as.
	if mcpPath != "" {
		if err := proc.GiveTo(e.cfg.Isolation.User, dir, mcpPath); err != nil {
			return nil, err
		}
	}
	r.flags = opts.args(inv.Blueprint.SystemPrompt)
	if mcpPath != "" {
		r.flags = append(r.flags, "--mcp-config", mcpPath)
	}

	retries := e.cfg.DefaultOutputRetries
	if inv.Blueprint.OutputRetries != nil {
		retries = max(*inv.Blueprint.OutputRetries, 0)
	}
	for attempt := 0; ; attempt++ {
		t, err := e.turn(ctx, r, prompt)
		if err != nil {
			return nil, err
		}
		if res := t.failure(); res != nil {
			return res, nil
		}
		answer := t.answer()
		if schema == nil {
			return &orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: structuredData(answer)}, nil
		}
		data, problems := checkAnswer(schema, answer)
		if len(problems) == 0 {
			return &orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: data}, nil
		}
		if attempt >= retries || r.claudeID == "" {
			res := &orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: data, ValidationErrors: problems}
			res.Error = fmt.Sprintf("output does not match output_schema after %d retries: %s", attempt, outputcheck.Summarize(problems))
			if r.claudeID == "" && attempt < retries {
				res.Error = "output does not match output_schema, and Claude Code reported no session id to resume for a correction: " + outputcheck.Summarize(problems)
			}
			return res, nil
		}
		r.progress(map[string]any{
			"message":           fmt.Sprintf("the answer does not match output_schema; asking the agent to correct it (retry %d of %d)", attempt+1, retries),
			"validation_errors": problems,
		})
		prompt = feedbackPrompt(inv.OutputSchema, problems)
	}
}

// turnOutcome is what one claude process did.
type turnOutcome struct {
	exit   *proc.Exit
	stream *turnStream
	stderr string
}

// turn runs claude once: a fresh session, or r.claudeID resumed, with prompt on stdin.
func (e *Executor) turn(ctx context.Context, r *run, prompt string) (*turnOutcome, error) {
	argv := append([]string{e.cfg.ClaudePath}, e.cfg.ExtraArgs...)
	argv = append(argv, "-p", "--output-format", "stream-json", "--verbose")
	if r.claudeID != "" {
		argv = append(argv, "--resume", r.claudeID)
	}
	argv = append(argv, r.flags...)

	pump := proc.NewStderrPump(r.inv.SessionID, e.cfg.MaxStderrLine, r.log)
	pump.Start(ctx, r.sink)
	stream := &turnStream{sessionID: r.inv.SessionID, sink: r.sink, ctx: r.emitCtx, log: r.log, onSession: r.session}
	exit, err := proc.Run(ctx, proc.Spec{
		Path:      r.path,
		Args:      argv,
		Env:       r.env,
		Dir:       r.inv.ProjectDir,
		Stdin:     []byte(prompt),
		Stdout:    stream.read,
		Stderr:    pump.Read,
		StopGrace: e.cfg.StopGrace,
		User:      e.cfg.Isolation.User,
		Logger:    r.log,
	})
	pump.Finish()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", e.cfg.ClaudePath, err)
	}
	t := &turnOutcome{exit: exit, stream: stream, stderr: pump.ErrorTail()}
	if res := stream.result; res != nil {
		r.progress(map[string]any{
			"message": fmt.Sprintf("Claude Code finished (%s): %d turns, %.1fs, $%.4f",
				res.Subtype, res.NumTurns, res.Duration/1000, res.CostUSD),
			"subtype":             res.Subtype,
			"is_error":            res.IsError,
			"num_turns":           res.NumTurns,
			"duration_ms":         res.Duration,
			"total_cost_usd":      res.CostUSD,
			"executor_session_id": r.claudeID,
		})
	}
	return t, nil
}

// session records Claude Code's session id and tells the coordinator when it is new.
func (r *run) session(id string) {
	r.claudeID = id
	if id == r.reportedID {
		return
	}
	r.reportedID = id
	ev := orchestrator.NewEvent(orchestrator.EventExecutorSession, map[string]string{"executor_session_id": id})
	ev.SessionID, ev.Time = r.inv.SessionID, time.Now().UTC()
	if err := r.sink.Emit(r.emitCtx, ev); err != nil {
		r.log.Warn("emit executor_session event", "error", err)
	}
}

func (r *run) progress(data map[string]any) {
	ev := orchestrator.NewEvent(orchestrator.EventProgress, data)
	ev.SessionID, ev.Time = r.inv.SessionID, time.Now().UTC()
	if err := r.sink.Emit(r.emitCtx, ev); err != nil {
		r.log.Warn("emit progress event", "error", err)
	}
}

// failure returns the failed Result of a turn that did not end with a successful answer, nil otherwise.
func (t *turnOutcome) failure() *orchestrator.Result {
	res := &orchestrator.Result{ResultType: ResultType, ResultText: t.answer()}
	if code := t.exit.Code(); code != 0 {
		res.ExitCode = &code
	}
	line := t.stream.result
	switch {
	case t.exit.End == proc.Stopped:
		return stopped(res.ResultText)
	case line == nil:
		res.Error = "Claude Code ended without a result"
		if t.stderr != "" {
			res.Error += ": " + t.stderr
		} else if !t.exit.Success() {
			res.Error += " (" + t.exit.Description() + ")"
		}
	case line.IsError || (line.Subtype != "" && line.Subtype != "success"):
		detail := line.Result
		if detail == "" {
			detail = errorText(line.Errors)
		}
		switch {
		case line.Subtype != "" && line.Subtype != "success" && detail != "":
			res.Error = fmt.Sprintf("Claude Code ended with %s: %s", line.Subtype, detail)
		case line.Subtype != "" && line.Subtype != "success":
			res.Error = "Claude Code ended with " + line.Subtype
		case detail != "":
			res.Error = detail
		default:
			res.Error = "Claude Code reported an error"
		}
	case !t.exit.Success():
		res.Error = t.stderr
		if res.Error == "" {
			res.Error = "Claude Code " + t.exit.Description()
		}
	default:
		return nil
	}
	return res
}

// answer is the turn's final answer: the result line's text, else the last assistant message's.
func (t *turnOutcome) answer() string {
	if t.stream.result != nil && t.stream.result.Result != "" {
		return t.stream.result.Result
	}
	return t.stream.lastText
}

// serialSink hands events to sink one Emit call at a time.
type serialSink struct {
	mu   sync.Mutex
	sink orchestrator.EventSink
}

func (s *serialSink) Emit(ctx context.Context, events ...orchestrator.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sink.Emit(ctx, events...)
}

func stopped(text string) *orchestrator.Result {
	code := -1
	return &orchestrator.Result{ResultType: ResultType, ResultText: text, ExitCode: &code, Error: "stopped"}
}

// GatewayMCP is the default [Config].MCPServerURL: the /mcp endpoint of the runner's gateway for the run
// (AGENT_ORCHESTRATOR_API_URL + "/mcp"), or none when the runner has no gateway.
func GatewayMCP(inv *orchestrator.Invocation) string {
	if u := inv.Env[orchestrator.EnvAPIURL]; u != "" {
		return strings.TrimSuffix(u, "/") + "/mcp"
	}
	return ""
}
