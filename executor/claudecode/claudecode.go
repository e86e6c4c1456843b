// Package claudecode is the AI executor: it runs the Claude Code CLI headless for each run of an AI agent
// (docs/executors.md).
//
// # What a run does
//
// The CLI is started as
//
//	claude [ExtraArgs] -p --output-format stream-json --verbose [--resume <id>] [--model …]
//	    [--permission-mode …] [--max-turns …] [--allowedTools …] [--disallowedTools …]
//	    [--append-system-prompt=<system_prompt> | --system-prompt=…] --strict-mcp-config
//	    [--mcp-config <file>] [--max-budget-usd <remaining budget>]
//
// with the flags chosen by the blueprint's executor_config (below) and its system_prompt,
// in the run's project directory, leading its own process group, with the runner's environment (without
// its credentials, and as another user with [Config].Isolation) plus the invocation's (AGENT_SESSION_ID,
// AGENT_RUN_ID, the gateway's URL and token), so that the commands the agent runs can reach the
// orchestrator too, and MCP_CONNECTION_NONBLOCKING=0. Invocation.MaxBudgetUSD becomes --max-budget-usd
// when the installed CLI lists that flag in its --help (read once per executor and CLI).
//
//   - The prompt is rendered from the run's parameters ([renderPrompt]): parameters.prompt, then the other
//     parameters as a JSON <inputs> block, then — when the run has an output schema — instructions to answer
//     with only a JSON document matching it. It is written to the CLI's stdin (never to its command line,
//     where the variadic flags could swallow it and other users could read it).
//   - MCP: the blueprint's mcp_servers (Claude Code's mcpServers format), the servers of the project's
//     .mcp.json only with executor_config.project_mcp_servers, and, when [Config].MCPServerURL gives one,
//     the orchestrator's own MCP server (type http, with the header X-Agent-Session-Id: <session> and the
//     run's bearer token), written to a private temporary file given to --mcp-config. --strict-mcp-config
//     keeps every other server out (the project's .mcp.json, which headless Claude Code would load
//     unapproved, and the servers of the user the CLI runs as). Each server's tools are allowed without a
//     permission prompt (--allowedTools mcp__<name>, which headless Claude Code needs to let the agent use
//     them) unless allowed_tools already names the server or some of its tools. Each entry gets
//     "alwaysLoad": true unless it sets alwaysLoad: with it and MCP_CONNECTION_NONBLOCKING=0, the CLI
//     connects the servers (waiting up to about 5 s) before the first request.
//   - The stream is mapped to the session's events as it arrives: the init line's session id becomes an
//     executor_session event (so the coordinator can resume the session), assistant text a message event
//     ({"role":"assistant","content":[{"type":"text","text":…}]}), tool_use blocks tool_call events
//     ({"tool_use_id","name","input"}), tool_result blocks tool_result events ({"tool_use_id","content",
//     "is_error"}), each of the CLI's own retries of a failed API call (its api_retry lines) a progress
//     event ("Claude API retry 3/10 in 4.1 s: 529 overloaded", with attempt, max_retries,
//     retry_delay_ms, error_status and error), and the final result line a progress event with its
//     statistics (subtype, num_turns, duration_ms, total_cost_usd, api_error_status, usage) — "Claude
//     Code failed (…)" when the line is an error, even one whose subtype says success, as a CLI that is
//     not logged in answers. Stderr lines become stderr events.
//   - MCP servers that did not connect: the init line lists each server with its status. Every server
//     that is not connected gets an [EventMCPServer] event. When one of the run's servers (the
//     blueprint's, the project's, or the orchestrator's own) is not connected — failed, still pending,
//     needing authentication, or missing from the list (Claude Code drops an entry it cannot use) — the
//     CLI is stopped at once and the run fails with that reason, unless
//     executor_config.optional_mcp_servers names the server: the agent must not work, and spend, without
//     the tools it was given.
//   - Permission denials: each entry of the result line's permission_denials becomes an
//     [EventPermissionDenied] event and an entry of Result.PermissionDenials (its tool_input left out
//     above 8 KiB). The run fails for it only with executor_config.fail_on_permission_denial.
//   - Usage, as it happens: each API message's usage (an assistant line's message.usage, counted once per
//     message.id although the CLI repeats it on every content block's line) becomes an
//     [orchestrator.EventUsage] event with its model and tokens, cost 0 (the coordinator prices it).
//   - Usage per turn and run: the result line's figures for the turn — model_usage_since_last_result
//     where the CLI prints it (2.1.332, whose modelUsage and total_cost_usd count the whole Claude
//     session across --resume), else modelUsage and total_cost_usd (2.1.197 reports those per turn) —
//     become Result.Usage, per model (named without Claude Code's "[1m]" suffix) and in total; the turns
//     of an output-schema correction add up. Where they exceed what the live events counted (an assistant
//     line shows the output tokens as the message began; a side request such as the session's title has
//     no line), one more usage event per model carries the difference, so a run's usage events add up to
//     its Result.Usage. The coordinator keeps it on the run (Run.Usage).
//   - The final result line's "result" is the answer: Result{ResultType "agent", ResultText answer}, with
//     ResultData when the whole answer is a JSON object or array. An error result (is_error, or a subtype
//     other than "success", such as error_max_turns) or a process that ends without one fails the run.
//   - A failure of the model API is classified in Result.ErrorCode (see [CodeAPIOverloaded] and the
//     others): the result line's api_error_status (529, 429, other 5xx), else the assistant line's error
//     kind (server_error for a connection failure); a usage limit (the CLI's "You've hit your … limit ·
//     resets …", and its rate_limit_event) is usage_limit with Result.RetryAt at the reset time;
//     error_max_budget_usd is budget_exceeded.
//
// # executor_config
//
// A blueprint's executor_config chooses these flags and behaviours (snake_case keys; the CLI's camelCase spellings are
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
//	optional_mcp_servers  list, or "a,b"            MCP servers the run may do without (failed or pending)
//	project_mcp_servers  bool (default false)       also load the servers of the project's .mcp.json
//	fail_on_permission_denial  bool (default false)  a refused tool use fails the run
//
// # Root and bypassPermissions
//
// Claude Code refuses to bypass permissions (permission_mode bypassPermissions,
// --dangerously-skip-permissions in [Config].ExtraArgs) when it runs as root, unless IS_SANDBOX=1 is in
// its environment. Execute refuses such a run before starting the CLI (code bypass_permissions_as_root),
// naming the remedies: run the CLI as another user ([Config].Isolation.User; the example runner's -run-as)
// or, in a disposable container, set IS_SANDBOX=1 in the runner's environment.
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
// Code's session id, recorded from the executor_session event) and the new prompt. A retry of a failed
// attempt (Invocation.Attempt > 1) is such a run too: the coordinator sends the continuation prompt, and
// Claude Code keeps the session of a turn that failed on the API. Cancelling the context
// stops the CLI's whole process group (SIGTERM, then SIGKILL after [Config].StopGrace); the Result then
// says "stopped"; should the process running the executor be killed outright, its watchdog (started by
// [New]) ends the group. The executor never emits a result event: it returns the Result, which the runner
// reports.
package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/internal/watchdog"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/internal/schemacache"
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
	// MaxStderrLine caps the length in bytes of one stderr line in an event; the rest of a longer line is
	// dropped, and the event says how much ("truncated": true). Zero means DefaultMaxStderrLine (16 KiB);
	// values below 64 are raised to 64, values above 64 KiB lowered to 64 KiB, so that one event stays far
	// below the coordinator's limit for an event. Lines a program writes faster than its session records
	// them are counted in a stderr_dropped event rather than held without bound.
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
	schemas *schemacache.Cache
	euid    func() int       // the runner's effective user id (a test's stand-in)
	now     func() time.Time // the clock a usage limit's reset time is read against
	flags   flagCache        // which optional flags the installed CLI has
}

// Event types this executor records besides the stream's messages, tool calls and results.
const (
	// EventMCPServer records an MCP server that did not connect when the session started:
	// {"name", "status" (failed, pending, needs-auth, …, or missing when Claude Code did not list it),
	// "declared" (one of the run's servers), "optional", "message"}.
	EventMCPServer = "mcp_server"
	// EventPermissionDenied records a tool use Claude Code refused the agent: {"tool_name",
	// "tool_use_id", "tool_input" (or "input_truncated"), "message"}.
	EventPermissionDenied = "permission_denied"
)

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
	watchdog.Watch(cfg.Logger) // the programs die with this process, however it dies; leftovers of a dead one too
	return &Executor{cfg: cfg, schemas: schemacache.New(64), euid: os.Geteuid, now: time.Now}
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

	opts *options
	// declared are the MCP servers of the run's configuration: the blueprint's (and the project's, with
	// project_mcp_servers) and the orchestrator's; servers are the entries of the first ones.
	declared map[string]bool
	servers  map[string]json.RawMessage
	// orchestrator is the orchestrator's own server's entry, when the run has one.
	orchestrator     json.RawMessage
	orchestratorName string
	seenInit         bool
	// mcpFailure says why the run fails: a declared, required MCP server did not connect.
	mcpFailure string
	abort      context.CancelFunc // stops the current turn's CLI
	denials    []orchestrator.PermissionDenial
	usage      *meter
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
		inv:      inv,
		sink:     events,
		emitCtx:  context.WithoutCancel(ctx),
		log:      e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", inv.AgentName, "attempt", inv.Attempt),
		env:      proc.Environ(e.cfg.Isolation, inv.Env, cliEnv),
		opts:     opts,
		declared: map[string]bool{},
		usage:    newMeter(),
	}
	if err := e.checkBypassAsRoot(opts, r.env); err != nil {
		return nil, err
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
	servers, err := runServers(inv, opts)
	if err != nil {
		return nil, err
	}
	for name := range servers {
		r.declared[name] = true
	}
	opts.allowedTools = allowServers(opts.allowedTools, servers)

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
		if _, clash := servers[e.cfg.MCPServerName]; clash {
			r.log.Warn("the blueprint's MCP server is replaced by the orchestrator's", "name", e.cfg.MCPServerName)
		}
		if !slices.Contains(opts.allowedTools, "mcp__"+e.cfg.MCPServerName) {
			opts.allowedTools = append(opts.allowedTools, "mcp__"+e.cfg.MCPServerName)
		}
		r.declared[e.cfg.MCPServerName] = true
		r.orchestrator, _ = json.Marshal(map[string]string{"type": "http", "url": url})
		r.orchestratorName = e.cfg.MCPServerName
	}
	r.servers = servers
	mcpPath, err := writeMCPConfig(dir, servers, e.cfg.MCPServerName, url, inv)
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
	// Only the run's servers: not the project's .mcp.json (unless project_mcp_servers brought its servers
	// into the run's configuration), nor the servers of the user the CLI runs as.
	r.flags = append(r.flags, "--strict-mcp-config")
	if mcpPath != "" {
		r.flags = append(r.flags, "--mcp-config", mcpPath)
	}
	if b := inv.MaxBudgetUSD; b != nil && *b > 0 {
		if e.hasFlag(ctx, r, "--max-budget-usd") {
			r.flags = append(r.flags, "--max-budget-usd", strconv.FormatFloat(*b, 'f', -1, 64))
		} else {
			r.log.Info("the installed Claude Code has no --max-budget-usd: the run's budget is enforced by the coordinator only")
		}
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
		if r.mcpFailure != "" && ctx.Err() == nil {
			return r.finish(&orchestrator.Result{ResultType: ResultType, ResultText: t.answer(), Error: r.mcpFailure}), nil
		}
		if res := t.failure(); res != nil {
			return r.finish(res), nil
		}
		answer := t.answer()
		if schema == nil {
			return r.finish(&orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: structuredData(answer)}), nil
		}
		data, problems := checkAnswer(schema, answer)
		if len(problems) == 0 {
			return r.finish(&orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: data}), nil
		}
		if attempt >= retries || r.claudeID == "" || (opts.failOnDenial && len(r.denials) > 0) {
			res := &orchestrator.Result{ResultType: ResultType, ResultText: answer, ResultData: data, ValidationErrors: problems}
			res.Error = fmt.Sprintf("output does not match output_schema after %d retries: %s", attempt, outputcheck.Summarize(problems))
			if r.claudeID == "" && attempt < retries {
				res.Error = "output does not match output_schema, and Claude Code reported no session id to resume for a correction: " + outputcheck.Summarize(problems)
			}
			return r.finish(res), nil
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
	now    time.Time // when the turn ended
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
	stream := &turnStream{sessionID: r.inv.SessionID, sink: r.sink, ctx: r.emitCtx, log: r.log,
		onSession: r.session, onInit: r.init, onRetry: r.retry, usage: r.usage}
	// A required MCP server that failed stops the CLI at once (r.init): the agent must not work, and
	// spend, without the tools it was given.
	tctx, abort := context.WithCancel(ctx)
	defer abort()
	r.abort = abort
	exit, err := proc.Run(tctx, proc.Spec{
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
	t := &turnOutcome{exit: exit, stream: stream, stderr: pump.ErrorTail(), now: e.now()}
	usage, deltas := r.usage.endTurn(stream.result)
	r.emitUsage(deltas)
	if res := stream.result; res != nil {
		r.denied(res.PermissionDenials)
		cost := res.CostUSD
		if usage != nil {
			cost = usage.CostUSD // the turn's own (total_cost_usd may count the whole Claude session)
		}
		stats := fmt.Sprintf("%d turns, %.1fs, $%.4f", res.NumTurns, res.Duration/1000, cost)
		msg := fmt.Sprintf("Claude Code finished (%s): %s", res.Subtype, stats)
		if res.IsError || (res.Subtype != "" && res.Subtype != "success") {
			// A result line can say "success" and be an error: a CLI that is not logged in answers
			// {"subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}.
			kind := res.Subtype
			if kind == "" || kind == "success" {
				kind = "error"
			}
			detail := res.Result
			if detail == "" {
				detail = errorText(res.Errors)
			}
			msg = fmt.Sprintf("Claude Code failed (%s): %s", kind, stats)
			if detail != "" {
				msg = fmt.Sprintf("Claude Code failed (%s: %s): %s", kind, cut(detail, 512), stats)
			}
		}
		data := map[string]any{
			"message":             msg,
			"subtype":             res.Subtype,
			"is_error":            res.IsError,
			"num_turns":           res.NumTurns,
			"duration_ms":         res.Duration,
			"total_cost_usd":      res.CostUSD,
			"executor_session_id": r.claudeID,
		}
		if res.APIErrorStatus != nil {
			data["api_error_status"] = *res.APIErrorStatus
		}
		if usage != nil {
			data["usage"] = usage
		}
		if n := len(res.PermissionDenials); n > 0 {
			data["permission_denials"] = n
		}
		r.progress(data)
	}
	return t, nil
}

// init reads the init line's MCP server statuses (once a run: a correction's turn repeats them). Each
// server that did not connect gets an mcp_server event; a declared server that is not connected — failed,
// still pending (the CLI waited for it, about 5 s, and gave up), needing authentication, or not listed at
// all (Claude Code drops an entry it cannot use) — fails the run unless the blueprint marks it optional,
// and the CLI is stopped before the agent works, and spends, without that server's tools.
func (r *run) init(l *streamLine) {
	if r.seenInit || l.MCPServers == nil {
		return
	}
	r.seenInit = true
	listed := map[string]bool{}
	var evs []orchestrator.Event
	for _, srv := range l.MCPServers {
		listed[srv.Name] = true
		if srv.Status != "connected" {
			evs = append(evs, r.serverEvent(srv.Name, srv.Status, srv.Error))
		}
	}
	var missing []string
	for name := range r.declared {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		evs = append(evs, r.serverEvent(name, "missing", "Claude Code did not list it: it dropped an entry it could not use"))
	}
	if len(evs) > 0 {
		if err := r.sink.Emit(r.emitCtx, evs...); err != nil {
			r.log.Warn("emit mcp_server events", "error", err)
		}
	}
	if r.mcpFailure != "" && r.abort != nil {
		r.log.Info("stopping Claude Code: " + r.mcpFailure)
		r.abort()
	}
}

// serverEvent describes a server that did not connect and, when it is a required one, records the
// run's failure.
func (r *run) serverEvent(name, status, detail string) orchestrator.Event {
	declared, optional := r.declared[name], slices.Contains(r.opts.optionalMCP, name)
	what := fmt.Sprintf("MCP server %q %s", name, status)
	if status == "pending" {
		what += " (still connecting when the session started)"
	}
	if detail != "" {
		what += ": " + cut(detail, 512)
	}
	var msg string
	switch {
	case !declared:
		msg = what + " (not one of the run's servers; the run goes on)"
	case optional:
		msg = what + " (optional: the run goes on without it)"
	default:
		msg = what + " (the run fails)"
		if r.mcpFailure == "" {
			r.mcpFailure = what + "; the agent would have run without its tools (list the server in executor_config.optional_mcp_servers to run without it)"
		}
	}
	data := map[string]any{"name": name, "status": status, "declared": declared, "optional": optional, "message": msg}
	if detail != "" {
		data["reason"] = cut(detail, 512)
	}
	entry := r.servers[name]
	if name == r.orchestratorName {
		entry = r.orchestrator
	}
	if where := describeServer(entry); where != "" {
		data["server"] = where
	}
	ev := orchestrator.NewEvent(EventMCPServer, data)
	ev.SessionID, ev.Time = r.inv.SessionID, time.Now().UTC()
	return ev
}

// Bounds on the permission denials a result carries.
const (
	maxDenials         = 100
	maxDenialInputSize = 8 << 10
)

// denied records a turn's permission denials: an event each, and in the run's result.
func (r *run) denied(ds []orchestrator.PermissionDenial) {
	var evs []orchestrator.Event
	for _, d := range ds {
		data := map[string]any{"tool_name": d.ToolName, "tool_use_id": d.ToolUseID,
			"message": fmt.Sprintf("Claude Code refused the agent's use of %s", d.ToolName)}
		if len(d.ToolInput) > maxEventText {
			data["input_truncated"] = true
		} else if len(d.ToolInput) > 0 {
			data["tool_input"] = d.ToolInput
		}
		ev := orchestrator.NewEvent(EventPermissionDenied, data)
		ev.SessionID, ev.Time = r.inv.SessionID, time.Now().UTC()
		evs = append(evs, ev)
		if len(r.denials) < maxDenials {
			if len(d.ToolInput) > maxDenialInputSize {
				d.ToolInput = nil
			}
			r.denials = append(r.denials, d)
		}
	}
	if len(evs) > 0 {
		if err := r.sink.Emit(r.emitCtx, evs...); err != nil {
			r.log.Warn("emit permission_denied events", "error", err)
		}
	}
}

// finish adds what the whole run gathered to its result: usage, permission denials, and the failure a
// denial is when the blueprint says so.
func (r *run) finish(res *orchestrator.Result) *orchestrator.Result {
	res.Usage = r.usage.total()
	res.PermissionDenials = r.denials
	if r.opts.failOnDenial && len(r.denials) > 0 && res.Error == "" {
		var tools []string
		for _, d := range r.denials {
			if !slices.Contains(tools, d.ToolName) {
				tools = append(tools, d.ToolName)
			}
		}
		res.Error = fmt.Sprintf("Claude Code refused %d tool use(s) (%s), and executor_config.fail_on_permission_denial is set",
			len(r.denials), strings.Join(tools, ", "))
	}
	return res
}

// checkBypassAsRoot refuses, before anything starts, a run Claude Code would refuse at once: it will not
// bypass permissions (permission_mode bypassPermissions, --dangerously-skip-permissions) as root unless
// IS_SANDBOX=1 says the machine is a disposable sandbox.
func (e *Executor) checkBypassAsRoot(opts *options, env []string) error {
	bypass := opts.permissionMode == "bypassPermissions"
	for i, a := range e.cfg.ExtraArgs {
		switch {
		case a == "--dangerously-skip-permissions", a == "--allow-dangerously-skip-permissions":
			bypass = true
		case opts.permissionMode == "" && (a == "--permission-mode=bypassPermissions" ||
			(a == "--permission-mode" && i+1 < len(e.cfg.ExtraArgs) && e.cfg.ExtraArgs[i+1] == "bypassPermissions")):
			bypass = true
		}
	}
	if !bypass || proc.Lookup(env, "IS_SANDBOX") == "1" {
		return nil
	}
	as := "the runner's user"
	if u := e.cfg.Isolation.User; u != nil {
		if u.UID != 0 {
			return nil
		}
		as = u.String()
	} else if e.euid() != 0 {
		return nil
	}
	return orchestrator.Errorf(orchestrator.ErrInvalid, "bypass_permissions_as_root",
		"permission_mode bypassPermissions: Claude Code refuses to bypass permissions as root, and it would run as %s (uid 0); "+
			"run it as another user (claudecode.Config.Isolation.User, the example runner's -run-as flag) or, "+
			"when the runner is a disposable container, set IS_SANDBOX=1 in the runner's environment", as)
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

// retry reports one of the CLI's own retries of a failed API call.
func (r *run) retry(l *streamLine) {
	data := map[string]any{"message": retryMessage(l), "attempt": l.Attempt, "max_retries": l.MaxRetries,
		"retry_delay_ms": l.RetryDelayMS}
	if l.ErrorStatus != nil {
		data["error_status"] = *l.ErrorStatus
	}
	if k := l.errorKind(); k != "" {
		data["error"] = k
	}
	r.progress(data)
}

// emitUsage emits usage deltas as usage events.
func (r *run) emitUsage(deltas []*orchestrator.Usage) {
	if len(deltas) == 0 {
		return
	}
	evs := make([]orchestrator.Event, len(deltas))
	for i, d := range deltas {
		evs[i] = orchestrator.NewEvent(orchestrator.EventUsage, d)
		evs[i].SessionID, evs[i].Time = r.inv.SessionID, time.Now().UTC()
	}
	if err := r.sink.Emit(r.emitCtx, evs...); err != nil {
		r.log.Warn("emit usage events", "error", err)
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
		res.ErrorCode, res.RetryAt = classify(line, t.stream.lastError, t.stream.rateLimit, t.now)
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
