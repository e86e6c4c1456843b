//go:build linux

package deterministic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	executortest.Run(t, executortest.Harness{
		NewExecutor: func(t *testing.T) orchestrator.Executor {
			return New(Config{StopGrace: 500 * time.Millisecond, Logger: testLogger(t)})
		},
		Invocation: func(t *testing.T, b executortest.Behavior, params json.RawMessage) *orchestrator.Invocation {
			return helperInvocation(t, string(params), string(b))
		},
		ResultType: ResultType,
		Stopped: func(t *testing.T, _ *orchestrator.Invocation, events []orchestrator.Event) {
			if len(events) == 0 {
				return // cancelled before the start: nothing was started
			}
			pgid, _ := readyInfo(t, events)
			proctest.RequireGroupGone(t, pgid)
		},
	})
}

// sink records events, and tells when the first one arrives.
type sink struct {
	mu     sync.Mutex
	events []orchestrator.Event
	calls  int
	first  chan struct{}
	once   sync.Once
	err    error
}

func newSink() *sink { return &sink{first: make(chan struct{})} }

func (s *sink) Emit(_ context.Context, events ...orchestrator.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.events = append(s.events, events...)
	s.once.Do(func() { close(s.first) })
	return s.err
}

func (s *sink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.events {
		var d struct{ Line string }
		_ = ev.DecodeData(&d)
		out = append(out, d.Line)
	}
	return out
}

func (s *sink) all() []orchestrator.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]orchestrator.Event(nil), s.events...)
}

type outcome struct {
	res *orchestrator.Result
	err error
}

// start runs Execute in the background.
func start(ctx context.Context, ex *Executor, inv *orchestrator.Invocation, s orchestrator.EventSink) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := ex.Execute(ctx, inv, s)
		ch <- outcome{res, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan outcome, within time.Duration) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(within):
		t.Fatalf("Execute did not return within %v", within)
		return outcome{}
	}
}

func mustRun(t *testing.T, ex *Executor, inv *orchestrator.Invocation) (*orchestrator.Result, *sink) {
	t.Helper()
	s := newSink()
	o := await(t, start(t.Context(), ex, inv, s), 30*time.Second)
	if o.err != nil {
		t.Fatalf("Execute(%s) error = %v", inv.Blueprint.Command, o.err)
	}
	return o.res, s
}

func exitCode(r *orchestrator.Result) int {
	if r.ExitCode == nil {
		return -999
	}
	return *r.ExitCode
}

// The example echo-json blueprint, with its exact command, through a real Python.
func TestExampleEchoJSON(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python"); err != nil {
		t.Skip("python is not on PATH")
	}
	params := `{"message":"hello","count":3}`
	inv := &orchestrator.Invocation{
		SessionID: "ses_echo",
		Blueprint: &orchestrator.Blueprint{
			Name:    "echo-json",
			Type:    orchestrator.AgentTypeDeterministic,
			Command: `python -c "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))"`,
		},
		Parameters: json.RawMessage(params),
	}
	res, _ := mustRun(t, New(Config{Logger: testLogger(t)}), inv)
	if res.Failed() {
		t.Fatalf("echo-json failed: %q (exit %d)", res.Error, exitCode(res))
	}
	var got, want any
	_ = json.Unmarshal(res.ResultData, &got)
	_ = json.Unmarshal([]byte(params), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result_data = %s, want %s", res.ResultData, params)
	}
	if exitCode(res) != 0 || res.ResultType != "deterministic" {
		t.Errorf("exit code %d, result type %q; want 0, deterministic", exitCode(res), res.ResultType)
	}
}

// The first stderr line must reach the sink while the program is still running: the program waits for the
// test (a FIFO) after writing it, so it cannot have exited.
func TestStderrStreamsWhileRunning(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSink()
	done := start(t.Context(), New(Config{Logger: testLogger(t)}), helperInvocation(t, `{}`, "fifo", fifo), s)
	select {
	case <-s.first:
	case o := <-done:
		t.Fatalf("Execute returned before its first stderr line was delivered: %+v, %v", o.res, o.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no stderr event within 10s")
	}
	if got := s.lines(); !reflect.DeepEqual(got, []string{"first"}) {
		t.Fatalf("events while running = %q, want [first]", got)
	}
	// Release the program: opening the FIFO for writing and closing it gives it EOF.
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			err = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the program never opened the FIFO")
	}
	o := await(t, done, 10*time.Second)
	if o.err != nil || o.res.Failed() {
		t.Fatalf("Execute = %+v, %v; want success", o.res, o.err)
	}
	if got := s.lines(); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Errorf("events = %q, want [first second]", got)
	}
	for _, ev := range s.all() {
		if ev.Type != orchestrator.EventStderr || ev.SessionID == "" || ev.Time.IsZero() {
			t.Errorf("event %+v: want type stderr with session id and time", ev)
		}
	}
}

func TestStdoutCapTruncates(t *testing.T) {
	t.Parallel()
	ex := New(Config{MaxOutputBytes: 1000, Logger: testLogger(t)})
	res, s := mustRun(t, ex, helperInvocation(t, `{}`, "flood", "1048576"))
	if res.Failed() {
		t.Fatalf("flood failed: %q (exit %d); a program beyond the cap must be drained, not failed", res.Error, exitCode(res))
	}
	if !res.Truncated || len(res.ResultText) != 1000 || res.ResultData != nil {
		t.Errorf("Truncated = %v, len(ResultText) = %d, ResultData = %q; want true, 1000, none", res.Truncated, len(res.ResultText), res.ResultData)
	}
	var cut []orchestrator.Event
	for _, ev := range s.all() {
		if ev.Type == orchestrator.EventOutputTruncated {
			cut = append(cut, ev)
		}
	}
	var d struct {
		By          string `json:"by"`
		OutputBytes int64  `json:"output_bytes"`
		KeptBytes   int64  `json:"kept_bytes"`
		LimitBytes  int64  `json:"limit_bytes"`
	}
	if len(cut) != 1 || cut[0].DecodeData(&d) != nil || d.By != "executor" || d.OutputBytes != 1048576 || d.KeptBytes != 1000 || d.LimitBytes != 1000 {
		t.Errorf("output_truncated events %v (%+v), want one with the sizes", cut, d)
	}

	t.Run("JSON under the cap is parsed", func(t *testing.T) {
		res, _ := mustRun(t, ex, helperInvocation(t, `{}`, "print", ` {"a": [1, 2]} `+"\n"))
		if res.Truncated || string(res.ResultData) != `{"a": [1, 2]}` {
			t.Errorf("Truncated = %v, ResultData = %s; want false, the trimmed JSON", res.Truncated, res.ResultData)
		}
	})
	t.Run("truncated output fails an output_schema", func(t *testing.T) {
		inv := helperInvocation(t, `{}`, "flood", "5000")
		inv.OutputSchema = json.RawMessage(`{"type":"string"}`)
		res, _ := mustRun(t, ex, inv)
		if !res.Failed() || !strings.HasPrefix(res.Error, outputcheck.Prefix) {
			t.Errorf("Error = %q, want an output_schema failure", res.Error)
		}
	})
}

func TestNonJSONStdout(t *testing.T) {
	t.Parallel()
	res, _ := mustRun(t, New(Config{}), helperInvocation(t, `{}`, "print", "hello\n"))
	if res.Failed() || res.ResultText != "hello\n" || res.ResultData != nil {
		t.Errorf("result = %+v; want success, ResultText \"hello\\n\", no ResultData", res)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	ex := New(Config{StopGrace: 200 * time.Millisecond, Logger: testLogger(t)})
	inv := helperInvocation(t, `{}`, "ignoreterm")
	// Long enough for the helper to start and ignore SIGTERM before the timeout comes, even on a loaded
	// machine where starting a race-instrumented test binary takes over a second.
	inv.Blueprint.TimeoutSeconds = 3
	s := newSink()
	o := await(t, start(t.Context(), ex, inv, s), 20*time.Second)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Error != "timed out after 3s" || exitCode(o.res) != -1 || o.res.ErrorCode != "timeout" {
		t.Errorf("Error = %q, ExitCode = %d; want \"timed out after 3s\", -1", o.res.Error, exitCode(o.res))
	}
	// The helper ignored SIGTERM: only the SIGKILL after the grace period ended it, and its group with it.
	pgid, _ := readyInfo(t, s.all())
	proctest.RequireGroupGone(t, pgid)
}

// A stopped run kills the whole process group, grandchildren included, even when all of them ignore
// SIGTERM and hold the run's pipes open.
func TestCancelKillsGrandchildren(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	ex := New(Config{StopGrace: grace, Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := newSink()
	done := start(ctx, ex, helperInvocation(t, `{}`, "grandchildren"), s)
	select {
	case <-s.first:
	case o := <-done:
		t.Fatalf("Execute returned early: %+v, %v", o.res, o.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no ready line within 10s")
	}
	pgid, children := readyInfo(t, s.all())
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	if len(children) != 3 {
		t.Fatalf("children = %v, want 3", children)
	}
	for _, pid := range children {
		if !proctest.ProcessAlive(pid) {
			t.Fatalf("grandchild %d is not running before the cancel", pid)
		}
		if pg, _ := syscall.Getpgid(pid); pg != pgid {
			t.Fatalf("grandchild %d is in group %d, want %d", pid, pg, pgid)
		}
	}
	cancel()
	cancelled := time.Now()
	o := await(t, done, 10*time.Second)
	if took := time.Since(cancelled); took > grace+2*time.Second {
		t.Errorf("Execute returned %v after cancel, want about the grace period (%v)", took, grace)
	}
	if o.err != nil {
		t.Fatalf("Execute error = %v, want nil (a stop is an outcome)", o.err)
	}
	if o.res.Error != "stopped" || exitCode(o.res) != -1 {
		t.Errorf("Error = %q, ExitCode = %d; want stopped, -1", o.res.Error, exitCode(o.res))
	}
	// Right after Execute returns the group may still be dying (SIGKILL is asynchronous), never alive.
	proctest.RequireGroupGone(t, pgid)
	for _, pid := range children {
		if proctest.ProcessAlive(pid) {
			t.Errorf("grandchild %d survived", pid)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	inv := helperInvocation(t, `{}`, "env", "A,B,C,AGENT_SESSION_ID,AGENT_RUN_ID,"+helperEnv)
	inv.Blueprint.Env["A"] = "blueprint"
	inv.Blueprint.Env["B"] = "blueprint"
	inv.Blueprint.Env["AGENT_SESSION_ID"] = "spoofed"
	inv.Blueprint.AllowedEnv = []string{"B", "C"}
	inv.Metadata = json.RawMessage(`{"owner":"x","env":{"B":"metadata","C":"metadata"}}`)
	inv.Env = map[string]string{orchestrator.EnvSessionID: "ses_real", orchestrator.EnvRunID: "run_real"}
	res, _ := mustRun(t, New(Config{}), inv)
	var got map[string]string
	if err := json.Unmarshal(res.ResultData, &got); err != nil {
		t.Fatalf("output %q: %v", res.ResultText, err)
	}
	want := map[string]string{"A": "blueprint", "B": "metadata", "C": "metadata",
		"AGENT_SESSION_ID": "ses_real", "AGENT_RUN_ID": "run_real", helperEnv: "1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v, want %v", got, want)
	}
}

// metadata.env may set only what the blueprint's allowed_env lists, and never a name that changes which
// code runs: the executor checks again what the coordinator checked, and starts nothing when it fails.
func TestEnvironmentNotAllowed(t *testing.T) {
	t.Parallel()
	for _, md := range []string{
		`{"env":{"D":"x"}}`, `{"env":{"LD_PRELOAD":"/tmp/x.so"}}`, `{"env":{"BASH_ENV":"/tmp/x"}}`,
		`{"env":{"PATH":"/tmp"}}`, `{"env":{"PYTHONWARNINGS":"x"}}`, `{"env":{"B":"ok","ld_preload":"/tmp/x.so"}}`,
	} {
		dir := t.TempDir()
		inv := helperInvocation(t, `{}`, "env", "B")
		inv.Blueprint.AllowedEnv = []string{"B"}
		inv.ProjectDir = dir
		inv.Metadata = json.RawMessage(md)
		s := newSink()
		res, err := New(Config{}).Execute(t.Context(), inv, s)
		var oe *orchestrator.Error
		if !errors.As(err, &oe) || oe.Code != "env_not_allowed" || !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("metadata %s: Execute = %+v, %v; want an env_not_allowed error", md, res, err)
			continue
		}
		if len(s.all()) != 0 {
			t.Errorf("metadata %s: events %v, want none: nothing may run", md, s.all())
		}
	}
}

// The runner's credentials are not inherited (executor/isolation has the details).
func TestEnvironmentHidesCredentials(t *testing.T) {
	const token = "runner-token-for-deterministic-test"
	t.Setenv("ORCHESTRATOR_RUNNER_TOKEN", token)
	t.Setenv("DETERMINISTIC_TEST_COPY", token)
	inv := helperInvocation(t, `{}`, "env", "ORCHESTRATOR_RUNNER_TOKEN,DETERMINISTIC_TEST_COPY")
	res, _ := mustRun(t, New(Config{Isolation: isolation.Config{HiddenValues: []string{token}}}), inv)
	if strings.Contains(res.ResultText, token) {
		t.Errorf("the program saw the runner's token: %s", res.ResultText)
	}
}

// With Isolation.User the command runs as that user, with its HOME.
func TestRunAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("running a command as another user needs root; CI runs the tests as root")
	}
	u, err := isolation.LookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	inv := helperInvocation(t, `{}`)
	inv.Blueprint.Command = `/bin/sh -c 'id -u; echo "$HOME"'`
	inv.ProjectDir = "/"
	res, _ := mustRun(t, New(Config{Isolation: isolation.Config{User: u}}), inv)
	if want := fmt.Sprintf("%d\n%s\n", u.UID, u.HomeDir); res.ResultText != want {
		t.Errorf("output %q, want %q", res.ResultText, want)
	}
}

func TestEnvironmentErrors(t *testing.T) {
	t.Parallel()
	for _, md := range []string{
		`{"env":{"X":1}}`, `{"env":{"X":null}}`, `{"env":["X=1"]}`, `{"env":"X=1"}`, `[]`, `"x"`,
		`{"env":{"A=B":"x"}}`, `{"env":{"":"x"}}`, `{"env":{"X":"a\u0000b"}}`,
	} {
		inv := helperInvocation(t, `{}`, "env", "X")
		inv.Metadata = json.RawMessage(md)
		res, err := New(Config{}).Execute(t.Context(), inv, nil)
		if err == nil || !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("metadata %s: Execute = %+v, %v; want an ErrInvalid error", md, res, err)
		}
	}
	for _, md := range []string{``, `null`, `{}`, `{"env":null}`, `{"env":{}}`} {
		inv := helperInvocation(t, `{}`, "env", "X")
		inv.Metadata = json.RawMessage(md)
		if res, err := New(Config{}).Execute(t.Context(), inv, nil); err != nil || res.Failed() {
			t.Errorf("metadata %q: Execute = %+v, %v; want success", md, res, err)
		}
	}
}

func TestArgvAndStdin(t *testing.T) {
	t.Parallel()
	params := `{"url":"https://x.com","depth":2,"verbose":true,"offset":-1}`
	inv := helperInvocation(t, params, "args")
	res, _ := mustRun(t, New(Config{}), inv)
	var got []string
	if err := json.Unmarshal(res.ResultData, &got); err != nil {
		t.Fatalf("output %q: %v", res.ResultText, err)
	}
	want, _ := BuildArgs(inv.Blueprint.Command, json.RawMessage(params))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the program saw argv %q, want %q", got, want)
	}
}

// A program that never reads stdin neither blocks nor fails the run, however large the parameters are.
func TestStdinNotRead(t *testing.T) {
	t.Parallel()
	params := `{"blob":"` + strings.Repeat("z", 100<<10) + `"}` // more than a pipe buffer
	res, _ := mustRun(t, New(Config{}), helperInvocation(t, params, "nostdin"))
	if res.Failed() || string(res.ResultData) != `{"ok":true}` {
		t.Errorf("result = %q, %q (exit %d); want success", res.ResultData, res.Error, exitCode(res))
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	ex := New(Config{})
	tests := []struct {
		mode      []string
		wantCode  int
		wantError string
	}{
		{[]string{"fail"}, 3, "starting\n" + executortest.FailMessage},
		{[]string{"exit", "4"}, 4, "exit code 4"},
		{[]string{"selfkill"}, -1, "killed by signal 9 (killed)"},
		{[]string{"nonewline", "x"}, 0, ""},
	}
	for _, tt := range tests {
		res, _ := mustRun(t, ex, helperInvocation(t, `{}`, tt.mode...))
		if exitCode(res) != tt.wantCode || res.Error != tt.wantError {
			t.Errorf("%v: ExitCode = %d, Error = %q; want %d, %q", tt.mode, exitCode(res), res.Error, tt.wantCode, tt.wantError)
		}
	}
}

func TestLongStderrLine(t *testing.T) {
	t.Parallel()
	res, s := mustRun(t, New(Config{MaxStderrLine: 100}), helperInvocation(t, `{}`, "longline", "1000"))
	if res.Failed() {
		t.Fatal(res.Error)
	}
	evs := s.all()
	if len(evs) != 2 {
		t.Fatalf("got %d events (%q), want 2", len(evs), s.lines())
	}
	var first struct {
		Line      string
		Truncated bool
	}
	_ = evs[0].DecodeData(&first)
	if !first.Truncated || first.Line != strings.Repeat("y", 100)+" … [line truncated: 900 more bytes]" {
		t.Errorf("long line event = %+v", first)
	}
	if got := s.lines()[1]; got != "short" {
		t.Errorf("second line = %q, want short", got)
	}

	t.Run("exactly the limit is not truncated", func(t *testing.T) {
		res, s := mustRun(t, New(Config{MaxStderrLine: 100}), helperInvocation(t, `{}`, "longline", "100"))
		if res.Failed() {
			t.Fatal(res.Error)
		}
		if got := s.lines(); len(got) != 2 || got[0] != strings.Repeat("y", 100) {
			t.Errorf("lines = %q", got)
		}
	})
}

func TestOutputSchemaFailFast(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"integer"}}}`)
	ex := New(Config{})
	t.Run("not JSON", func(t *testing.T) {
		inv := helperInvocation(t, `{}`, "print", "not json")
		inv.OutputSchema = schema
		res, _ := mustRun(t, ex, inv)
		if res.Error != outputcheck.Prefix+"stdout is not valid JSON" || exitCode(res) != 0 {
			t.Errorf("Error = %q, ExitCode = %d", res.Error, exitCode(res))
		}
	})
	t.Run("does not validate", func(t *testing.T) {
		inv := helperInvocation(t, `{"answer":"x"}`, "echo")
		inv.OutputSchema = schema
		res, _ := mustRun(t, ex, inv)
		if !strings.HasPrefix(res.Error, outputcheck.Prefix) || len(res.ValidationErrors) == 0 {
			t.Errorf("Error = %q, ValidationErrors = %v; want an output_schema failure", res.Error, res.ValidationErrors)
		}
	})
	t.Run("validates", func(t *testing.T) {
		inv := helperInvocation(t, `{"answer":42}`, "echo")
		inv.OutputSchema = schema
		if res, _ := mustRun(t, ex, inv); res.Failed() {
			t.Errorf("Error = %q, want success", res.Error)
		}
	})
	t.Run("not checked after a failed exit", func(t *testing.T) {
		inv := helperInvocation(t, `{}`, "exit", "2")
		inv.OutputSchema = schema
		if res, _ := mustRun(t, ex, inv); res.Error != "exit code 2" || len(res.ValidationErrors) > 0 {
			t.Errorf("Error = %q, ValidationErrors = %v; want the exit failure only", res.Error, res.ValidationErrors)
		}
	})
}

// argv[0] is found in the PATH of the run's environment (blueprint env here), not the runner's.
func TestPathFromRunEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self, _ := os.Executable()
	if err := os.Symlink(self, filepath.Join(dir, "helperbin")); err != nil {
		t.Fatal(err)
	}
	inv := helperInvocation(t, `{"k":"v"}`, "echo")
	inv.Blueprint.Command = "helperbin -test.run=^TestHelperProcess$ -- echo"
	inv.Blueprint.Env["PATH"] = "relative/dir:" + dir
	res, _ := mustRun(t, New(Config{}), inv)
	if res.Failed() || string(res.ResultData) != `{"k":"v"}` {
		t.Errorf("result = %+v, want the echo", res)
	}

	inv = helperInvocation(t, `{}`, "echo")
	inv.Blueprint.Command = "no-such-program-4f1c"
	if _, err := New(Config{}).Execute(t.Context(), inv, nil); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Execute(no-such-program) error = %v, want exec.ErrNotFound", err)
	}
}

func TestProjectDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inv := helperInvocation(t, `{}`, "cwd")
	inv.ProjectDir = dir
	res, _ := mustRun(t, New(Config{}), inv)
	var got string
	_ = json.Unmarshal(res.ResultData, &got)
	want, _ := filepath.EvalSymlinks(dir)
	if got != want {
		t.Errorf("working directory = %q, want %q", got, want)
	}
}

func TestInvalidInvocations(t *testing.T) {
	t.Parallel()
	ex := New(Config{})
	resume := helperInvocation(t, `{}`, "echo")
	resume.Mode = orchestrator.RunTypeResume
	noCommand := helperInvocation(t, `{}`, "echo")
	noCommand.Blueprint.Command = " "
	badKey := helperInvocation(t, `{"-rf":true}`, "echo")
	for name, inv := range map[string]*orchestrator.Invocation{
		"resume": resume, "no command": noCommand, "bad parameter name": badKey, "no blueprint": {},
	} {
		if res, err := ex.Execute(t.Context(), inv, nil); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("%s: Execute = %+v, %v; want an ErrInvalid error", name, res, err)
		}
	}
}

// Errors from the event sink are logged, never fatal to the run.
func TestSinkErrorsDoNotFailTheRun(t *testing.T) {
	t.Parallel()
	s := newSink()
	s.err = errors.New("coordinator unreachable")
	o := await(t, start(t.Context(), New(Config{}), helperInvocation(t, `{"a":1}`, "stream"), s), 30*time.Second)
	if o.err != nil || o.res.Failed() || string(o.res.ResultData) != `{"a":1}` {
		t.Errorf("Execute = %+v, %v; want success", o.res, o.err)
	}
	if len(s.all()) != executortest.StreamEvents {
		t.Errorf("got %d events, want %d", len(s.all()), executortest.StreamEvents)
	}
}

// Lines that arrive together go to the sink together.
func TestStderrBatching(t *testing.T) {
	t.Parallel()
	res, s := mustRun(t, New(Config{}), helperInvocation(t, `{}`, "burst", "200"))
	if res.Failed() {
		t.Fatal(res.Error)
	}
	lines := s.lines()
	if len(lines) != 200 || lines[0] != "line 0" || lines[199] != "line 199" {
		t.Fatalf("got %d lines (%q…), want line 0 … line 199 in order", len(lines), lines[:min(3, len(lines))])
	}
	if s.calls > 20 {
		t.Errorf("200 lines written at once took %d Emit calls, want them batched", s.calls)
	}
}

// A sink slower than the program never blocks the program: it runs to its end while the sink is stuck,
// the lines beyond the queue's bound are dropped, and stderr_dropped events say how many: the lines kept
// and the lines counted add up to every line the program wrote.
func TestSlowSinkDoesNotBlockTheProgram(t *testing.T) {
	t.Parallel()
	// More than the queue holds even with a full pipe buffer (64 KiB, ~6000 of these lines) still unread
	// when the program exits.
	const lines = proc.MaxPendingLines + 20000
	release := make(chan struct{})
	first := make(chan orchestrator.Event, 1)
	var mu sync.Mutex
	var got []orchestrator.Event
	blocking := orchestrator.EventSinkFunc(func(ctx context.Context, evs ...orchestrator.Event) error {
		mu.Lock()
		got = append(got, evs...)
		mu.Unlock()
		select {
		case first <- evs[0]:
			<-release // stuck until the test has seen the program finish
		default:
		}
		return nil
	})
	done := start(t.Context(), New(Config{}), helperInvocation(t, `{}`, "chatty", fmt.Sprint(lines)), blocking)
	var ev orchestrator.Event
	select {
	case ev = <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	var pid int
	var d struct{ Line string }
	_ = ev.DecodeData(&d)
	if _, err := fmt.Sscanf(d.Line, "ready pid=%d", &pid); err != nil {
		t.Fatalf("first line %q: %v", d.Line, err)
	}
	proctest.WaitFor(t, 10*time.Second, "the program to finish while the sink is stuck", func() bool { return !proctest.ProcessAlive(pid) })
	close(release)
	o := await(t, done, 10*time.Second)
	if o.err != nil || o.res.Failed() {
		t.Fatalf("Execute = %+v, %v", o.res, o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	kept, dropped, markers := 0, 0, 0
	for _, ev := range got {
		switch ev.Type {
		case orchestrator.EventStderr:
			kept++
		case orchestrator.EventStderrDropped:
			var d struct {
				DroppedLines int    `json:"dropped_lines"`
				Reason       string `json:"reason"`
			}
			if err := ev.DecodeData(&d); err != nil || d.DroppedLines <= 0 || d.Reason != "queue_full" {
				t.Errorf("stderr_dropped event %s: want a positive dropped_lines and reason queue_full", ev.Data)
			}
			dropped += d.DroppedLines
			markers++
		}
	}
	if markers == 0 || kept+dropped != lines+1 {
		t.Errorf("%d lines kept, %d counted dropped in %d stderr_dropped events; want some dropped, and %d in all", kept, dropped, markers, lines+1)
	}
}

func TestPartialLastLine(t *testing.T) {
	t.Parallel()
	_, s := mustRun(t, New(Config{}), helperInvocation(t, `{}`, "nonewline"))
	if got := s.lines(); !reflect.DeepEqual(got, []string{"partial line"}) {
		t.Errorf("lines = %q, want [partial line]", got)
	}
}

// A command word with a slash is relative to the project directory.
func TestRelativeProgramInProjectDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self, _ := os.Executable()
	if err := os.Symlink(self, filepath.Join(dir, "helperbin")); err != nil {
		t.Fatal(err)
	}
	inv := helperInvocation(t, `{"k":"v"}`, "echo")
	inv.Blueprint.Command = "./helperbin -test.run=^TestHelperProcess$ -- echo"
	inv.ProjectDir = dir
	res, _ := mustRun(t, New(Config{}), inv)
	if res.Failed() || string(res.ResultData) != `{"k":"v"}` {
		t.Errorf("result = %+v, want the echo", res)
	}
}

// A process that leaves the group (setsid) cannot be killed with it, and may hold the run's pipes open
// forever; the run still ends, a short while after its program exited.
func TestEscapedProcessDoesNotHoldTheRun(t *testing.T) {
	t.Parallel()
	s := newSink()
	begun := time.Now()
	o := await(t, start(t.Context(), New(Config{Logger: testLogger(t)}), helperInvocation(t, `{}`, "escape"), s), 20*time.Second)
	_, children := readyInfo(t, s.all())
	for _, pid := range children {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if o.err != nil || o.res.Failed() || string(o.res.ResultData) != `{"escaped":true}` {
		t.Fatalf("Execute = %+v, %v; want success", o.res, o.err)
	}
	if took := time.Since(begun); took > proc.PipeDrainTimeout+5*time.Second {
		t.Errorf("took %v, want about proc.PipeDrainTimeout (%v)", took, proc.PipeDrainTimeout)
	}
	if len(children) != 1 || !proctest.ProcessAlive(children[0]) {
		t.Errorf("escaped process %v is not running; the test does not test what it says", children)
	}
}
