//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// The Claude Code executor through the real binaries (coordinator, runner), with e2e/internal/fakeclaude
// standing in for claude: MCP servers still pending fail the run unless optional, only the run's servers
// load (--strict-mcp-config) and each is allowed, the model API's failures carry their error code (and a
// usage limit its reset time), the CLI's retries are progress events, and each API message's usage is one
// usage event.
func TestClaudeCodeExecutor(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	ai := c.startClaudeRunner(co, "")
	admin := co.admin()
	web := map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp?key=secret"}}
	for _, a := range []map[string]any{
		{"name": "with-web", "type": "agent", "mcp_servers": web},
		{"name": "web-optional", "type": "agent", "mcp_servers": web, "executor_config": map[string]any{"optional_mcp_servers": "web"}},
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
	eventsOfType := func(t *testing.T, sessionID, typ string) []map[string]any {
		var out []map[string]any
		for _, e := range admin.with(t).events(sessionID) {
			if e.Type == typ {
				var m map[string]any
				_ = json.Unmarshal(e.Data, &m)
				out = append(out, m)
			}
		}
		return out
	}

	t.Run("a pending MCP server fails the run", func(t *testing.T) {
		s, r := run(t, "with-web", map[string]any{"mcp_status": map[string]string{"web": "pending"}})
		if r.Status != "failed" || !strings.HasPrefix(r.Error, `MCP server "web" pending (still connecting when the session started); the agent would have run without its tools`) {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		evs := eventsOfType(t, s.SessionID, "mcp_server")
		if len(evs) != 1 || evs[0]["name"] != "web" || evs[0]["status"] != "pending" || evs[0]["optional"] != false ||
			evs[0]["server"] != "http http://127.0.0.1:9/mcp" {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("unless it is optional", func(t *testing.T) {
		s, r := run(t, "web-optional", map[string]any{"mcp_status": map[string]string{"web": "pending"}})
		if r.Status != "completed" {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		if evs := eventsOfType(t, s.SessionID, "mcp_server"); len(evs) != 1 || evs[0]["optional"] != true {
			t.Errorf("mcp_server events: %s", mustJSON(t, evs))
		}
	})
	t.Run("only the run's servers, each allowed, connected before the first request", func(t *testing.T) {
		s, r := run(t, "with-web", map[string]any{})
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
	t.Run("a 529 after the CLI's retry", func(t *testing.T) {
		s, r := run(t, "plain", map[string]any{"api_error": 529})
		if r.Status != "failed" || r.Result == nil || r.Result.ErrorCode != "api_overloaded" || !strings.HasPrefix(r.Error, "API Error: 529 Overloaded") {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		var sess orchestrator.Session
		admin.with(t).json("GET", "/sessions/"+s.SessionID, nil, http.StatusOK, &sess)
		if sess.ErrorCode != "api_overloaded" {
			t.Errorf("session error_code %q, want api_overloaded", sess.ErrorCode)
		}
		var retries []string
		for _, p := range eventsOfType(t, s.SessionID, orchestrator.EventProgress) {
			if msg, _ := p["message"].(string); strings.HasPrefix(msg, "Claude API retry") {
				retries = append(retries, msg)
			}
		}
		if len(retries) != 1 || retries[0] != "Claude API retry 1/1 in 0.6 s: 529 overloaded" {
			t.Errorf("retry progress events %q", retries)
		}
	})
	t.Run("a usage limit and its reset", func(t *testing.T) {
		reset := time.Now().Add(3 * time.Hour).Truncate(time.Second).UTC()
		_, r := run(t, "plain", map[string]any{"api_error": "usage_limit", "usage_limit_reset": reset.Format(time.RFC3339)})
		if r.Status != "failed" || r.Result == nil || r.Result.ErrorCode != "usage_limit" || r.Result.RetryAt == nil || !r.Result.RetryAt.Equal(reset) {
			t.Fatalf("result: %s, want usage_limit with retry_at %s", mustJSON(t, r), reset)
		}
	})
	t.Run("one usage event per API message", func(t *testing.T) {
		s, r := run(t, "plain", map[string]any{"child_agent": "plain", "child_parameters": map[string]any{"prompt": "child"}})
		if r.Status != "completed" || r.Result == nil || r.Result.Usage == nil {
			t.Fatalf("result: %s", mustJSON(t, r))
		}
		// list_agent_blueprints, start_agent_session (a text and a tool_use block each: two lines of one
		// message), then the answer: three messages.
		evs := eventsOfType(t, s.SessionID, orchestrator.EventUsage)
		var input int64
		for _, e := range evs {
			if e["model"] != "fake" || e["input_tokens"] != 10.0 || e["output_tokens"] != 20.0 {
				t.Errorf("usage event %v", e)
			}
			input += int64(e["input_tokens"].(float64))
		}
		if len(evs) != 3 || r.Result.Usage.InputTokens != 30 || input != r.Result.Usage.InputTokens {
			t.Errorf("%d usage events (%d input tokens), result usage %s: want 3, adding up to the result's", len(evs), input, mustJSON(t, r.Result.Usage))
		}
	})
}
