//go:build linux

package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// The Claude Code cases an agent author meets on a bad day, on the real binaries with
// e2e/internal/fakeclaude standing in for claude: a blueprint's MCP server that failed to start (fatal,
// unless the blueprint marks it optional), a tool use that was denied (recorded, fatal on request), the
// usage Claude Code reports (kept on the run, served by GET /runs/{id} and GET /runs?session_id=), and
// bypassPermissions on a runner that runs claude as root.
func TestClaudeCodeCases(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startClaudeRunner(co, "")
	admin := co.admin()
	web := map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}}
	for _, a := range []map[string]any{
		{"name": "researcher", "type": "agent", "mcp_servers": web},
		{"name": "tolerant", "type": "agent", "mcp_servers": web, "executor_config": map[string]any{"optional_mcp_servers": []string{"web"}}},
		{"name": "strict", "type": "agent", "executor_config": map[string]any{"fail_on_permission_denial": true}},
		{"name": "bypasser", "type": "agent", "executor_config": map[string]any{"permission_mode": "bypassPermissions"}},
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
