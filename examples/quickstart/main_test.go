package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/httpapi"
)

// The quickstart's coordinator serves Prometheus metrics at GET /metrics: 200 for the admin token, 401
// without one.
func TestMetricsServed(t *testing.T) {
	t.Parallel()
	tok := tokens{client: "aoc_client_token_for_the_test", admin: "aoa_admin_token_for_the_test"}
	cfg := coordinatorConfig(tok)
	cfg.Addr, cfg.DB = "127.0.0.1:0", filepath.Join(t.TempDir(), "orchestrator.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := cfg.OpenStore(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := cfg.Start(ctx, store, log)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for token, want := range map[string]int{tok.admin: http.StatusOK, "": http.StatusUnauthorized} {
		req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want || (want == http.StatusOK && !strings.Contains(string(body), "orchestrator_runs_pending")) {
			t.Errorf("GET /metrics with token %q = %d, want %d (body starts %.200q)", token, res.StatusCode, want, body)
		}
	}
}

// A taken API port is said before anything is built, naming -addr.
func TestCheckAddr(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := checkAddr(l.Addr().String()); err == nil || !strings.Contains(err.Error(), "-addr") {
		t.Errorf("checkAddr(a taken port) = %v, want an error naming -addr", err)
	}
	if err := checkAddr("127.0.0.1:0"); err != nil {
		t.Errorf("checkAddr(a free port) = %v", err)
	}
}

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
		if strings.HasPrefix(line, "curl ") && !strings.Contains(line, `-H "Authorization: Bearer $ORCHESTRATOR_TOKEN"`) &&
			!strings.Contains(line, `-H "Authorization: Bearer $ORCHESTRATOR_ADMIN_TOKEN"`) {
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
