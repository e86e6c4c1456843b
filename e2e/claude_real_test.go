//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/fakeanthropic"
)

// The real Claude Code CLI, run by the real runner and coordinator binaries against a stand-in Anthropic
// API (internal/testkit/fakeanthropic) on loopback. The CLI is $ORCHESTRATOR_TEST_CLAUDE, or claude on
// PATH; .ci/run installs the pinned npm package. Without one the test skips, except under CI, where it
// fails.

// claudeTimeout bounds one session of the real CLI: it takes seconds to start on a busy machine.
const claudeTimeout = 3 * time.Minute

// realClaude returns the path of the real claude CLI, and its version.
func realClaude(t *testing.T) (string, string) {
	t.Helper()
	path := os.Getenv("ORCHESTRATOR_TEST_CLAUDE")
	if path == "" {
		p, err := exec.LookPath("claude")
		if err != nil {
			msg := "no claude CLI (set ORCHESTRATOR_TEST_CLAUDE, or put claude on PATH): the real Claude Code test needs it"
			if os.Getenv("CI") != "" {
				t.Fatal(msg + " (CI is set, so this fails rather than skips)")
			}
			t.Skip(msg)
		}
		path = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", path, err)
	}
	return path, strings.TrimSpace(string(out))
}

// startRealClaudeRunner starts examples/runner with the claude-code executor running the real CLI, which
// talks to the stand-in API at apiURL with a made-up API key, keeps its state in the test's directory,
// and retries a failed API call once rather than ten times.
func (c *cluster) startRealClaudeRunner(co *coordinator, claude, apiURL string) {
	c.t.Helper()
	dir, home := c.path("real-claude", "project"), c.path("real-claude", "home")
	for _, d := range []string{dir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.t.Fatal(err)
		}
	}
	args := []string{"-coordinator", co.url, "-executor", "claude-code", "-claude", claude, "-project-dir", dir,
		"-max-concurrent", "4", "-stop-grace", "1s", "-shutdown-grace", "10s"}
	p := c.start("real-claude-runner", "runner", args, "ORCHESTRATOR_RUNNER_TOKEN=",
		"ANTHROPIC_BASE_URL="+apiURL, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-key", "CLAUDE_CODE_OAUTH_TOKEN=",
		"HOME="+home, "CLAUDE_CODE_MAX_RETRIES=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	c.waitRunnerOnline(co, p, dir)
}

func TestRealClaudeCode(t *testing.T) {
	t.Parallel()
	claude, version := realClaude(t)
	t.Logf("claude %s (%s)", version, claude)
	api, apiURL := fakeanthropic.Start(t)
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRealClaudeRunner(co, claude, apiURL)
	admin := co.admin()
	for _, a := range []map[string]any{
		{"name": "assistant", "type": "agent", "description": "answers as the stand-in API says"},
		{"name": "with-broken-server", "type": "agent", "mcp_servers": map[string]any{"broken": map[string]any{"command": "/nonexistent/mcp-server"}}},
	} {
		admin.json("POST", "/agents", a, http.StatusCreated, nil)
	}
	defer func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(api.Requests(), "", " ")
			t.Logf("requests to the stand-in API:\n%s", b)
		}
	}()

	start := func(t *testing.T, body map[string]any) started {
		t.Helper()
		if body["agent_name"] == nil {
			body["agent_name"] = "assistant"
		}
		return admin.with(t).startRun(body)
	}
	wait := func(t *testing.T, s started) sessionResult {
		t.Helper()
		deadline := time.Now().Add(claudeTimeout)
		for {
			var run orchestrator.Run
			admin.with(t).json("GET", "/runs/"+s.RunID, nil, http.StatusOK, &run)
			if run.Status == orchestrator.RunCompleted || run.Status == orchestrator.RunFailed || run.Status == orchestrator.RunStopped {
				var r sessionResult
				admin.with(t).json("GET", "/sessions/"+s.SessionID+"/result", nil, http.StatusOK, &r)
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not end within %s: %s", s.RunID, claudeTimeout, mustJSON(t, run))
			}
			var r sessionResult
			admin.with(t).json("GET", "/sessions/"+s.SessionID+"/result?wait=5s", nil, http.StatusOK, &r)
		}
	}
	events := func(t *testing.T, sessionID, typ string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, e := range admin.with(t).events(sessionID) {
			if e.Type == typ {
				var m map[string]any
				if err := json.Unmarshal(e.Data, &m); err != nil {
					t.Fatal(err)
				}
				out = append(out, m)
			}
		}
		return out
	}
	// usageAddsUp checks that the run's usage events, one per API message and the turn's remainder per
	// model, add up to the usage kept on the run.
	usageAddsUp := func(t *testing.T, s started, evs []map[string]any) {
		t.Helper()
		var run orchestrator.Run
		admin.with(t).json("GET", "/runs/"+s.RunID, nil, http.StatusOK, &run)
		var in, out int64
		for _, e := range evs {
			m, _ := e["model"].(string)
			// The CLI prices no message: a cost is the coordinator's estimate from its price table, and says so.
			if m == "" || strings.Contains(m, "[") || e["cost_usd"] != nil && e["cost_usd"] != 0.0 && e["cost_estimated"] != true {
				t.Errorf("usage event %v: want a model name without [1m], and no cost but an estimate", e)
			}
			in += int64(e["input_tokens"].(float64))
			out += int64(e["output_tokens"].(float64))
		}
		if run.Usage == nil || run.Usage.InputTokens == 0 || in != run.Usage.InputTokens || out != run.Usage.OutputTokens {
			t.Errorf("usage events add up to %d input, %d output tokens; the run's usage is %s", in, out, mustJSON(t, run.Usage))
		}
	}

	t.Run("a turn, then a resume", func(t *testing.T) {
		t.Parallel()
		s := start(t, map[string]any{"prompt": "SCENARIO count"})
		r := wait(t, s)
		if r.Status != "completed" || r.Result == nil || r.Result.ResultText != "earlier answers: 0" {
			t.Fatalf("first turn: %s", mustJSON(t, r))
		}
		if ids := events(t, s.SessionID, orchestrator.EventExecutorSession); len(ids) != 1 {
			t.Errorf("executor_session events %v", ids)
		}
		usage := events(t, s.SessionID, orchestrator.EventUsage)
		if len(usage) < 2 || usage[0]["input_tokens"] != float64(fakeanthropic.Usage.InputTokens) || usage[0]["output_tokens"] != 1.0 {
			t.Errorf("usage events %v: want the message's as it began (output 1), then the turn's remainder", usage)
		}
		usageAddsUp(t, s, usage)

		resumed := start(t, map[string]any{"type": "resume", "session_id": s.SessionID, "prompt": "again"})
		r = wait(t, resumed)
		if r.Status != "completed" || r.Result == nil || r.Result.ResultText != "earlier answers: 1" {
			t.Fatalf("resumed turn: %s", mustJSON(t, r))
		}
		var run orchestrator.Run
		admin.with(t).json("GET", "/runs/"+resumed.RunID, nil, http.StatusOK, &run)
		if run.Usage == nil || run.Usage.InputTokens%fakeanthropic.Usage.InputTokens != 0 || run.Usage.InputTokens > 3*fakeanthropic.Usage.InputTokens {
			t.Errorf("the resumed run's usage %s: want its own calls only", mustJSON(t, run.Usage))
		}
	})
	t.Run("an MCP tool call through the gateway", func(t *testing.T) {
		t.Parallel()
		s := start(t, map[string]any{"prompt": "SCENARIO tool mcp__orchestrator__list_agent_blueprints {}"})
		r := wait(t, s)
		if r.Status != "completed" || r.Result == nil || !strings.HasPrefix(r.Result.ResultText, "tool said: [tool_result ") ||
			!strings.Contains(r.Result.ResultText, `"name":"with-broken-server"`) {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		calls, results := events(t, s.SessionID, orchestrator.EventToolCall), events(t, s.SessionID, orchestrator.EventToolResult)
		if len(calls) != 1 || calls[0]["name"] != "mcp__orchestrator__list_agent_blueprints" || len(results) != 1 || results[0]["is_error"] == true {
			t.Errorf("tool calls %v, results %v", calls, results)
		}
		usageAddsUp(t, s, events(t, s.SessionID, orchestrator.EventUsage))
	})
	t.Run("a 529", func(t *testing.T) {
		t.Parallel()
		// One attempt: this case checks how the CLI's 529 is classified, not the retry policy that would
		// otherwise run it again.
		s := start(t, map[string]any{"prompt": "SCENARIO overloaded", "retry": map[string]any{"max_attempts": 1}})
		r := wait(t, s)
		if r.Status != "failed" || r.Result == nil || r.Result.ErrorCode != "api_overloaded" || !strings.HasPrefix(r.Error, "API Error: 529") {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		var retries []string
		for _, p := range events(t, s.SessionID, orchestrator.EventProgress) {
			if msg, _ := p["message"].(string); strings.HasPrefix(msg, "Claude API retry ") {
				retries = append(retries, msg)
			}
		}
		if len(retries) != 1 || !strings.HasPrefix(retries[0], "Claude API retry 1/1 in ") || !strings.HasSuffix(retries[0], " s: 529 overloaded") {
			t.Errorf("retry progress events %q", retries)
		}
	})
	t.Run("a 529, then a resume that completes", func(t *testing.T) {
		t.Parallel()
		s := start(t, map[string]any{"prompt": "SCENARIO overloaded-turn1", "retry": map[string]any{"max_attempts": 1}})
		if r := wait(t, s); r.Status != "failed" || r.Result == nil || r.Result.ErrorCode != "api_overloaded" {
			t.Fatalf("first attempt: %s", mustJSON(t, r))
		}
		resumed := start(t, map[string]any{"type": "resume", "session_id": s.SessionID,
			"prompt": "The model API was overloaded (529); continue where you left off."})
		if r := wait(t, resumed); r.Status != "completed" || r.Result == nil || !strings.HasPrefix(r.Result.ResultText, "resumed; earlier answers: ") {
			t.Fatalf("resumed: %s", mustJSON(t, r))
		}
	})
	t.Run("a blueprint's MCP server that cannot start", func(t *testing.T) {
		t.Parallel()
		s := start(t, map[string]any{"agent_name": "with-broken-server", "prompt": "SCENARIO text"})
		r := wait(t, s)
		if r.Status != "failed" || !strings.HasPrefix(r.Error, `MCP server "broken" failed;`) {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		evs := events(t, s.SessionID, "mcp_server")
		if len(evs) != 1 || evs[0]["server"] != "stdio /nonexistent/mcp-server" {
			t.Errorf("mcp_server events %v", evs)
		}
	})
}
