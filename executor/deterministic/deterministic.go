// Package deterministic is the executor for deterministic agents: it runs a blueprint's command as a
// subprocess, passes the run's parameters as command-line flags and on stdin, streams stderr lines as
// events, and returns stdout as the result (DESIGN §6; seeds 000 §5-6, 001 §8-9, 002, 003).
//
// # What a run does
//
//   - argv is the blueprint's command split into words ([orchestrator.SplitCommand]) followed by the
//     parameters as flags ([BuildArgs], [ParameterArgs]). The program is executed directly, never through a
//     shell; argv[0] is looked up in the PATH of the run's own environment.
//   - The environment is the runner's own (os.Environ), then the blueprint's Env, then the run's
//     metadata.env (an object of strings), then the invocation's Env (AGENT_SESSION_ID, AGENT_RUN_ID, the
//     gateway URL): later sources win.
//   - The working directory is the invocation's ProjectDir, when set.
//   - The parameters JSON (followed by a newline) is written to stdin, which is then closed, so a program
//     may take its input either way. A program that does not read stdin is fine.
//   - Every stderr line becomes an [orchestrator.EventStderr] event ({"line": "..."}) while the program
//     runs. Lines longer than [Config].MaxStderrLine are cut, with a marker saying how much was cut.
//   - stdout, up to [Config].MaxOutputBytes, is the result's ResultText; when it is JSON (after trimming
//     white space) it is also ResultData. Beyond the limit stdout is read and discarded, Result.Truncated is
//     set and ResultData is left empty: a prefix of a JSON document is not the document.
//   - Exit code 0 completes the run; any other fails it with the last stderr lines as the error (or "exit
//     code N" when there are none). ExitCode is always set, -1 when the process did not exit by itself.
//   - With an output schema (the invocation's OutputSchema, which the coordinator chose), stdout of a
//     successful exit must be JSON that validates, else the run fails with every validation error: fail
//     fast, no retries (seed 003).
//
// # Stopping
//
// The program leads its own process group. When the run is stopped (ctx is cancelled) or the blueprint's
// timeout expires, the whole group gets SIGTERM, and SIGKILL after [Config].StopGrace if the program has not
// exited by then. Whatever way the program ends, the group gets SIGKILL once it has exited, so no
// grandchild survives the run (background jobs included); a process that leaves the group (setsid) is
// beyond reach, and after a short wait its pipes are closed under it so the run still ends.
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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
)

// ResultType is the result_type of every result this executor returns.
const ResultType = "deterministic"

// Defaults of [Config].
const (
	DefaultMaxOutputBytes = 4 << 20
	DefaultStopGrace      = 5 * time.Second
	DefaultMaxStderrLine  = 16 << 10
)

const (
	// pipeDrainTimeout is how long the executor waits, after the process group is gone, for the pipes to
	// reach EOF. Only a process that escaped the group can hold them open that long; the pipes are then
	// closed under it.
	pipeDrainTimeout = 2 * time.Second
	// flushTimeout bounds delivering the last stderr events once the program has ended, so a sink that
	// hangs cannot hold the run forever.
	flushTimeout = 5 * time.Second
	// minStderrLine is the smallest line limit accepted.
	minStderrLine = 64
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
	// dropped and the event says how much. Zero means DefaultMaxStderrLine (16 KiB); values below 64 are
	// raised to 64.
	MaxStderrLine int
	// Logger receives the executor's own diagnostics (sink errors, dropped lines, kill failures). Nil
	// discards them.
	Logger *slog.Logger
}

// Executor runs deterministic agents' commands. It implements [orchestrator.Executor] and is safe for
// concurrent use; each Execute call runs one process group.
type Executor struct {
	cfg     Config
	schemas *orchestrator.SchemaCache
}

var _ orchestrator.Executor = (*Executor)(nil)

// New returns an executor with cfg, its zero fields set to their defaults.
func New(cfg Config) *Executor {
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	switch {
	case cfg.MaxStderrLine == 0:
		cfg.MaxStderrLine = DefaultMaxStderrLine
	case cfg.MaxStderrLine < minStderrLine:
		cfg.MaxStderrLine = minStderrLine
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{cfg: cfg, schemas: orchestrator.NewSchemaCache(64)}
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
	env, err := buildEnv(inv)
	if err != nil {
		return nil, err
	}
	var schema *orchestrator.Schema
	if s := bytes.TrimSpace(inv.OutputSchema); len(s) > 0 && string(s) != "null" {
		if schema, err = e.schemas.Compile(inv.OutputSchema); err != nil {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_schema", "output_schema: %v", err)
		}
	}
	path, err := lookPath(argv[0], lookupEnv(env, "PATH"))
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return &orchestrator.Result{ResultType: ResultType, ExitCode: intPtr(-1), Error: "stopped"}, nil
	}
	return e.run(ctx, inv, events, path, argv, env, schema)
}

type endReason int

const (
	exited endReason = iota
	stopped
	timedOut
)

func (e *Executor) run(ctx context.Context, inv *orchestrator.Invocation, sink orchestrator.EventSink,
	path string, argv, env []string, schema *orchestrator.Schema) (*orchestrator.Result, error) {
	log := e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", inv.AgentName)

	// Own pipes rather than cmd.StdoutPipe & co.: the reading goroutines must be able to outlive Wait (a
	// grandchild may still hold the write ends) and be ended by closing the read ends.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	defer closeAll(inW, outR, errR)

	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0] // the program sees argv[0] as the blueprint wrote it
	cmd.Env = env
	cmd.Dir = inv.ProjectDir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	prepareGroup(cmd)
	startErr := cmd.Start()
	closeAll(inR, outW, errW) // the child has its copies
	if startErr != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], startErr)
	}
	group := groupOf(cmd.Process)
	log.Debug("deterministic run started", "pid", cmd.Process.Pid, "argv", argv)

	// Events are delivered with a context that outlives a stop, so the lines a program writes while it
	// shuts down still reach the session; flushTimeout bounds that.
	emitCtx, cancelEmit := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEmit()
	pump := newStderrPump(inv.SessionID, e.cfg.MaxStderrLine, log)
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		pump.deliver(emitCtx, sink)
	}()

	stdout := &capture{limit: e.cfg.MaxOutputBytes}
	var pipes sync.WaitGroup
	pipes.Go(func() { _, _ = io.Copy(stdout, outR) })
	pipes.Go(func() { pump.read(errR) })
	pipes.Go(func() { writeStdin(inW, stdinPayload(inv.Parameters), log) })

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if d := inv.Blueprint.Timeout(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	reason := exited
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		reason = stopped
		waitErr = e.terminate(group, waited, log)
	case <-timeout:
		reason = timedOut
		waitErr = e.terminate(group, waited, log)
	}
	// The leader is gone; nothing else of its group may outlive the run.
	if err := group.kill(); err != nil {
		log.Warn("kill process group after exit", "error", err)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		log.Warn("wait for deterministic command", "error", waitErr)
	}

	drained := make(chan struct{})
	go func() { pipes.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeDrainTimeout):
		log.Warn("a process outside the run's process group holds its pipes open; closing them")
		closeAll(inW, outR, errR)
		<-drained
	}
	flushDeadline := time.AfterFunc(flushTimeout, cancelEmit)
	<-delivered
	flushDeadline.Stop()

	res := &orchestrator.Result{ResultType: ResultType}
	text, truncated := stdout.result()
	res.ResultText, res.Truncated = string(text), truncated
	if !truncated {
		if t := bytes.TrimSpace(text); len(t) > 0 && json.Valid(t) {
			res.ResultData = json.RawMessage(bytes.Clone(t))
		}
	}
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	switch reason {
	case stopped:
		res.Error = "stopped"
		code = -1
	case timedOut:
		res.Error = "timed out after " + inv.Blueprint.Timeout().String()
		code = -1
	default:
		if code != 0 {
			if res.Error = pump.errorTail(); res.Error == "" && cmd.ProcessState != nil {
				res.Error = exitDescription(cmd.ProcessState)
			}
		} else {
			outputcheck.Apply(res, schema, "stdout")
		}
	}
	res.ExitCode = &code
	log.Debug("deterministic run ended", "exit_code", code, "error", res.Error, "stdout_bytes", stdout.total)
	return res, nil
}

// terminate stops the process group: SIGTERM, then SIGKILL if the leader has not exited within the grace
// period. It returns Wait's result.
func (e *Executor) terminate(group processGroup, waited <-chan error, log *slog.Logger) error {
	if err := group.terminate(); err != nil {
		log.Warn("terminate process group", "error", err)
	}
	grace := time.NewTimer(e.cfg.StopGrace)
	defer grace.Stop()
	select {
	case err := <-waited:
		return err
	case <-grace.C:
	}
	if err := group.kill(); err != nil {
		log.Warn("kill process group", "error", err)
	}
	return <-waited
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

// writeStdin writes payload and closes stdin. A program that exits without reading it makes the write fail
// with EPIPE; that is not an error of the run.
func writeStdin(w *os.File, payload []byte, log *slog.Logger) {
	if _, err := w.Write(payload); err != nil && !isBrokenPipe(err) && !errors.Is(err, os.ErrClosed) {
		log.Debug("write parameters to stdin", "error", err)
	}
	_ = w.Close()
}

// capture keeps the first limit bytes written to it and counts the rest. It never fails, so io.Copy keeps
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

// buildEnv layers the run's environment: os.Environ, the blueprint's Env, metadata.env, the invocation's
// Env. Later layers override earlier ones, in place, so each name appears once.
func buildEnv(inv *orchestrator.Invocation) ([]string, error) {
	metaEnv, err := metadataEnv(inv.Metadata)
	if err != nil {
		return nil, err
	}
	env := os.Environ()
	index := make(map[string]int, len(env))
	for i, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			index[k] = i
		}
	}
	set := func(k, v string) {
		kv := k + "=" + v
		if i, ok := index[k]; ok {
			env[i] = kv
			return
		}
		index[k] = len(env)
		env = append(env, kv)
	}
	for _, layer := range []map[string]string{inv.Blueprint.Env, metaEnv, inv.Env} {
		for _, k := range sortedKeys(layer) {
			set(k, layer[k])
		}
	}
	return env, nil
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

func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// lookPath finds file in pathList, the PATH of the run's own environment (exec.LookPath would search the
// runner's). A name containing a slash is used as it is, relative to the working directory. Relative PATH
// entries are skipped, as exec.LookPath refuses them (exec.ErrDot): they would make the program depend on
// the working directory.
func lookPath(file, pathList string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

func intPtr(i int) *int { return &i }

func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
