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
	if v, k, ok := get("fail_on_permission_denial", "failOnPermissionDenial"); ok {
		b, isBool := v.(bool)
		if !isBool {
			problems = append(problems, k+" must be true or false")
		}
		o.failOnDenial = b
	}
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

// writeMCPConfig writes the MCP configuration of a run — the blueprint's servers and, when url is set,
// the orchestrator's own — to a file in dir (mode 0600: it may hold the run's token, which must not
// appear on a command line other users can read) and returns its path, or "" when there are no servers.
func writeMCPConfig(dir string, servers map[string]json.RawMessage, name, url string, inv *orchestrator.Invocation) (string, error) {
	all := make(map[string]json.RawMessage, len(servers)+1)
	for k, v := range servers {
		all[k] = v
	}
	if url != "" {
		headers := map[string]string{"X-Agent-Session-Id": inv.SessionID}
		if tok := inv.Env[orchestrator.EnvAPIToken]; tok != "" {
			headers["Authorization"] = "Bearer " + tok
		}
		entry, err := json.Marshal(map[string]any{"type": "http", "url": url, "headers": headers})
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
