//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// The Claude Code cases an agent author meets on a bad day, on the real binaries with
// e2e/internal/fakeclaude standing in for claude: a blueprint's MCP server that failed to start or is still
// pending (fatal, unless the blueprint marks it optional), only the run's servers loaded
// (--strict-mcp-config) and each allowed, a tool use that was denied (recorded, fatal on request), the
// usage Claude Code reports (kept on the run, served by GET /runs/{id} and GET /runs?session_id=, and a
// usage event per API message), the model API's failures with their error codes (a usage limit with its
// reset time) and the CLI's retries as progress events, and bypassPermissions on a runner that runs claude
// as root.
func TestClaudeCodeCases(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	ai := c.startClaudeRunner(co, "")
	admin := co.admin()
	web := map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp?key=secret"}}
	for _, a := range []map[string]any{
		{"name": "researcher", "type": "agent", "mcp_servers": web},
		{"name": "tolerant", "type": "agent", "mcp_servers": web, "executor_config": map[string]any{"optional_mcp_servers": []string{"web"}}},
		{"name": "strict", "type": "agent", "executor_config": map[string]any{"fail_on_permission_denial": true}},
		{"name": "bypasser", "type": "agent", "executor_config": map[string]any{"permission_mode": "bypassPermissions"}},
		{"name": "plain", "type": "agent"},
	} {
		admin.json("POST", "/agents", a, http.StatusCreated, nil)
	}
	run := func(t *testing.T, agent string, params map[string]any) (started, sessionResult) {
		t.Helper()
		params["prompt"] = "go"
		s := admin.with(t).startRun(map[string]any{"agent_name": agent, "parameters": params})
		return s, admin.with(t).result(s.SessionID)
	}
	eventsOfType := func(t *testing.T, sessionID, typ string) []*orchestrator.Event {
		var out []*orchestrator.Event
		for _, e := range admin.with(t).events(sessionID) {
			if e.Type == typ {
				out = append(out, e)
			}
		}
		return out
	}
	eventData := func(t *testing.T, sessionID, typ string) []map[string]any {
		var out []map[string]any
		for _, e := range eventsOfType(t, sessionID, typ) {
			var m map[string]any
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}

	t.Run("malformed mcp_servers are refused", func(t *testing.T) {
		body := admin.with(t).json("POST", "/agents", map[string]any{"name": "broken", "type": "agent",
			"mcp_servers": map[string]any{"broken": map[string]any{"type": "http"}, "alsobroken": map[string]any{"command": 5}}}, http.StatusBadRequest, nil)
		if !strings.Contains(string(body), `\"alsobroken\": command must be a string; \"broken\": url is required`) {
			t.Errorf("POST /agents: %s", body)
		}
	})
	t.Run("a failed MCP server fails the run", func(t *testing.T) {
		s, r := run(t, "researcher", map[string]any{"mcp_status": map[string]string{"web": "failed"}})
		if r.Status != "failed" || !strings.HasPrefix(r.Error, `MCP server "web" failed; the agent would have run without its tools`) {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		evs := eventsOfType(t, s.SessionID, "mcp_server")
		if len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"status":"failed"`) || !strings.Contains(string(evs[0].Data), `"optional":false`) {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("an optional failed MCP server", func(t *testing.T) {
		s, r := run(t, "tolerant", map[string]any{"mcp_status": map[string]string{"web": "failed"}})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		if evs := eventsOfType(t, s.SessionID, "mcp_server"); len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"optional":true`) {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("a denied tool", func(t *testing.T) {
		s, r := run(t, "researcher", map[string]any{"deny_tools": []string{"Bash"}})
		if r.Status != "completed" || r.Result == nil || len(r.Result.PermissionDenials) != 1 || r.Result.PermissionDenials[0].ToolName != "Bash" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		if evs := eventsOfType(t, s.SessionID, "permission_denied"); len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"tool_name":"Bash"`) {
			t.Errorf("permission_denied events: %s", mustJSON(t, evs))
		}
		_, r = run(t, "strict", map[string]any{"deny_tools": []string{"Bash"}})
		if r.Status != "failed" || !strings.Contains(r.Error, "refused 1 tool use(s) (Bash)") {
			t.Errorf("with fail_on_permission_denial: %s", mustJSON(t, r))
		}
	})
	t.Run("usage is kept on the run", func(t *testing.T) {
		s, r := run(t, "researcher", map[string]any{})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		want := &orchestrator.Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 300, CacheCreationInputTokens: 40, CostUSD: 0.0012,
			Models: map[string]*orchestrator.ModelUsage{"fake": {InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 300, CacheCreationInputTokens: 40, CostUSD: 0.0012}}}
		var got orchestrator.Run
		admin.with(t).json("GET", "/runs/"+s.RunID, nil, http.StatusOK, &got)
		if mustJSON(t, got.Usage) != mustJSON(t, want) {
			t.Errorf("GET /runs/%s usage = %s, want %s", s.RunID, mustJSON(t, got.Usage), mustJSON(t, want))
		}
		var list struct {
			Runs []*orchestrator.Run `json:"runs"`
		}
		admin.with(t).json("GET", "/runs?session_id="+s.SessionID, nil, http.StatusOK, &list)
		if len(list.Runs) != 1 || mustJSON(t, list.Runs[0].Usage) != mustJSON(t, want) {
			t.Errorf("GET /runs?session_id= = %s, want the run with its usage", mustJSON(t, list))
		}
		if r.Result == nil || mustJSON(t, r.Result.Usage) != mustJSON(t, want) {
			t.Errorf("the session's result usage = %s", mustJSON(t, r.Result))
		}
	})
	t.Run("a pending MCP server fails the run", func(t *testing.T) {
		s, r := run(t, "researcher", map[string]any{"mcp_status": map[string]string{"web": "pending"}})
		if r.Status != "failed" || !strings.HasPrefix(r.Error, `MCP server "web" pending (still connecting when the session started); the agent would have run without its tools`) {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		evs := eventData(t, s.SessionID, "mcp_server")
		if len(evs) != 1 || evs[0]["name"] != "web" || evs[0]["status"] != "pending" || evs[0]["optional"] != false ||
			evs[0]["server"] != "http http://127.0.0.1:9/mcp" {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("unless it is optional", func(t *testing.T) {
		s, r := run(t, "tolerant", map[string]any{"mcp_status": map[string]string{"web": "pending"}})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		if evs := eventData(t, s.SessionID, "mcp_server"); len(evs) != 1 || evs[0]["optional"] != true {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("only the run's servers, each allowed, connected before the first request", func(t *testing.T) {
		s, r := run(t, "researcher", map[string]any{})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		calls := ai.calls(t, s.SessionID)
		if len(calls) != 1 {
			t.Fatalf("calls: %s", mustJSON(t, calls))
		}
		args := calls[0].Args
		i := slices.Index(args, "--allowedTools")
		if !slices.Contains(args, "--strict-mcp-config") || i < 0 || !slices.Contains(args[i:], "mcp__web") || !slices.Contains(args[i:], "mcp__orchestrator") {
			t.Errorf("argv %q: want --strict-mcp-config and --allowedTools mcp__web mcp__orchestrator", args)
		}
		var cfg struct {
			Servers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(calls[0].MCPConfig, &cfg); err != nil || cfg.Servers["web"]["alwaysLoad"] != true || cfg.Servers["orchestrator"]["alwaysLoad"] != true {
			t.Errorf("--mcp-config %s: want alwaysLoad on every server", calls[0].MCPConfig)
		}
	})
	t.Run("a 529 after the CLI's retry is retried by resuming the Claude session", func(t *testing.T) {
		s := admin.with(t).startRun(map[string]any{"agent_name": "plain", "parameters": map[string]any{"prompt": "go", "api_error": 529},
			"retry": map[string]any{"max_attempts": 2, "initial_interval_seconds": 0.2}})
		r := admin.with(t).result(s.SessionID)
		if r.Status != "completed" {
			t.Fatalf("result: %s, want completed by the retry", mustJSON(t, r))
		}
		var sess orchestrator.Session
		admin.with(t).json("GET", "/sessions/"+s.SessionID, nil, http.StatusOK, &sess)
		if sess.Attempt != 2 || sess.MaxAttempts != 2 || sess.ErrorCode != "" {
			t.Errorf("session: attempt %d of %d, error_code %q; want 2 of 2, none", sess.Attempt, sess.MaxAttempts, sess.ErrorCode)
		}
		retried := eventData(t, s.SessionID, orchestrator.EventRetryScheduled)
		if len(retried) != 1 || retried[0]["reason"] != "api_overloaded" || retried[0]["attempt"] != 2.0 || retried[0]["run_id"] != s.RunID {
			t.Errorf("retry_scheduled events: %s", mustJSON(t, retried))
		}
		results := eventData(t, s.SessionID, orchestrator.EventResult)
		if len(results) != 2 || results[0]["error_code"] != "api_overloaded" || !strings.HasPrefix(results[0]["error"].(string), "API Error: 529 Overloaded") {
			t.Errorf("result events: %s, want the failed attempt's api_overloaded first", mustJSON(t, results))
		}
		calls := ai.calls(t, s.SessionID)
		if len(calls) != 2 || calls[0].ClaudeSessionID == "" || calls[1].Resume != calls[0].ClaudeSessionID {
			t.Fatalf("claude calls: %s; want the retry to --resume the first call's session", mustJSON(t, calls))
		}
		var retries []string
		for _, p := range eventData(t, s.SessionID, orchestrator.EventProgress) {
			if msg, _ := p["message"].(string); strings.HasPrefix(msg, "Claude API retry") {
				retries = append(retries, msg)
			}
		}
		if len(retries) != 1 || retries[0] != "Claude API retry 1/1 in 0.6 s: 529 overloaded" {
			t.Errorf("retry progress events %q", retries)
		}
	})
	t.Run("a usage limit parks the session until its reset", func(t *testing.T) {
		reset := time.Now().Add(3 * time.Hour).Truncate(time.Second).UTC()
		s := admin.with(t).startRun(map[string]any{"agent_name": "plain", "parameters": map[string]any{"prompt": "go", "api_error": "usage_limit", "usage_limit_reset": reset.Format(time.RFC3339)}})
		var sess orchestrator.Session
		waitFor(t, runTimeout, "the usage limit's retry", func() (bool, string) {
			admin.with(t).json("GET", "/sessions/"+s.SessionID, nil, http.StatusOK, &sess)
			return sess.Attempt == 2, mustJSON(t, sess)
		})
		if sess.Status != orchestrator.SessionPending || sess.NextAttemptAt == nil || !sess.NextAttemptAt.Equal(reset) {
			t.Fatalf("session: %s, want pending until %s", mustJSON(t, sess), reset)
		}
		retried := eventData(t, s.SessionID, orchestrator.EventRetryScheduled)
		if len(retried) != 1 || retried[0]["reason"] != "usage_limit" || retried[0]["next_attempt_at"] != reset.Format(time.RFC3339) {
			t.Errorf("retry_scheduled events: %s", mustJSON(t, retried))
		}
		results := eventData(t, s.SessionID, orchestrator.EventResult)
		if len(results) != 1 || results[0]["error_code"] != "usage_limit" || results[0]["retry_at"] != reset.Format(time.RFC3339) {
			t.Fatalf("result events: %s, want usage_limit with retry_at %s", mustJSON(t, results), reset)
		}
		admin.with(t).json("POST", "/sessions/"+s.SessionID+"/stop", nil, http.StatusOK, nil)
	})
	t.Run("one usage event per API message", func(t *testing.T) {
		s, r := run(t, "plain", map[string]any{"child_agent": "plain", "child_parameters": map[string]any{"prompt": "child"}})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		// The child's callback resumes the parent once: wait for both of its runs to end.
		var runs []*orchestrator.Run
		waitFor(t, runTimeout, "the parent's first run and its resume", func() (bool, string) {
			var list struct {
				Runs []*orchestrator.Run `json:"runs"`
			}
			admin.with(t).json("GET", "/runs?session_id="+s.SessionID, nil, http.StatusOK, &list)
			runs = list.Runs
			ended := 0
			for _, run := range runs {
				if run.Status == orchestrator.RunCompleted {
					ended++
				}
			}
			return len(runs) == 2 && ended == 2, mustJSON(t, runs)
		})
		// The first run: list_agent_blueprints and start_agent_session (a text and a tool_use block each:
		// two lines of one message), then the answer; the resume: one answer. Four messages.
		var fromRuns int64
		for _, run := range runs {
			if run.Usage == nil {
				t.Fatalf("a run without usage: %s", mustJSON(t, run))
			}
			fromRuns += run.Usage.InputTokens
		}
		evs := eventData(t, s.SessionID, orchestrator.EventUsage)
		var input int64
		for _, e := range evs {
			if e["model"] != "fake" || e["input_tokens"] != 10.0 || e["output_tokens"] != 20.0 {
				t.Errorf("usage event %v", e)
			}
			input += int64(e["input_tokens"].(float64))
		}
		if len(evs) != 4 || fromRuns != 40 || input != fromRuns {
			t.Errorf("%d usage events (%d input tokens), the runs' usage %d input tokens: want 4, adding up to the runs'", len(evs), input, fromRuns)
		}
	})
	t.Run("bypassPermissions as root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the runner does not run as root")
		}
		_, r := run(t, "bypasser", map[string]any{})
		if r.Status != "failed" || !strings.Contains(r.Error, "Claude Code refuses to bypass permissions as root") || !strings.Contains(r.Error, "IS_SANDBOX=1") {
			t.Errorf("result: %s", mustJSON(t, r))
		}
	})
}
