//go:build linux

package claudecode

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// flagValues returns the values that follow flag in args, up to the next flag.
func flagValues(args []string, flag string) []string {
	i := slices.Index(args, flag)
	if i < 0 {
		return nil
	}
	var out []string
	for _, a := range args[i+1:] {
		if strings.HasPrefix(a, "-") {
			break
		}
		out = append(out, a)
	}
	return out
}

// Only the run's MCP servers load (--strict-mcp-config), each usable without a permission prompt
// (mcp__<name> in --allowedTools) unless allowed_tools already names the server or some of its tools.
func TestMCPServersAllowed(t *testing.T) {
	t.Parallel()
	f := newFake(t, Config{MCPServerURL: func(*orchestrator.Invocation) string { return "http://127.0.0.1:1/mcp" }})
	inv := f.invocation("echo", `{"prompt":"x"}`)
	inv.Blueprint.MCPServers = map[string]json.RawMessage{
		"web":  json.RawMessage(`{"type":"http","url":"https://mcp.example/mcp","alwaysLoad":false}`),
		"fs":   json.RawMessage(`{"command":"mcp-fs"}`),
		"docs": json.RawMessage(`{"command":"mcp-docs"}`),
	}
	inv.Blueprint.ExecutorConfig = map[string]any{"allowed_tools": []any{"Read", "mcp__fs__read_file"}}
	mustExecute(t, f, inv)
	c := f.calls(t)[0]
	if got, want := flagValues(c.Args, "--allowedTools"), []string{"Read", "mcp__fs__read_file", "mcp__docs", "mcp__web", "mcp__orchestrator"}; !slices.Equal(got, want) {
		t.Errorf("--allowedTools %q, want %q", got, want)
	}
	if !slices.Contains(c.Args, "--strict-mcp-config") {
		t.Errorf("argv %q lacks --strict-mcp-config", c.Args)
	}
	var cfg struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(c.MCPConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	// alwaysLoad everywhere, except where the blueprint set it itself.
	for name, want := range map[string]any{"web": false, "fs": true, "docs": true, "orchestrator": true} {
		if got := cfg.Servers[name]["alwaysLoad"]; got != want {
			t.Errorf("%s: alwaysLoad %v, want %v", name, got, want)
		}
	}
}

// project_mcp_servers brings the servers of the project's .mcp.json into the run's configuration (the
// blueprint's win a name both use); without it they are not loaded.
func TestProjectMCPServers(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers":{
		"tracker": {"type":"http","url":"https://tracker.example/mcp?key=secret"},
		"fs": {"command":"project-fs"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, cfg map[string]any, statuses string) (*orchestrator.Result, *recorder, call) {
		f := newFake(t, Config{MCPServerURL: func(*orchestrator.Invocation) string { return "" }})
		inv := f.invocation("echo", `{"prompt":"x"}`)
		inv.ProjectDir = project
		inv.Env[mcpStatusEnv] = statuses
		inv.Blueprint.MCPServers = map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"blueprint-fs"}`)}
		inv.Blueprint.ExecutorConfig = cfg
		res, rec := mustExecute(t, f, inv)
		return res, rec, f.calls(t)[0]
	}
	servers := func(t *testing.T, c call) map[string]map[string]any {
		var cfg struct {
			Servers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(c.MCPConfig, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg.Servers
	}

	t.Run("opted in", func(t *testing.T) {
		t.Parallel()
		res, _, c := run(t, map[string]any{"project_mcp_servers": true}, `{}`)
		s := servers(t, c)
		if res.Failed() || len(s) != 2 || s["fs"]["command"] != "blueprint-fs" || s["tracker"]["url"] != "https://tracker.example/mcp?key=secret" || s["tracker"]["alwaysLoad"] != true {
			t.Errorf("result %+v, servers %v", res, s)
		}
		if got := flagValues(c.Args, "--allowedTools"); !slices.Equal(got, []string{"mcp__fs", "mcp__tracker"}) {
			t.Errorf("--allowedTools %q", got)
		}
	})
	t.Run("a project server that fails", func(t *testing.T) {
		t.Parallel()
		res, rec, _ := run(t, map[string]any{"project_mcp_servers": true}, `{"tracker":"failed"}`)
		evs := eventsOf(t, rec, EventMCPServer)
		if !strings.HasPrefix(res.Error, `MCP server "tracker" failed;`) || len(evs) != 1 || evs[0]["server"] != "http https://tracker.example/mcp" {
			t.Errorf("result %+v, events %v (the URL's query is left out)", res, evs)
		}
	})
	t.Run("not opted in", func(t *testing.T) {
		t.Parallel()
		_, _, c := run(t, nil, `{}`)
		if s := servers(t, c); len(s) != 1 || s["fs"] == nil || !slices.Contains(c.Args, "--strict-mcp-config") {
			t.Errorf("servers %v, argv %q", s, c.Args)
		}
	})
	t.Run("a broken .mcp.json", func(t *testing.T) {
		t.Parallel()
		broken := t.TempDir()
		if err := os.WriteFile(filepath.Join(broken, ".mcp.json"), []byte(`{"mcpServers": [`), 0o644); err != nil {
			t.Fatal(err)
		}
		f := newFake(t, Config{})
		inv := f.invocation("echo", `{"prompt":"x"}`)
		inv.ProjectDir = broken
		inv.Blueprint.ExecutorConfig = map[string]any{"project_mcp_servers": true}
		_, err := f.ex.Execute(t.Context(), inv, nil)
		if !errors.Is(err, orchestrator.ErrInvalid) || orchestrator.ErrorCode(err) != "invalid_project_mcp_servers" || !strings.Contains(err.Error(), ".mcp.json") {
			t.Errorf("Execute = %v, want invalid_project_mcp_servers naming the file", err)
		}
		inv.Blueprint.ExecutorConfig = map[string]any{"project_mcp_servers": "yes"}
		if _, err := f.ex.Execute(t.Context(), inv, nil); orchestrator.ErrorCode(err) != "invalid_executor_config" {
			t.Errorf("project_mcp_servers \"yes\": %v", err)
		}
	})
}

// The run's remaining budget becomes --max-budget-usd when the installed CLI has that flag: its --help is
// read once per executor.
func TestMaxBudgetFlag(t *testing.T) {
	t.Parallel()
	budget := 0.25
	t.Run("the CLI has it", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, Config{})
		for range 2 {
			inv := f.invocation("echo", `{"prompt":"x"}`)
			inv.MaxBudgetUSD = &budget
			mustExecute(t, f, inv)
		}
		mustExecute(t, f, f.invocation("echo", `{"prompt":"x"}`)) // no budget: no flag
		calls := f.calls(t)
		for i, c := range calls[:2] {
			if got := flagValues(c.Args, "--max-budget-usd"); !slices.Equal(got, []string{"0.25"}) {
				t.Errorf("run %d: --max-budget-usd %q in %q", i, got, c.Args)
			}
		}
		if slices.Contains(calls[2].Args, "--max-budget-usd") {
			t.Errorf("a run without a budget: argv %q", calls[2].Args)
		}
		if n := f.helpCalls(); n != 1 {
			t.Errorf("--help read %d times, want once", n)
		}
	})
	t.Run("an older CLI", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, Config{})
		inv := f.invocation("echo", `{"prompt":"x"}`)
		inv.Env[helpEnv] = "Usage: claude [options]\n  --mcp-config <configs...>  Load MCP servers\n"
		inv.MaxBudgetUSD = &budget
		res, _ := mustExecute(t, f, inv)
		if res.Failed() || slices.Contains(f.calls(t)[0].Args, "--max-budget-usd") {
			t.Errorf("result %+v, argv %q", res, f.calls(t)[0].Args)
		}
	})
}
