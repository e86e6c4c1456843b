//go:build linux

package claudecode

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// eventsOf returns the data of rec's events of one type, decoded.
func eventsOf(t *testing.T, rec *recorder, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range rec.all() {
		if ev.Type == typ {
			var m map[string]any
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// The init line's MCP server statuses: a declared server that failed, is still pending, or that Claude
// Code dropped, fails the run (and stops the CLI) unless the blueprint marks it optional; one the run did
// not declare is recorded only.
func TestMCPServerStatuses(t *testing.T) {
	t.Parallel()
	servers := map[string]json.RawMessage{
		"web":  json.RawMessage(`{"type":"http","url":"https://mcp.example/mcp"}`),
		"fs":   json.RawMessage(`{"command":"mcp-fs"}`),
		"docs": json.RawMessage(`{"command":"mcp-docs"}`),
	}
	tests := []struct {
		name     string
		statuses string
		optional []any
		wantErr  string // "" for a completed run
		want     []map[string]any
	}{
		{name: "all connected", statuses: `{}`},
		{name: "a failed server fails the run", statuses: `{"web":"failed"}`,
			wantErr: `MCP server "web" failed; the agent would have run without its tools (list the server in executor_config.optional_mcp_servers to run without it)`,
			want: []map[string]any{
				{"name": "web", "status": "failed", "declared": true, "optional": false, "server": "http https://mcp.example/mcp",
					"message": `MCP server "web" failed (the run fails)`},
			}},
		{name: "a pending server fails the run", statuses: `{"docs":"pending"}`,
			wantErr: `MCP server "docs" pending (still connecting when the session started); the agent would have run without its tools`,
			want: []map[string]any{
				{"name": "docs", "status": "pending", "declared": true, "optional": false, "server": "stdio mcp-docs",
					"message": `MCP server "docs" pending (still connecting when the session started) (the run fails)`},
			}},
		{name: "an optional failed server", statuses: `{"web":"failed"}`, optional: []any{"web"},
			want: []map[string]any{
				{"name": "web", "status": "failed", "declared": true, "optional": true, "server": "http https://mcp.example/mcp",
					"message": `MCP server "web" failed (optional: the run goes on without it)`},
			}},
		{name: "an optional pending server", statuses: `{"docs":"pending","web":"failed"}`, optional: []any{"docs", "web"},
			want: []map[string]any{
				{"name": "docs", "status": "pending", "declared": true, "optional": true, "server": "stdio mcp-docs",
					"message": `MCP server "docs" pending (still connecting when the session started) (optional: the run goes on without it)`},
				{"name": "web", "status": "failed", "declared": true, "optional": true, "server": "http https://mcp.example/mcp",
					"message": `MCP server "web" failed (optional: the run goes on without it)`},
			}},
		{name: "a reason the CLI gives", statuses: `{"web":"failed: 401 Unauthorized"}`,
			wantErr: `MCP server "web" failed: 401 Unauthorized; the agent would have run without its tools`,
			want: []map[string]any{
				{"name": "web", "status": "failed", "declared": true, "optional": false, "server": "http https://mcp.example/mcp",
					"reason": "401 Unauthorized", "message": `MCP server "web" failed: 401 Unauthorized (the run fails)`},
			}},
		{name: "a dropped server fails the run", statuses: `{"fs":"drop"}`,
			wantErr: `MCP server "fs" missing: Claude Code did not list it: it dropped an entry it could not use; the agent would have run without its tools`,
			want: []map[string]any{
				{"name": "fs", "status": "missing", "declared": true, "optional": false, "server": "stdio mcp-fs",
					"reason":  "Claude Code did not list it: it dropped an entry it could not use",
					"message": `MCP server "fs" missing: Claude Code did not list it: it dropped an entry it could not use (the run fails)`},
			}},
		{name: "needs-auth is a failure", statuses: `{"docs":"needs-auth"}`, wantErr: `MCP server "docs" needs-auth;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{MCPServerURL: func(*orchestrator.Invocation) string { return "" }})
			// A run that fails plays a CLI that would go on forever: the executor must stop it.
			scenario := "stream"
			if tt.wantErr != "" {
				scenario = "block"
			}
			inv := f.invocation(scenario, `{"prompt":"look it up"}`)
			inv.Env[mcpStatusEnv] = tt.statuses
			inv.Blueprint.MCPServers = servers
			if tt.optional != nil {
				inv.Blueprint.ExecutorConfig = map[string]any{"optional_mcp_servers": tt.optional}
			}
			res, rec := mustExecute(t, f, inv)
			switch {
			case tt.wantErr == "" && res.Failed():
				t.Fatalf("result = %+v, want completed", res)
			case tt.wantErr != "" && !strings.HasPrefix(res.Error, tt.wantErr):
				t.Fatalf("result error = %q, want it to begin %q", res.Error, tt.wantErr)
			}
			if got := eventsOf(t, rec, EventMCPServer); tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mcp_server events:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
	t.Run("the orchestrator's own server", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, Config{MCPServerURL: func(*orchestrator.Invocation) string { return "http://127.0.0.1:1/mcp" }})
		inv := f.invocation("echo", `{"prompt":"x"}`)
		inv.Env[mcpStatusEnv] = `{"orchestrator":"failed"}`
		res, rec := mustExecute(t, f, inv)
		if !strings.HasPrefix(res.Error, `MCP server "orchestrator" failed;`) {
			t.Errorf("result = %+v, want failed for the orchestrator's server", res)
		}
		if evs := eventsOf(t, rec, EventMCPServer); len(evs) != 1 || evs[0]["server"] != "http http://127.0.0.1:1/mcp" {
			t.Errorf("mcp_server events %v, want the gateway's URL", evs)
		}
	})
}

// A refused tool use is an event and part of the result; it fails the run only when the blueprint asks.
func TestPermissionDenials(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		f := newFake(t, Config{})
		inv := f.invocation("deny", `{"prompt":"write /etc/x"}`)
		if fail {
			inv.Blueprint.ExecutorConfig = map[string]any{"fail_on_permission_denial": true}
		}
		res, rec := mustExecute(t, f, inv)
		want := []orchestrator.PermissionDenial{{ToolName: "Write", ToolUseID: "toolu_9", ToolInput: json.RawMessage(`{"content":"y","file_path":"/etc/x"}`)}}
		if !reflect.DeepEqual(res.PermissionDenials, want) {
			t.Errorf("fail %v: result denials = %+v, want %+v", fail, res.PermissionDenials, want)
		}
		if fail != res.Failed() || res.ResultText != "echo: write /etc/x" {
			t.Errorf("fail %v: result = %+v", fail, res)
		}
		if fail && res.Error != "Claude Code refused 1 tool use(s) (Write), and executor_config.fail_on_permission_denial is set" {
			t.Errorf("error = %q", res.Error)
		}
		evs := eventsOf(t, rec, EventPermissionDenied)
		if len(evs) != 1 || evs[0]["tool_name"] != "Write" || evs[0]["tool_use_id"] != "toolu_9" || evs[0]["tool_input"] == nil ||
			evs[0]["message"] != "Claude Code refused the agent's use of Write" {
			t.Errorf("permission_denied events = %v", evs)
		}
	}
	f := newFake(t, Config{})
	inv := f.invocation("echo", `{"prompt":"x"}`)
	inv.Blueprint.ExecutorConfig = map[string]any{"fail_on_permission_denial": "yes"}
	if _, err := f.ex.Execute(t.Context(), inv, nil); !errors.Is(err, orchestrator.ErrInvalid) || !strings.Contains(err.Error(), "fail_on_permission_denial must be true or false") {
		t.Errorf("a non-boolean fail_on_permission_denial: %v", err)
	}
}

// The result line's usage becomes the result's: per model from modelUsage (under the model's name without
// "[1m]"), totals their sum, the cost total_cost_usd; the turns of an output-schema correction add up. The
// usage events (one per message, then the turn's remainder per model) add up to it.
func TestUsage(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	res, rec := mustExecute(t, f, f.invocation("echo", `{"prompt":"x"}`))
	one := &orchestrator.Usage{InputTokens: 12, OutputTokens: 510, CacheReadInputTokens: 36391, CacheCreationInputTokens: 12871, CostUSD: 0.0123,
		Models: map[string]*orchestrator.ModelUsage{
			"claude-sonnet-4-5": {InputTokens: 9, OutputTokens: 500, CacheReadInputTokens: 36391, CacheCreationInputTokens: 12871, CostUSD: 0.0113},
			"claude-haiku-4-5":  {InputTokens: 3, OutputTokens: 10, CostUSD: 0.001},
		}}
	if !reflect.DeepEqual(res.Usage, one) {
		t.Errorf("usage = %s, want %s", mustJSON(res.Usage), mustJSON(one))
	}
	requireEventsAddUp(t, res, rec)
	progress := eventsOf(t, rec, orchestrator.EventProgress)
	if len(progress) != 1 || progress[0]["usage"] == nil {
		t.Errorf("progress events = %v, want one with the usage", progress)
	}

	// Two turns: the answer, then its correction.
	inv := f.invocation("fix", `{"prompt":"x"}`)
	inv.OutputSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	res, rec = mustExecute(t, f, inv)
	requireEventsAddUp(t, res, rec)
	if res.Failed() || res.Usage == nil || res.Usage.OutputTokens != 1020 || res.Usage.Models["claude-haiku-4-5"].InputTokens != 6 || res.Usage.CostUSD != 0.0246 {
		t.Errorf("usage of two turns = %s (result %+v)", mustJSON(res.Usage), res)
	}
}

// A CLI that is not logged in answers with an error result whose subtype is "success": the run fails and
// its progress event says so.
func TestNotLoggedIn(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{})
	res, rec := mustExecute(t, f, f.invocation("not_logged_in", `{"prompt":"x"}`))
	if !res.Failed() || res.Error != "Invalid API key · Please run /login" {
		t.Errorf("result = %+v, want failed with Claude Code's message", res)
	}
	progress := eventsOf(t, rec, orchestrator.EventProgress)
	if len(progress) != 1 {
		t.Fatalf("progress events = %v", progress)
	}
	msg, _ := progress[0]["message"].(string)
	if strings.Contains(msg, "success") || !strings.HasPrefix(msg, "Claude Code failed (error: Invalid API key · Please run /login)") {
		t.Errorf("progress message = %q, want a failure", msg)
	}
}

// bypassPermissions as root is refused before the CLI starts, with the remedy, unless IS_SANDBOX=1 or the
// CLI runs as another user.
func TestBypassPermissionsAsRoot(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		euid    int
		cfg     Config
		sandbox bool
		mode    string
		refused bool
	}{
		{name: "root", euid: 0, mode: "bypassPermissions", refused: true},
		{name: "root in a sandbox", euid: 0, mode: "bypassPermissions", sandbox: true},
		{name: "not root", euid: 1000, mode: "bypassPermissions"},
		{name: "as another user", euid: 0, mode: "bypassPermissions", cfg: Config{Isolation: isolation.Config{User: &isolation.User{Username: "agent", UID: 1000}}}},
		{name: "as root by name", euid: 1000, mode: "bypassPermissions", cfg: Config{Isolation: isolation.Config{User: &isolation.User{Username: "root", UID: 0}}}, refused: true},
		{name: "root, another mode", euid: 0, mode: "acceptEdits"},
		{name: "root, runner-wide flag", euid: 0, cfg: Config{ExtraArgs: []string{"--dangerously-skip-permissions"}}, refused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.cfg)
			f.ex.cfg.ExtraArgs = append(f.ex.cfg.ExtraArgs, tt.cfg.ExtraArgs...)
			f.ex.euid = func() int { return tt.euid }
			inv := f.invocation("echo", `{"prompt":"x"}`)
			if tt.mode != "" {
				inv.Blueprint.ExecutorConfig = map[string]any{"permission_mode": tt.mode}
			}
			if tt.sandbox {
				inv.Env["IS_SANDBOX"] = "1"
			}
			if tt.cfg.Isolation.User != nil {
				// Checked, not run: the stand-in would need the user to exist.
				err := f.ex.checkBypassAsRoot(mustOptions(t, inv.Blueprint.ExecutorConfig), nil)
				if (err != nil) != tt.refused {
					t.Errorf("check = %v, refused want %v", err, tt.refused)
				}
				return
			}
			res, err := f.ex.Execute(t.Context(), inv, nil)
			if !tt.refused {
				if err != nil || res.Failed() {
					t.Errorf("Execute = %+v, %v; want it to run", res, err)
				}
				return
			}
			if orchestrator.ErrorCode(err) != "bypass_permissions_as_root" || !strings.Contains(err.Error(), "IS_SANDBOX=1") || !strings.Contains(err.Error(), "-run-as") {
				t.Errorf("Execute error = %v, want bypass_permissions_as_root with the remedies", err)
			}
		})
	}
}

func mustOptions(t *testing.T, cfg map[string]any) *options {
	t.Helper()
	o, err := parseOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
