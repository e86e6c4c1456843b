//go:build linux

package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	executortest.Run(t, executortest.Harness{
		NewExecutor: func(t *testing.T) orchestrator.Executor { return newFake(t, Config{}).ex },
		Invocation: func(t *testing.T, b executortest.Behavior, params json.RawMessage) *orchestrator.Invocation {
			f := &fake{dir: t.TempDir()} // each run records in its own directory
			return f.invocation(string(b), string(params))
		},
		ResultType: ResultType,
		Stopped: func(t *testing.T, inv *orchestrator.Invocation, events []orchestrator.Event) {
			if len(events) == 0 {
				return // cancelled before the start: nothing was started
			}
			pid := (&fake{dir: inv.Env[dirEnv]}).pid()
			if pid == 0 {
				t.Fatal("the blocking stand-in recorded no pid")
			}
			proctest.RequireGroupGone(t, pid) // it led its own group
		},
	})
}

type recorder struct {
	mu     sync.Mutex
	events []orchestrator.Event
}

func (r *recorder) Emit(_ context.Context, evs ...orchestrator.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, evs...)
	return nil
}

func (r *recorder) all() []orchestrator.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]orchestrator.Event(nil), r.events...)
}

func (r *recorder) types() []string {
	var out []string
	for _, ev := range r.all() {
		out = append(out, ev.Type)
	}
	return out
}

func (r *recorder) executorSessions() []string {
	var out []string
	for _, ev := range r.all() {
		if ev.Type == orchestrator.EventExecutorSession {
			var d struct {
				ID string `json:"executor_session_id"`
			}
			_ = ev.DecodeData(&d)
			out = append(out, d.ID)
		}
	}
	return out
}

func mustExecute(t *testing.T, f *fake, inv *orchestrator.Invocation) (*orchestrator.Result, *recorder) {
	t.Helper()
	rec := &recorder{}
	res, err := f.ex.Execute(t.Context(), inv, rec)
	if err != nil {
		t.Fatalf("Execute error = %v", err)
	}
	if res == nil {
		t.Fatal("Execute returned a nil Result")
	}
	return res, rec
}

// The command line, the prompt on stdin, the working directory, the environment and the MCP
// configuration the CLI gets.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{MCPServerURL: func(inv *orchestrator.Invocation) string { return "http://127.0.0.1:1/mcp" }})
	project := t.TempDir()
	inv := f.invocation("echo", `{"prompt":"Review security implications","files":["src/auth/*.ts"],"severity_threshold":"error"}`)
	inv.ProjectDir = project
	inv.Env[orchestrator.EnvSessionID] = inv.SessionID
	inv.Env[orchestrator.EnvAPIToken] = "run-token"
	inv.Blueprint.SystemPrompt = "-You review code."
	inv.Blueprint.ExecutorConfig = map[string]any{
		"model": "sonnet", "permission_mode": "acceptEdits", "max_turns": float64(7),
		"allowed_tools": []any{"Read", "Bash(git log:*)"}, "disallowedTools": "WebFetch, WebSearch", "other_executor_key": true,
	}
	inv.Blueprint.MCPServers = map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"mcp-fs","args":["/srv"]}`)}
	res, rec := mustExecute(t, f, inv)
	if res.Failed() {
		t.Fatalf("Execute failed: %+v", res)
	}
	calls := f.calls(t)
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	n := len(c.Args)
	mcpFile := c.Args[n-1]
	want := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--model", "sonnet", "--permission-mode", "acceptEdits", "--max-turns", "7",
		"--allowedTools", "Read", "Bash(git log:*)", "mcp__fs", "mcp__orchestrator",
		"--disallowedTools", "WebFetch", "WebSearch",
		"--append-system-prompt=-You review code.", "--strict-mcp-config", "--mcp-config", mcpFile}
	if !reflect.DeepEqual(c.Args, want) {
		t.Errorf("argv\n got %q\nwant %q", c.Args, want)
	}
	wantPrompt, _ := renderPrompt(inv.Parameters, nil)
	if c.Stdin != wantPrompt {
		t.Errorf("stdin = %q, want %q", c.Stdin, wantPrompt)
	}
	if c.WD != project {
		t.Errorf("working directory = %q, want %q", c.WD, project)
	}
	if c.Env[orchestrator.EnvSessionID] != inv.SessionID || c.Env[orchestrator.EnvAPIToken] != "run-token" || c.Env["MCP_CONNECTION_NONBLOCKING"] != "0" {
		t.Errorf("env = %v, want the invocation's", c.Env)
	}
	var mcp struct {
		Servers map[string]struct {
			Type       string            `json:"type"`
			URL        string            `json:"url"`
			Headers    map[string]string `json:"headers"`
			Command    string            `json:"command"`
			AlwaysLoad bool              `json:"alwaysLoad"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(c.MCPConfig, &mcp); err != nil {
		t.Fatalf("mcp config %s: %v", c.MCPConfig, err)
	}
	o := mcp.Servers["orchestrator"]
	if o.Type != "http" || o.URL != "http://127.0.0.1:1/mcp" || o.Headers["X-Agent-Session-Id"] != inv.SessionID ||
		o.Headers["Authorization"] != "Bearer run-token" || mcp.Servers["fs"].Command != "mcp-fs" || len(mcp.Servers) != 2 ||
		!o.AlwaysLoad || !mcp.Servers["fs"].AlwaysLoad {
		t.Errorf("mcp config = %s", c.MCPConfig)
	}
	if c.MCPMode != "-rw-------" {
		t.Errorf("mcp config mode = %s, want -rw------- (it holds the run's token)", c.MCPMode)
	}
	if _, err := os.Stat(mcpFile); !os.IsNotExist(err) {
		t.Errorf("mcp config %s still exists after the run", mcpFile)
	}
	if ids := rec.executorSessions(); len(ids) != 1 || !strings.HasPrefix(ids[0], "fake-") {
		t.Errorf("executor sessions = %q, want the stand-in's one id", ids)
	}

	t.Run("no servers, no options", func(t *testing.T) {
		f := newFake(t, Config{})
		mustExecute(t, f, f.invocation("echo", `{"prompt":"hi"}`))
		if got := f.calls(t)[0].Args; !reflect.DeepEqual(got, []string{"-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"}) {
			t.Errorf("argv = %q", got)
		}
	})
	t.Run("replace the system prompt", func(t *testing.T) {
		f := newFake(t, Config{})
		inv := f.invocation("echo", `{"prompt":"hi"}`)
		inv.Blueprint.SystemPrompt = "Only this."
		inv.Blueprint.ExecutorConfig = map[string]any{"system_prompt_mode": "replace"}
		mustExecute(t, f, inv)
		if got := f.calls(t)[0].Args; !slices.Contains(got, "--system-prompt=Only this.") {
			t.Errorf("argv = %q, want --system-prompt", got)
		}
	})
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	res, rec := mustExecute(t, f, f.invocation("echo", `{"prompt":"hello there"}`))
	if res.Failed() || res.ResultType != "agent" || res.ResultText != "echo: hello there" || res.ResultData != nil || res.ExitCode != nil {
		t.Errorf("result = %+v; want the answer as text, no data, no exit code", res)
	}
	// The message's usage as it arrived, then the turn's remainder per model (its final output tokens,
	// and a model the stream showed no line of), then the result's statistics.
	if got, want := rec.types(), []string{"executor_session", "message", "usage", "usage", "usage", "progress"}; !reflect.DeepEqual(got, want) {
		t.Errorf("event types = %q, want %q", got, want)
	}
	var stats struct {
		Subtype  string  `json:"subtype"`
		NumTurns int     `json:"num_turns"`
		Duration float64 `json:"duration_ms"`
		Cost     float64 `json:"total_cost_usd"`
		Message  string  `json:"message"`
	}
	_ = rec.all()[5].DecodeData(&stats)
	if stats.Subtype != "success" || stats.NumTurns != 1 || stats.Duration != 1234 || stats.Cost != 0.0123 || !strings.Contains(stats.Message, "$0.0123") {
		t.Errorf("progress = %+v", stats)
	}
}

// The stream's assistant text, tool calls and tool results become events, in order.
func TestStreamEvents(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	inv := f.invocation("stream", `{"prompt":"list the files"}`)
	res, rec := mustExecute(t, f, inv)
	if res.Failed() {
		t.Fatal(res.Error)
	}
	// One API message with two content blocks (text, tool_use) is two lines: its usage is counted once.
	want := []string{"executor_session", "message", "usage", "tool_call", "tool_result", "message", "usage", "usage", "usage", "progress"}
	if got := rec.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("event types = %q, want %q", got, want)
	}
	var evs []orchestrator.Event
	for _, ev := range rec.all() {
		if ev.Type != orchestrator.EventUsage {
			evs = append(evs, ev)
		}
	}
	for _, tt := range []struct {
		i    int
		want string
	}{
		{1, `{"role":"assistant","content":[{"type":"text","text":"working on it"}]}`},
		{2, `{"tool_use_id":"toolu_1","name":"Bash","input":{"command":"ls"}}`},
		{3, `{"tool_use_id":"toolu_1","content":"a.go\nb.go"}`},
		{4, `{"role":"assistant","content":[{"type":"text","text":"echo: list the files"}]}`},
	} {
		var got, want any
		_ = json.Unmarshal(evs[tt.i].Data, &got)
		_ = json.Unmarshal([]byte(tt.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("event %d (%s) = %s, want %s", tt.i, evs[tt.i].Type, evs[tt.i].Data, tt.want)
		}
		if evs[tt.i].SessionID != inv.SessionID || evs[tt.i].Time.IsZero() {
			t.Errorf("event %d has session %q, time %v", tt.i, evs[tt.i].SessionID, evs[tt.i].Time)
		}
	}
	if messageText(mustField(t, evs[4], "content")) != res.ResultText {
		t.Errorf("the last message is not the result text %q", res.ResultText)
	}
}

func mustField(t *testing.T, ev orchestrator.Event, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

func TestResume(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	first, rec := mustExecute(t, f, f.invocation("echo", `{"prompt":"remember 7"}`))
	ids := rec.executorSessions()
	if first.Failed() || len(ids) != 1 {
		t.Fatalf("first run = %+v, executor sessions %q", first, ids)
	}

	inv := f.invocation("echo", `{"prompt":"what did I say?"}`)
	inv.Mode = orchestrator.RunTypeResume
	inv.ExecutorSessionID = ids[0]
	res, rec := mustExecute(t, f, inv)
	if res.Failed() || res.ResultText != "echo: what did I say?" {
		t.Errorf("resumed result = %+v", res)
	}
	calls := f.calls(t)
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	args := calls[1].Args
	if i := slices.Index(args, "--resume"); i < 0 || i+1 >= len(args) || args[i+1] != ids[0] {
		t.Errorf("resume argv = %q, want --resume %s", args, ids[0])
	}
	if calls[1].Stdin != "what did I say?" {
		t.Errorf("resume stdin = %q, want the new prompt", calls[1].Stdin)
	}
	if got := rec.executorSessions(); len(got) != 0 {
		t.Errorf("resume re-reported the unchanged executor session: %q", got)
	}

	t.Run("without an executor session id", func(t *testing.T) {
		inv := f.invocation("echo", `{"prompt":"again"}`)
		inv.Mode = orchestrator.RunTypeResume
		if _, err := f.ex.Execute(t.Context(), inv, nil); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("Execute = %v, want ErrInvalid", err)
		}
	})
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario  string
		wantError string
		wantCode  int // 0: no exit code
	}{
		{"fail", executortest.FailMessage, 1},
		{"max_turns", "Claude Code ended with error_max_turns", 0},
		{"crash", "Claude Code ended without a result: boom", 2},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{})
			res, _ := mustExecute(t, f, f.invocation(tt.scenario, `{"prompt":"x"}`))
			code := 0
			if res.ExitCode != nil {
				code = *res.ExitCode
			}
			if !res.Failed() || res.Error != tt.wantError || code != tt.wantCode || res.ResultType != "agent" {
				t.Errorf("result = %+v (exit %d); want Error %q, exit %d", res, code, tt.wantError, tt.wantCode)
			}
		})
	}
	t.Run("unusable invocations", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, Config{})
		bad := map[string]*orchestrator.Invocation{}
		bad["no blueprint"] = &orchestrator.Invocation{}
		bad["no prompt"] = f.invocation("echo", `{}`)
		bad["not an object"] = f.invocation("echo", `[1]`)
		cfg := f.invocation("echo", `{"prompt":"x"}`)
		cfg.Blueprint.ExecutorConfig = map[string]any{"max_turns": "many", "model": 3}
		bad["executor_config"] = cfg
		schema := f.invocation("echo", `{"prompt":"x"}`)
		schema.OutputSchema = json.RawMessage(`{"type":12}`)
		bad["output schema"] = schema
		for name, inv := range bad {
			if _, err := f.ex.Execute(t.Context(), inv, nil); !errors.Is(err, orchestrator.ErrInvalid) {
				t.Errorf("%s: Execute error = %v, want ErrInvalid", name, err)
			}
		}
		if _, err := New(Config{ClaudePath: "ao-no-such-claude-4f1c"}).Execute(t.Context(), f.invocation("echo", `{"prompt":"x"}`), nil); err == nil {
			t.Error("missing CLI: want an error")
		}
	})
}

// An invalid answer is sent back, in the same Claude Code session, with the validation errors; the
// corrected answer (in a code fence) is the result.
func TestOutputSchemaRetrySucceeds(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	inv := f.invocation("fix", `{"prompt":"what is six times seven?"}`)
	inv.OutputSchema = answerSchema
	res, rec := mustExecute(t, f, inv)
	if res.Failed() || string(res.ResultData) != `{"answer": "42"}` {
		t.Fatalf("result = %+v, want the corrected answer as data", res)
	}
	calls := f.calls(t)
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2 (the answer and one correction)", len(calls))
	}
	if !strings.Contains(calls[0].Stdin, "<output_schema>") || !strings.Contains(calls[0].Stdin, `"answer"`) {
		t.Errorf("first prompt lacks the schema instructions: %q", calls[0].Stdin)
	}
	ids := rec.executorSessions()
	if i := slices.Index(calls[1].Args, "--resume"); len(ids) != 1 || i < 0 || calls[1].Args[i+1] != ids[0] {
		t.Errorf("correction argv = %q, want --resume %v", calls[1].Args, ids)
	}
	if fb := calls[1].Stdin; !strings.HasPrefix(fb, "Your previous answer does not match") || !strings.Contains(fb, "- $.answer: ") {
		t.Errorf("feedback prompt = %q, want the validation errors", fb)
	}
	var retried bool
	for _, ev := range rec.all() {
		retried = retried || ev.Type == orchestrator.EventProgress && strings.Contains(string(ev.Data), "retry 1 of 2")
	}
	if !retried {
		t.Errorf("no progress event announced the retry: %q", rec.types())
	}
}

func TestOutputSchemaRetriesExhausted(t *testing.T) {
	t.Parallel()
	one := 1
	tests := []struct {
		name      string
		cfg       Config
		retries   *int
		wantCalls int
	}{
		{"default retries", Config{}, nil, 3},
		{"blueprint output_retries", Config{}, &one, 2},
		{"no retries", Config{DefaultOutputRetries: -1}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.cfg)
			inv := f.invocation("never", `{"prompt":"x"}`)
			inv.OutputSchema = answerSchema
			inv.Blueprint.OutputRetries = tt.retries
			res, _ := mustExecute(t, f, inv)
			wantPrefix := fmt.Sprintf("output does not match output_schema after %d retries: $.answer: ", tt.wantCalls-1)
			if !res.Failed() || !strings.HasPrefix(res.Error, wantPrefix) || len(res.ValidationErrors) != 1 || res.ValidationErrors[0].Path != "$.answer" {
				t.Errorf("result = %+v; want Error %q… and the validation errors", res, wantPrefix)
			}
			if res.ResultText != `{"answer": 42}` {
				t.Errorf("ResultText = %q, want the last answer", res.ResultText)
			}
			if n := len(f.calls(t)); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

// messageText is the text of a message's content: a string, or its text blocks joined by newlines.
func messageText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
