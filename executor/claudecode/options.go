package claudecode

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentorchestrator/orchestrator"
)

// options are the Claude Code settings a blueprint's executor_config chooses (see the package
// documentation).
type options struct {
	model           string
	permissionMode  string
	maxTurns        int
	allowedTools    []string
	disallowedTools []string
	replaceSystem   bool
	// optionalMCP names the blueprint's MCP servers a run may do without.
	optionalMCP []string
	// failOnDenial fails a run whose agent was refused a tool use.
	failOnDenial bool
	// projectMCP adds the servers of the project's .mcp.json to the run's.
	projectMCP bool
}

func parseOptions(cfg map[string]any) (*options, error) {
	o := &options{}
	var problems []string
	get := func(keys ...string) (any, string, bool) {
		for _, k := range keys {
			if v, ok := cfg[k]; ok && v != nil {
				return v, k, true
			}
		}
		return nil, "", false
	}
	str := func(dst *string, keys ...string) {
		if v, k, ok := get(keys...); ok {
			s, isStr := v.(string)
			if !isStr {
				problems = append(problems, k+" must be a string")
				return
			}
			*dst = s
		}
	}
	list := func(dst *[]string, keys ...string) {
		v, k, ok := get(keys...)
		if !ok {
			return
		}
		switch x := v.(type) {
		case string:
			for _, s := range strings.Split(x, ",") {
				if s = strings.TrimSpace(s); s != "" {
					*dst = append(*dst, s)
				}
			}
		case []string:
			*dst = append(*dst, x...)
		case []any:
			for _, e := range x {
				s, isStr := e.(string)
				if !isStr {
					problems = append(problems, k+" must be a list of strings")
					return
				}
				*dst = append(*dst, s)
			}
		default:
			problems = append(problems, k+" must be a list of strings or a comma-separated string")
		}
	}
	str(&o.model, "model")
	str(&o.permissionMode, "permission_mode", "permissionMode")
	list(&o.allowedTools, "allowed_tools", "allowedTools")
	list(&o.disallowedTools, "disallowed_tools", "disallowedTools")
	list(&o.optionalMCP, "optional_mcp_servers", "optionalMcpServers")
	boolean := func(dst *bool, keys ...string) {
		if v, k, ok := get(keys...); ok {
			b, isBool := v.(bool)
			if !isBool {
				problems = append(problems, k+" must be true or false")
			}
			*dst = b
		}
	}
	boolean(&o.failOnDenial, "fail_on_permission_denial", "failOnPermissionDenial")
	boolean(&o.projectMCP, "project_mcp_servers", "projectMcpServers")
	if v, k, ok := get("max_turns", "maxTurns"); ok {
		n, isNum := number(v)
		if !isNum || n < 1 || n != math.Trunc(n) || n > math.MaxInt32 {
			problems = append(problems, k+" must be a positive integer")
		} else {
			o.maxTurns = int(n)
		}
	}
	var mode string
	str(&mode, "system_prompt_mode")
	switch mode {
	case "", "append":
	case "replace":
		o.replaceSystem = true
	default:
		problems = append(problems, `system_prompt_mode must be "append" or "replace"`)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_executor_config", "executor_config: %s", strings.Join(problems, "; "))
	}
	return o, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// args returns the flags o and the blueprint's system prompt add to the command line.
func (o *options) args(systemPrompt string) []string {
	var args []string
	if o.model != "" {
		args = append(args, "--model", o.model)
	}
	if o.permissionMode != "" {
		args = append(args, "--permission-mode", o.permissionMode)
	}
	if o.maxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(o.maxTurns))
	}
	// --allowedTools and --disallowedTools take several values; each tool is one argument, and the next
	// flag ends the list.
	if len(o.allowedTools) > 0 {
		args = append(append(args, "--allowedTools"), o.allowedTools...)
	}
	if len(o.disallowedTools) > 0 {
		args = append(append(args, "--disallowedTools"), o.disallowedTools...)
	}
	if systemPrompt = strings.TrimSpace(systemPrompt); systemPrompt != "" {
		flag := "--append-system-prompt"
		if o.replaceSystem {
			flag = "--system-prompt"
		}
		// One argument with "=", so a prompt that starts with "-" is not taken for a flag.
		args = append(args, flag+"="+systemPrompt)
	}
	return args
}

// writeMCPConfig writes the MCP configuration of a run — its servers and, when url is set, the
// orchestrator's own — to a file in dir (mode 0600: it may hold the run's token, which must not appear on
// a command line other users can read) and returns its path, or "" when there are no servers. Each entry
// gets "alwaysLoad": true unless it says otherwise: with it, Claude Code 2.1.197 waits for the server to
// connect (up to about 5 s) before the first request rather than start without its tools.
func writeMCPConfig(dir string, servers map[string]json.RawMessage, name, url string, inv *orchestrator.Invocation) (string, error) {
	all := make(map[string]json.RawMessage, len(servers)+1)
	for k, v := range servers {
		all[k] = alwaysLoad(v)
	}
	if url != "" {
		headers := map[string]string{"X-Agent-Session-Id": inv.SessionID}
		if tok := inv.Env[orchestrator.EnvAPIToken]; tok != "" {
			headers["Authorization"] = "Bearer " + tok
		}
		entry, err := json.Marshal(map[string]any{"type": "http", "url": url, "headers": headers, "alwaysLoad": true})
		if err != nil {
			return "", err
		}
		all[name] = entry
	}
	if len(all) == 0 {
		return "", nil
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": all}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("mcp_servers: %w", err)
	}
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// alwaysLoad returns a server entry with "alwaysLoad": true added, unless it sets alwaysLoad itself or is
// not a JSON object (Claude Code then reports it as it is).
func alwaysLoad(entry json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(entry, &m) != nil || m == nil {
		return entry
	}
	if _, set := m["alwaysLoad"]; set {
		return entry
	}
	m["alwaysLoad"] = json.RawMessage("true")
	out, err := json.Marshal(m)
	if err != nil {
		return entry
	}
	return out
}

// cliEnv is what the executor adds to the CLI's environment. MCP_CONNECTION_NONBLOCKING=0 makes Claude
// Code connect the MCP servers before the first request (2.1.197 otherwise starts at once, with the
// servers still pending and their tools missing); 2.1.332 waits either way.
var cliEnv = map[string]string{"MCP_CONNECTION_NONBLOCKING": "0"}

// projectMCPFile is the project's MCP configuration, which Claude Code reads in the project directory.
const projectMCPFile = ".mcp.json"

// runServers returns the MCP servers of a run: the blueprint's and, with project_mcp_servers, those of the
// project's .mcp.json (the blueprint's win a name both use). A .mcp.json that cannot be read as one is an
// error: the blueprint asked for its servers.
func runServers(inv *orchestrator.Invocation, o *options) (map[string]json.RawMessage, error) {
	servers := make(map[string]json.RawMessage, len(inv.Blueprint.MCPServers))
	if o.projectMCP && inv.ProjectDir != "" {
		path := filepath.Join(inv.ProjectDir, projectMCPFile)
		data, err := os.ReadFile(path)
		switch {
		case os.IsNotExist(err):
		case err != nil:
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_project_mcp_servers", "project_mcp_servers: %v", err)
		default:
			var cfg struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal(data, &cfg); err != nil {
				return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_project_mcp_servers",
					"project_mcp_servers: %s is not an MCP configuration ({\"mcpServers\": {…}}): %v", path, err)
			}
			for name, entry := range cfg.MCPServers {
				servers[name] = entry
			}
		}
	}
	for name, entry := range inv.Blueprint.MCPServers {
		servers[name] = entry
	}
	return servers, nil
}

// allowServers adds mcp__<name> to allowed for each server whose tools allowed does not already decide
// (by the server's name, or by one of its tools, mcp__<name>__<tool>): headless Claude Code refuses the
// tools of a server it was given unless they are allowed.
func allowServers(allowed []string, servers map[string]json.RawMessage) []string {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rule := "mcp__" + name
		decided := false
		for _, a := range allowed {
			if a == rule || strings.HasPrefix(a, rule+"__") {
				decided = true
				break
			}
		}
		if !decided {
			allowed = append(allowed, rule)
		}
	}
	return allowed
}

// describeServer says where a server entry points, for a person reading why it did not connect: its
// type with the URL (without its query, which may hold a secret) or the command (without arguments or
// environment). "" for an entry it cannot read.
func describeServer(entry json.RawMessage) string {
	var e struct {
		Type    string `json:"type"`
		URL     string `json:"url"`
		Command string `json:"command"`
	}
	if len(entry) == 0 || json.Unmarshal(entry, &e) != nil {
		return ""
	}
	if e.URL != "" {
		u := e.URL
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		if at := strings.LastIndex(u, "@"); at >= 0 {
			if i := strings.Index(u, "://"); i >= 0 && i < at {
				u = u[:i+3] + u[at+1:] // no user:password
			}
		}
		typ := e.Type
		if typ == "" {
			typ = "http"
		}
		return typ + " " + u
	}
	if e.Command != "" {
		return "stdio " + e.Command
	}
	return ""
}
