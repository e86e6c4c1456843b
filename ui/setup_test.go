package ui_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/ui"
)

// Test tokens, for the coordinators that have tokens.
const (
	adminToken  = "ui-admin-token-0123456789abcdef"
	clientToken = "ui-client-token-0123456789abcdef"
)

// xssLine is what the crawl agent writes to stderr: the page must show it as text.
const xssLine = `<img src=x onerror=alert(1)>`

// world is a coordinator with the dashboard, served over HTTP on loopback, and one runner that owns the
// test's agents, both in this process.
type world struct {
	URL   string // the coordinator's base URL; the dashboard is URL + "/ui/"
	Store store.Store
	// Gate is the file the crawl agent waits for after its first stderr lines: the test creates it to
	// let the run finish, so the page is seen while the session runs, by order rather than by timing.
	Gate string
}

// openGate lets the crawl agent finish.
func (w *world) openGate(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(w.Gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newWorld starts the coordinator and the runner: the one place that builds them, so a change to their
// constructors is a change here. tokens nil: an open API.
func newWorld(t testing.TB, tokens map[string]httpapi.Role) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	store, err := sqlstore.New(ctx, filepath.Join(dir, "orchestrator.db"), nil)
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		t.Fatalf("NewCoordinator: %v", err)
	}
	if err := coord.Start(ctx); err != nil {
		t.Fatalf("coordinator Start: %v", err)
	}
	gate := filepath.Join(dir, "gate")
	r, err := runner.New(runner.Config{
		Coordinator:   coord,
		Executor:      deterministic.New(deterministic.Config{}),
		Blueprints:    testAgents(gate),
		Hostname:      "ui-test-host",
		ProjectDir:    dir,
		Tags:          []string{"linux", "test"},
		MaxConcurrent: 4,
		ShutdownGrace: time.Second, // a test that fails midway does not wait for its runs
	})
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Registered()
	srv := httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{Tokens: tokens, UI: ui.NewHandler()}))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		coord.Stop()
		store.Close()
	})
	return &world{URL: srv.URL, Store: store, Gate: gate}
}

// testAgents are the runner's agents: crawl writes two stderr lines (the second one markup), waits for
// the gate file and prints JSON; sleeper writes a line and sleeps until it is stopped; greet answers at once.
func testAgents(gate string) []*orchestrator.Blueprint {
	crawl := `sh -c 'echo "crawling the site" >&2; echo "` + xssLine + `" >&2; ` +
		`while [ ! -e ` + strconv.Quote(gate) + ` ]; do sleep 0.02; done; echo "{\"pages\": 3, \"ok\": true}"'`
	return []*orchestrator.Blueprint{
		{
			Name: "crawl", Type: orchestrator.AgentTypeDeterministic, Description: "Crawls a site to a depth",
			Tags: []string{"web"}, Command: crawl,
			ParametersSchema: json.RawMessage(`{
				"type": "object",
				"required": ["url"],
				"properties": {
					"url":    {"type": "string", "format": "uri", "description": "Where to start"},
					"depth":  {"type": "integer", "minimum": 1, "default": 2},
					"mode":   {"enum": ["fast", "thorough"], "default": "fast"},
					"follow": {"type": "boolean"},
					"paths":  {"type": "array", "items": {"type": "string"}},
					"limits": {"type": "object", "properties": {"pages": {"type": "integer"}}}
				}
			}`),
		},
		{
			Name: "sleeper", Type: orchestrator.AgentTypeDeterministic, Description: "Waits until it is stopped",
			Command: `sh -c 'echo "waiting to be stopped" >&2; exec sleep 300'`,
		},
		{
			Name: "greet", Type: orchestrator.AgentTypeDeterministic, Description: "Says hello",
			Tags: []string{"demo"}, Command: "echo hello",
			ParametersSchema: json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string", "default": "world"}}}`),
		},
	}
}
