//go:build linux

package process

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/internal/eventtest"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// The tests run the test binary itself as the external program (go-plugin's TestHelperProcess pattern).
// The behaviour comes from the invocation it reads on stdin: executor_config.behavior.

const helperEnv = "GO_WANT_HELPER_PROCESS"

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for the process executor's tests")
	}
	os.Exit(helperMain())
}

func helperMain() int {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: read stdin:", err)
		return 64
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		fmt.Fprintln(os.Stderr, "helper: decode stdin:", err)
		return 64
	}
	writeResult := func(v any) int {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(os.Getenv(EnvResultFile), b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "helper: write result:", err)
			return 65
		}
		return 0
	}
	echo := func() int {
		return writeResult(map[string]any{"result_text": string(in.Parameters), "result_data": in.Parameters})
	}
	behavior, _ := in.ExecutorConfig["behavior"].(string)
	switch behavior {
	case "echo":
		return echo()
	case "stream":
		for i := 1; i <= executortest.StreamEvents; i++ {
			fmt.Fprintf(os.Stderr, "event %d\n", i)
		}
		return echo()
	case "fail":
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, executortest.FailMessage)
		return 3
	case "block":
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d\n", os.Getpid(), syscall.Getpgrp())
		proctest.SleepForever()
	case "dump": // the invocation as it was read, the environment it needs, and the raw stdin
		wd, _ := os.Getwd()
		env := map[string]string{}
		for _, k := range []string{orchestrator.EnvSessionID, orchestrator.EnvRunID, orchestrator.EnvAPIURL, orchestrator.EnvAPIToken, EnvResultFile} {
			env[k] = os.Getenv(k)
		}
		var asMap map[string]any
		_ = json.Unmarshal(raw, &asMap)
		return writeResult(map[string]any{"result_text": "dumped", "result_data": map[string]any{
			"input": asMap, "env": env, "wd": wd, "args": os.Args,
		}})
	case "none": // exit 0, no result file: the result is in the events
		fmt.Println("some stdout that is only logged")
		return 0
	case "badfile":
		_ = os.WriteFile(os.Getenv(EnvResultFile), []byte("not json"), 0o600)
		return 0
	case "fileerror":
		return writeResult(map[string]any{"result_text": "partial", "error": "it broke"})
	case "exitfile":
		fmt.Fprintln(os.Stderr, "exiting badly")
		writeResult(map[string]any{"result_text": "partial"})
		return 4
	case "session":
		return writeResult(map[string]any{"result_text": "ok", "executor_session_id": "exec-" + in.SessionID})
	case "data":
		return writeResult(map[string]any{"result_text": "x", "result_data": in.ExecutorConfig["data"]})
	}
	fmt.Fprintln(os.Stderr, "helper: unknown behavior", behavior)
	return 64
}

func newExecutor(t testing.TB) *Executor {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{
		Path:      self,
		Args:      []string{"-test.run=^TestHelperProcess$", "--"},
		StopGrace: 500 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

func invocation(behavior string, params string) *orchestrator.Invocation {
	return &orchestrator.Invocation{
		Mode:       orchestrator.RunTypeStart,
		SessionID:  ids.New(ids.Session),
		RunID:      ids.New(ids.Run),
		AgentName:  "helper",
		Blueprint:  &orchestrator.Blueprint{Name: "helper", Type: orchestrator.AgentTypeAgent, ExecutorConfig: map[string]any{"behavior": behavior}},
		Parameters: json.RawMessage(params),
		Env:        proctest.HelperEnvironment(helperEnv),
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	executortest.Run(t, executortest.Harness{
		NewExecutor: func(t *testing.T) orchestrator.Executor { return newExecutor(t) },
		Invocation: func(t *testing.T, b executortest.Behavior, params json.RawMessage) *orchestrator.Invocation {
			return invocation(string(b), string(params))
		},
		ResultType: "agent",
		Stopped: func(t *testing.T, _ *orchestrator.Invocation, events []orchestrator.Event) {
			if len(events) == 0 {
				return // cancelled before the start: nothing was started
			}
			proctest.RequireGroupGone(t, readyPgid(t, events))
		},
	})
}

func readyPgid(t *testing.T, events []orchestrator.Event) int {
	t.Helper()
	for _, ev := range events {
		var d struct{ Line string }
		_ = ev.DecodeData(&d)
		var pid, pgid int
		if _, err := fmt.Sscanf(d.Line, "ready pid=%d pgid=%d", &pid, &pgid); err == nil {
			return pgid
		}
	}
	t.Fatalf("no ready line among %v", events)
	return 0
}

func mustExecute(t *testing.T, inv *orchestrator.Invocation) (*orchestrator.Result, *eventtest.Recorder) {
	t.Helper()
	rec := &eventtest.Recorder{}
	res, err := newExecutor(t).Execute(t.Context(), inv, rec)
	if err != nil {
		t.Fatalf("Execute(%v) error = %v", inv.Blueprint.ExecutorConfig, err)
	}
	return res, rec
}

// The program reads the whole invocation on stdin and gets its environment.
func TestInputAndEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ex := newExecutor(t)
	ex.cfg.Config = map[string]any{"behavior": "echo", "model": "runner-default", "level": 1}
	inv := invocation("dump", `{"prompt":"hello","files":["a.go"]}`)
	inv.Mode = orchestrator.RunTypeResume
	inv.ExecutorSessionID = "exec-123"
	inv.ProjectDir = dir
	inv.OutputSchema = json.RawMessage(`{"type":"object"}`)
	inv.Metadata = json.RawMessage(`{"owner":"me"}`)
	inv.Blueprint.Command = "tool --x"
	inv.Blueprint.SystemPrompt = "be brief"
	inv.Blueprint.ExecutorConfig["model"] = "blueprint-model"
	inv.Env[orchestrator.EnvSessionID] = inv.SessionID
	inv.Env[orchestrator.EnvRunID] = inv.RunID
	inv.Env[orchestrator.EnvAPIURL] = "http://127.0.0.1:9/"
	inv.Env[orchestrator.EnvAPIToken] = "tok"
	res, err := ex.Execute(t.Context(), inv, nil)
	if err != nil || res == nil || res.Failed() {
		t.Fatalf("Execute = %+v, %v; want success", res, err)
	}
	var got struct {
		Input map[string]any    `json:"input"`
		Env   map[string]string `json:"env"`
		WD    string            `json:"wd"`
	}
	if err := json.Unmarshal(res.ResultData, &got); err != nil {
		t.Fatal(err)
	}
	in := got.Input
	wantScalars := map[string]any{
		"schema_version": "2.2", "mode": "resume", "session_id": inv.SessionID, "run_id": inv.RunID,
		"agent_name": "helper", "prompt": "hello", "command": "tool --x", "project_dir": dir,
		"executor_session_id": "exec-123", "gateway_url": "http://127.0.0.1:9/", "result_file": got.Env[EnvResultFile],
	}
	for k, want := range wantScalars {
		if in[k] != want {
			t.Errorf("input[%q] = %v, want %v", k, in[k], want)
		}
	}
	for k, want := range map[string]string{
		"parameters":      `{"prompt":"hello","files":["a.go"]}`,
		"output_schema":   `{"type":"object"}`,
		"metadata":        `{"owner":"me"}`,
		"executor_config": `{"behavior":"dump","level":1,"model":"blueprint-model"}`,
	} {
		if !jsonEqual(t, in[k], want) {
			t.Errorf("input[%q] = %v, want %s", k, in[k], want)
		}
	}
	bp, _ := in["agent_blueprint"].(map[string]any)
	if bp["name"] != "helper" || bp["system_prompt"] != "be brief" {
		t.Errorf("agent_blueprint = %v, want the blueprint", bp)
	}
	if got.Env[orchestrator.EnvAPIToken] != "tok" || got.Env[orchestrator.EnvSessionID] != inv.SessionID || got.Env[EnvResultFile] == "" {
		t.Errorf("env = %v", got.Env)
	}
	if got.WD != dir {
		t.Errorf("working directory = %q, want %q", got.WD, dir)
	}
	if _, err := os.Stat(got.Env[EnvResultFile]); !os.IsNotExist(err) {
		t.Errorf("result file %s still exists after the run (err %v)", got.Env[EnvResultFile], err)
	}

	t.Run("start without parameters", func(t *testing.T) {
		res, _ := mustExecute(t, invocation("dump", ``))
		var got struct{ Input map[string]any }
		_ = json.Unmarshal(res.ResultData, &got)
		if got.Input["mode"] != "start" || !jsonEqual(t, got.Input["parameters"], `{}`) {
			t.Errorf("input = %v; want mode start, parameters {}", got.Input)
		}
		for _, k := range []string{"prompt", "executor_session_id", "output_schema", "gateway_url", "metadata", "command"} {
			if _, ok := got.Input[k]; ok {
				t.Errorf("input has %q = %v, want it omitted", k, got.Input[k])
			}
		}
	})
}

func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(got, w)
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("no result file: nil result, the coordinator derives it", func(t *testing.T) {
		t.Parallel()
		res, rec := mustExecute(t, invocation("none", `{}`))
		if res != nil {
			t.Errorf("Execute = %+v, want a nil Result", res)
		}
		if evs := rec.All(); len(evs) != 0 {
			t.Errorf("events = %v, want none (stdout is not an event)", evs)
		}
	})
	t.Run("invalid result file fails", func(t *testing.T) {
		t.Parallel()
		res, _ := mustExecute(t, invocation("badfile", `{}`))
		if res == nil || !strings.HasPrefix(res.Error, "result file: ") || *res.ExitCode != 0 {
			t.Errorf("Execute = %+v, want a result file failure", res)
		}
	})
	t.Run("an error in the result file fails the run", func(t *testing.T) {
		t.Parallel()
		res, _ := mustExecute(t, invocation("fileerror", `{}`))
		if res == nil || res.Error != "it broke" || res.ResultText != "partial" || !res.Failed() {
			t.Errorf("Execute = %+v, want the file's error", res)
		}
	})
	t.Run("non-zero exit keeps the result file and reports stderr", func(t *testing.T) {
		t.Parallel()
		res, _ := mustExecute(t, invocation("exitfile", `{}`))
		if res == nil || res.Error != "exiting badly" || res.ResultText != "partial" || *res.ExitCode != 4 {
			t.Errorf("Execute = %+v, want ResultText partial, Error from stderr, ExitCode 4", res)
		}
	})
	t.Run("executor session id in the result file becomes an event", func(t *testing.T) {
		t.Parallel()
		inv := invocation("session", `{}`)
		res, rec := mustExecute(t, inv)
		if res == nil || res.Failed() || res.ResultText != "ok" || res.ResultType != "agent" {
			t.Fatalf("Execute = %+v", res)
		}
		evs := rec.All()
		if len(evs) != 1 || evs[0].Type != orchestrator.EventExecutorSession || evs[0].SessionID != inv.SessionID {
			t.Fatalf("events = %v, want one executor_session event", evs)
		}
		var d struct {
			ID string `json:"executor_session_id"`
		}
		if _ = evs[0].DecodeData(&d); d.ID != "exec-"+inv.SessionID {
			t.Errorf("executor_session_id = %q", d.ID)
		}
	})
	t.Run("output schema checks the result file", func(t *testing.T) {
		t.Parallel()
		inv := invocation("data", `{}`)
		inv.Blueprint.ExecutorConfig["data"] = map[string]any{"n": "x"}
		inv.OutputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
		res, _ := mustExecute(t, inv)
		if res == nil || !strings.HasPrefix(res.Error, outputcheck.Prefix) || len(res.ValidationErrors) != 1 {
			t.Errorf("Execute = %+v, want an output_schema failure", res)
		}
	})
	t.Run("deterministic blueprint gives a deterministic result type", func(t *testing.T) {
		t.Parallel()
		inv := invocation("fail", `{}`)
		inv.Blueprint.Type = orchestrator.AgentTypeDeterministic
		res, _ := mustExecute(t, inv)
		if res == nil || res.ResultType != "deterministic" || *res.ExitCode != 3 {
			t.Errorf("Execute = %+v", res)
		}
	})
}

func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	if _, err := newExecutor(t).Execute(t.Context(), &orchestrator.Invocation{}, nil); err == nil {
		t.Error("Execute without a blueprint: want an error")
	}
	inv := invocation("echo", `{}`)
	inv.OutputSchema = json.RawMessage(`{"type":"nope"}`)
	if _, err := newExecutor(t).Execute(t.Context(), inv, nil); err == nil {
		t.Error("Execute with a malformed output schema: want an error")
	}
	missing := New(Config{Path: "ao-no-such-executor-4f1c"})
	if _, err := missing.Execute(t.Context(), invocation("echo", `{}`), nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Execute with a missing program: error = %v, want not found", err)
	}
}

// shellExecutor runs script with /bin/sh for every run, optionally as another user.
func shellExecutor(t *testing.T, script string, u *isolation.User) *Executor {
	t.Helper()
	return New(Config{
		Path:      "/bin/sh",
		Args:      []string{"-c", script},
		Isolation: isolation.Config{User: u},
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

// The result file is whatever the program put at its path: a symbolic link is refused, never followed
// (it could point the runner at any file it can read), and so is a FIFO (which would block it).
func TestResultFileNotFollowed(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"result_text":"the runner's secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{`ln -s ` + secret + ` "$AGENT_RESULT_FILE"`, `mkfifo "$AGENT_RESULT_FILE"`} {
		inv := invocation("", `{}`)
		inv.ProjectDir = "/"
		res, err := shellExecutor(t, script, nil).Execute(t.Context(), inv, nil)
		if err != nil || res == nil || !strings.Contains(res.Error, "result file") || strings.Contains(res.ResultText, "secret") {
			t.Errorf("%s: Execute = %+v, %v; want a failed result that reads nothing", script, res, err)
		}
	}
}

// With Isolation.User the program runs as that user, who can write the result file the runner reads.
func TestRunAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("running a program as another user needs root; CI runs the tests as root")
	}
	u, err := isolation.LookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	inv := invocation("", `{}`)
	inv.ProjectDir = "/"
	res, err := shellExecutor(t, `printf '{"result_text":"%s"}' "$(id -u)" > "$AGENT_RESULT_FILE"`, u).Execute(t.Context(), inv, nil)
	if err != nil || res == nil || res.Failed() {
		t.Fatalf("Execute = %+v, %v; want success", res, err)
	}
	if want := strconv.Itoa(int(u.UID)); res.ResultText != want {
		t.Errorf("result_text %q, want the uid of %s, %s", res.ResultText, u, want)
	}
}
