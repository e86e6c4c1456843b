package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/httpapi"
)

// The quickstart's API takes tokens: the environment's, or new random ones, two different ones each
// start.
func TestNewTokens(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	a, b := newTokens(none), newTokens(none)
	if a.client == "" || a.admin == "" || a.client == a.admin || a.client == b.client || a.admin == b.admin {
		t.Errorf("new tokens %+v and %+v: want each one new", a, b)
	}
	if _, err := httpapi.ParseTokens(a.admin, a.client, ""); err != nil {
		t.Errorf("new tokens %+v: %v", a, err)
	}
	env := map[string]string{httpapi.EnvClientToken: "c-from-env", httpapi.EnvAdminToken: "a-from-env"}
	if got := newTokens(func(k string) string { return env[k] }); got != (tokens{client: "c-from-env", admin: "a-from-env"}) {
		t.Errorf("tokens from the environment: %+v", got)
	}
}

// What the quickstart prints to try next carries the client token for ao and every curl command, and
// sends bodies as JSON.
func TestPrintTryNext(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	printTryNext(&out, "http://127.0.0.1:8765", "ses_x", "http://127.0.0.1:8766/", tokens{client: "CLIENT", admin: "ADMIN"})
	text := out.String()
	if !strings.Contains(text, "export ORCHESTRATOR_TOKEN=CLIENT\n") || !strings.Contains(text, "ADMIN") {
		t.Errorf("the tokens are not printed:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "curl ") && !strings.Contains(line, `-H "Authorization: Bearer $ORCHESTRATOR_TOKEN"`) {
			t.Errorf("curl without the token: %s", line)
		}
		if strings.HasPrefix(line, "curl ") && strings.Contains(line, " -d ") {
			t.Errorf("curl -d sends form encoding, which the API refuses: %s", line)
		}
		if strings.HasPrefix(line, "claude mcp add") && !strings.Contains(line, "Authorization: Bearer") {
			t.Errorf("MCP without the token: %s", line)
		}
	}
}
