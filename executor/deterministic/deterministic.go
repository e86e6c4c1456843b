// Package deterministic is the executor for deterministic agents: it runs a blueprint's command as a
// subprocess, passes the run's parameters as command-line flags and on stdin, streams stderr lines as
// events, and returns stdout as the result (docs/executors.md).
//
// # What a run does
//
//   - argv is the blueprint's command split into words (see [orchestrator.Blueprint].Command) followed by the
//     parameters as flags ([BuildArgs], [parameterArgs]). The program is executed directly, never through a
//     shell; argv[0] is looked up in the PATH of the run's own environment.
//   - The environment is the runner's own (os.Environ) without its credentials ([Config].Isolation), then
//     the blueprint's Env, then the run's metadata.env (an object of strings, whose names the blueprint's
//     allowed_env must list: [orchestrator.Blueprint.CheckRunEnv]), then the invocation's Env
//     (AGENT_SESSION_ID, AGENT_RUN_ID, the gateway URL): later sources win.
//   - With [Config].Isolation.User the program runs as that user.
//   - The working directory is the invocation's ProjectDir, when set.
//   - The parameters JSON (followed by a newline) is written to stdin, which is then closed, so a program
//     may take its input either way. A program that does not read stdin is fine.
//   - Every stderr line becomes an [orchestrator.EventStderr] event ({"line": "..."}) while the program
//     runs. Lines longer than [Config].MaxStderrLine are cut, with a marker saying how much was cut.
//   - stdout, up to [Config].MaxOutputBytes, is the result's ResultText; when it is JSON (after trimming
//     white space) it is also ResultData. Beyond the limit stdout is read and discarded, Result.Truncated is
//     set, an [orchestrator.EventOutputTruncated] event gives the sizes, and ResultData is left empty: a
//     prefix of a JSON document is not the document.
//   - Exit code 0 completes the run; any other fails it with the last stderr lines as the error (or "exit
//     code N" when there are none). ExitCode is always set, -1 when the process did not exit by itself.
//   - With an output schema (the invocation's OutputSchema, which the coordinator chose), stdout of a
//     successful exit must be JSON that validates, else the run fails with every validation error: fail
//     fast, no retries: running the same command again would print the same output.
//
// # Stopping
//
// The program leads its own process group. When the run is stopped (ctx is cancelled) or the blueprint's
// timeout expires, the whole group gets SIGTERM, and SIGKILL after [Config].StopGrace if the program has not
// exited by then. Whatever way the program ends, the group gets SIGKILL once it has exited, so no
// grandchild survives the run (background jobs included); a process that leaves the group (setsid) is
// beyond reach, and after a short wait its pipes are closed under it so the run still ends.
//
// Should the process running the executor be killed outright, its watchdog (started by [New]) ends the
// group, and every process carrying that process's mark (AGENT_ORCHESTRATOR_OWNER in its environment):
// SIGTERM, then SIGKILL 5s later.
//
// A stopped run returns its partial Result with Error "stopped" and a nil error: stopping is an outcome of
// the run, not a failure of the executor. A timed-out run returns Error "timed out after 5s".
//
// The executor never emits a result event: it returns the Result and the runner records it.
package deterministic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/internal/watchdog"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/internal/schemacache"
)

// ResultType is the result_type of every result this executor returns.
const ResultType = "deterministic"

// Defaults of [Config].
const (
	DefaultMaxOutputBytes = 4 << 20
	DefaultStopGrace      = 5 * time.Second
	DefaultMaxStderrLine  = 16 << 10
)

// Config configures an [Executor]. The zero value is ready to use.
type Config struct {
	// MaxOutputBytes caps the stdout kept as ResultText. Beyond it stdout is drained and discarded,
	// Result.Truncated is set and ResultData is not parsed. Zero or negative means DefaultMaxOutputBytes
	// (4 MiB).
	MaxOutputBytes int64
	// StopGrace is how long a stopped or timed-out program has between SIGTERM and SIGKILL. Zero or negative
	// means DefaultStopGrace (5s).
	StopGrace time.Duration
	// MaxStderrLine caps the length in bytes of one stderr line in an event; the rest of a longer line is
	// dropped, and the event says how much ("truncated": true). Zero means DefaultMaxStderrLine (16 KiB);
	// values below 64 are raised to 64, values above 64 KiB lowered to 64 KiB, so that one event stays far
	// below the coordinator's limit for an event. Lines a program writes faster than its session records
	// them are counted in a stderr_dropped event rather than held without bound.
	MaxStderrLine int
	// Isolation keeps programs from the runner: the runner's credentials are not inherited and, with
	// Isolation.User, programs run as another user (see executor/isolation). The zero value hides the
	// orchestrator's token variables.
	Isolation isolation.Config
	// Logger receives the executor's own diagnostics (sink errors, dropped lines, kill failures). Nil
	// discards them.
	Logger *slog.Logger
}

// Executor runs deterministic agents' commands. It implements [orchestrator.Executor] and is safe for
// concurrent use; each Execute call runs one process group.
type Executor struct {
	cfg     Config
	schemas *schemacache.Cache
}

var _ orchestrator.Executor = (*Executor)(nil)

// New returns an executor with cfg, its zero fields set to their defaults.
func New(cfg Config) *Executor {
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	proc.SetDefaults(&cfg.StopGrace, &cfg.MaxStderrLine, &cfg.Logger)
	watchdog.Watch(cfg.Logger) // the programs die with this process, however it dies; leftovers of a dead one too
	return &Executor{cfg: cfg, schemas: schemacache.New(64)}
}

// Execute runs inv's blueprint command to its end; see the package documentation for what that involves.
//
// It returns an error, and starts nothing, when the run cannot be started: a resume (deterministic agents
// cannot be resumed), no command, parameters or metadata.env that cannot be passed to a program, a
// malformed output schema, or a program that is not found or cannot be executed. Every outcome of a started
// program, including a stop and a timeout, is a Result with a nil error.
func (e *Executor) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv == nil || inv.Blueprint == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_invocation", "invocation has no blueprint")
	}
	if inv.Mode == orchestrator.RunTypeResume {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "resume_not_supported", "Deterministic agents do not support resumption")
	}
	if strings.TrimSpace(inv.Blueprint.Command) == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint", "blueprint %q has no command", inv.Blueprint.Name)
	}
	if events == nil {
		events = orchestrator.DiscardEvents
	}
	argv, err := BuildArgs(inv.Blueprint.Command, inv.Parameters)
	if err != nil {
		return nil, err
	}
	env, err := e.buildEnv(inv)
	if err != nil {
		return nil, err
	}
	schema, err := e.schemas.CompileOutput(inv.OutputSchema)
	if err != nil {
		return nil, err
	}
	path, err := proc.LookPath(argv[0], proc.Lookup(env, "PATH"))
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return &orchestrator.Result{ResultType: ResultType, ExitCode: intPtr(-1), Error: "stopped"}, nil
	}
	return e.run(ctx, inv, events, path, argv, env, schema)
}

func (e *Executor) run(ctx context.Context, inv *orchestrator.Invocation, sink orchestrator.EventSink,
	path string, argv, env []string, schema *orchestrator.Schema) (*orchestrator.Result, error) {
	log := e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", inv.AgentName)
	pump := proc.NewStderrPump(inv.SessionID, e.cfg.MaxStderrLine, log)
	pump.Start(ctx, sink)
	stdout := &capture{limit: e.cfg.MaxOutputBytes}
	exit, err := proc.Run(ctx, proc.Spec{
		Path:      path,
		Args:      argv,
		Env:       env,
		Dir:       inv.ProjectDir,
		Stdin:     stdinPayload(inv.Parameters),
		Stdout:    func(r io.Reader) { _, _ = proc.Drain(stdout, r) },
		Stderr:    pump.Read,
		Timeout:   inv.Blueprint.Timeout(),
		StopGrace: e.cfg.StopGrace,
		User:      e.cfg.Isolation.User,
		Logger:    log,
	})
	pump.Finish()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}

	res := &orchestrator.Result{ResultType: ResultType}
	text, truncated := stdout.result()
	res.ResultText, res.Truncated = string(text), truncated
	if truncated {
		ev := orchestrator.NewEvent(orchestrator.EventOutputTruncated, map[string]any{
			"by": "executor", "stream": "stdout", "output_bytes": stdout.total, "kept_bytes": len(text),
			"limit_bytes": e.cfg.MaxOutputBytes,
			"message":     fmt.Sprintf("stdout was %d bytes, over the executor's limit of %d: result_text keeps the first %d, result_data is left out", stdout.total, e.cfg.MaxOutputBytes, len(text)),
		})
		ev.SessionID, ev.Time = inv.SessionID, time.Now().UTC()
		if err := sink.Emit(context.WithoutCancel(ctx), ev); err != nil {
			log.Warn("emit output_truncated event", "error", err)
		}
	}
	if !truncated {
		if t := bytes.TrimSpace(text); len(t) > 0 && json.Valid(t) {
			res.ResultData = json.RawMessage(bytes.Clone(t))
		}
	}
	code := exit.Code()
	switch exit.End {
	case proc.Stopped:
		res.Error = "stopped"
	case proc.TimedOut:
		res.Error, res.ErrorCode = "timed out after "+inv.Blueprint.Timeout().String(), "timeout"
	default:
		if code != 0 {
			if res.Error = pump.ErrorTail(); res.Error == "" {
				res.Error = exit.Description()
			}
		} else {
			outputcheck.Apply(res, schema, "stdout")
		}
	}
	res.ExitCode = &code
	log.Debug("deterministic run ended", "exit_code", code, "error", res.Error, "stdout_bytes", stdout.total)
	return res, nil
}

// stdinPayload is what the program reads on stdin: the parameters JSON and a newline ({} when there are
// none), so both "read everything" and "read a line" work.
func stdinPayload(params json.RawMessage) []byte {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	return append(bytes.Clone(p), '\n')
}

// capture keeps the first limit bytes written to it and counts the rest. It never fails, so Drain keeps
// draining the pipe: a program is never blocked on a full stdout.
type capture struct {
	limit     int64
	buf       bytes.Buffer
	total     int64
	truncated bool
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	room := c.limit - int64(c.buf.Len())
	if int64(len(p)) > room {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// result returns the kept bytes; when they were cut, a character split by the cut is dropped.
func (c *capture) result() ([]byte, bool) {
	b := c.buf.Bytes()
	if c.truncated {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return b, c.truncated
}

// buildEnv layers the run's environment: the runner's (without its credentials), the blueprint's Env,
// metadata.env, the invocation's Env. Later layers override earlier ones, in place, so each name appears
// once. metadata.env must keep to the blueprint's allowed_env, as the coordinator already checked: a
// runner does not run what its own blueprint does not allow.
func (e *Executor) buildEnv(inv *orchestrator.Invocation) ([]string, error) {
	metaEnv, err := metadataEnv(inv.Metadata)
	if err != nil {
		return nil, err
	}
	if err := inv.Blueprint.CheckRunEnv(metaEnv); err != nil {
		return nil, err
	}
	return proc.Environ(e.cfg.Isolation, inv.Blueprint.Env, metaEnv, inv.Env), nil
}

// metadataEnv reads metadata.env: an object whose values are strings.
func metadataEnv(metadata json.RawMessage) (map[string]string, error) {
	raw := bytes.TrimSpace(metadata)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var md map[string]json.RawMessage
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_metadata", "metadata must be a JSON object")
	}
	envRaw := bytes.TrimSpace(md["env"])
	if len(envRaw) == 0 || string(envRaw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(envRaw, &fields); err != nil || fields == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_metadata", "metadata.env must be a JSON object of strings")
	}
	env := make(map[string]string, len(fields))
	var problems []string
	for _, k := range sortedKeys(fields) {
		var v string
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			problems = append(problems, fmt.Sprintf("%q is not a valid variable name", k))
		case !isJSONString(fields[k]) || json.Unmarshal(fields[k], &v) != nil:
			problems = append(problems, fmt.Sprintf("%s must be a string", k))
		case strings.IndexByte(v, 0) >= 0:
			problems = append(problems, fmt.Sprintf("%s contains a NUL byte", k))
		default:
			env[k] = v
		}
	}
	if len(problems) > 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_metadata", "metadata.env: %s", strings.Join(problems, "; "))
	}
	return env, nil
}

func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func intPtr(i int) *int { return &i }
