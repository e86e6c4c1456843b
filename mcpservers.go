package orchestrator

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// checkMCPServers checks a blueprint's mcp_servers against Claude Code's mcpServers format, which drops a
// malformed entry without a word at run time: each entry is an object; a stdio server (type "stdio" or
// none) has a command and, optionally, args (strings) and env (string values); an http, sse or ws server
// has a url with a matching scheme and, optionally, headers (string values). Other members are left to
// Claude Code. It returns one problem per server and field, sorted, each naming both.
func checkMCPServers(servers map[string]json.RawMessage) []string {
	var problems []string
	for name, raw := range servers {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%q: %s", name, fmt.Sprintf(format, args...)))
		}
		if strings.TrimSpace(name) == "" {
			bad("a server needs a name")
			continue
		}
		var entry map[string]json.RawMessage
		if json.Unmarshal(raw, &entry) != nil || entry == nil {
			bad("must be an object")
			continue
		}
		str := func(field string, required bool) (string, bool) {
			v, ok := entry[field]
			if !ok || string(v) == "null" {
				if required {
					bad("%s is required", field)
				}
				return "", false
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				bad("%s must be a string", field)
				return "", false
			}
			if required && strings.TrimSpace(s) == "" {
				bad("%s must not be empty", field)
				return "", false
			}
			return s, true
		}
		stringMap := func(field string) {
			if v, ok := entry[field]; ok && string(v) != "null" {
				var m map[string]string
				if json.Unmarshal(v, &m) != nil {
					bad("%s must be an object of strings", field)
				}
			}
		}
		typ, ok := str("type", false)
		if _, given := entry["type"]; given && !ok && string(entry["type"]) != "null" {
			continue // not a string: said
		}
		switch typ {
		case "", "stdio":
			str("command", true)
			if v, ok := entry["args"]; ok && string(v) != "null" {
				var args []string
				if json.Unmarshal(v, &args) != nil {
					bad("args must be a list of strings")
				}
			}
			stringMap("env")
		case "http", "sse", "ws":
			if u, ok := str("url", true); ok {
				secure, plain := "https", "http"
				if typ == "ws" {
					secure, plain = "wss", "ws"
				}
				if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Scheme != plain && p.Scheme != secure) {
					bad("url %q must be an absolute %s or %s URL", u, plain, secure)
				}
			}
			stringMap("headers")
		default:
			bad("type %q is not one of stdio, http, sse, ws", typ)
		}
	}
	sort.Strings(problems)
	return problems
}
