package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// Test tokens, one per role.
const (
	adminTok   = "admin-token-0123456789abcdef"
	clientTok  = "client-token-0123456789abcdef"
	runnerTok  = "runner-token-0123456789abcdef"
	metricsTok = "metrics-token-0123456789abcdef"
)

var testTokens = map[string]Role{adminTok: RoleAdmin, clientTok: RoleClient, runnerTok: RoleRunner, metricsTok: RoleMetrics}

// newCoordinator returns a coordinator.Coordinator over a fresh SQLite store in the test's temp dir.
func newCoordinator(t testing.TB, cfg coordinator.Config) *coordinator.Coordinator {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	cfg.Store = store
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatalf("coordinator.New: %v", err)
	}
	return c
}

// testEnv is a coordinator served over HTTP on loopback.
type testEnv struct {
	coord   *coordinator.Coordinator
	handler http.Handler
	srv     *httptest.Server
}

func newEnv(t testing.TB, hcfg Config, ccfg coordinator.Config) *testEnv {
	t.Helper()
	coord := newCoordinator(t, ccfg)
	if hcfg.Tokens == nil && hcfg.Authenticator == nil {
		hcfg.Tokens = testTokens
	}
	h := NewHandler(coord, hcfg)
	srv := httptest.NewServer(checkedHandler(t, h)) // every answer as docs/openapi.yaml describes it
	t.Cleanup(srv.Close)
	return &testEnv{coord: coord, handler: h, srv: srv}
}

func (e *testEnv) client(t testing.TB, token string) *Client {
	t.Helper()
	c, err := NewClient(e.srv.URL, ClientConfig{Token: token, RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// runnerClient registers reg over HTTP with the shared runner token and returns the Client, which acts as
// that runner from then on, with the registration.
func (e *testEnv) runnerClient(t testing.TB, reg *orchestrator.RunnerRegistration) (*Client, *orchestrator.Registration) {
	t.Helper()
	c := e.client(t, runnerTok)
	out, err := c.RegisterRunner(ctxT(t), reg)
	if err != nil {
		t.Fatalf("RegisterRunner(%s): %v", reg.Hostname, err)
	}
	if !strings.HasPrefix(out.RunnerSecret, ids.RunnerSecret) {
		t.Fatalf("RegisterRunner(%s): runner_secret %q lacks the prefix %q", reg.Hostname, out.RunnerSecret, ids.RunnerSecret)
	}
	return c, out
}

// credential is the runner's own bearer token for a registration.
func credential(reg *orchestrator.Registration) string {
	return RunnerCredential(reg.RunnerID, reg.RunnerSecret)
}

// serve runs one request through the handler in-process and returns the recorded response. It names the
// coordinator by address, as a client that dialed it does, and sends a body as JSON (Content-Type:
// application/json), unless header says otherwise.
func serve(h http.Handler, method, target, token string, body []byte, header ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "127.0.0.1:8765" // the address a client dialed, not httptest's example.com (see browser.go)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// errorBody checks that rec is a JSON error with the given status and returns its fields.
func errorBody(t testing.TB, rec *httptest.ResponseRecorder, status int) map[string]any {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	return jsonErrorBody(t, rec)
}

func jsonErrorBody(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want application/json; body %s", ct, rec.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("error body is not JSON: %v: %q", err, rec.Body)
	}
	if code, _ := m["error"].(string); code == "" {
		t.Fatalf("error body has no error code: %s", rec.Body)
	}
	if msg, _ := m["message"].(string); msg == "" {
		t.Fatalf("error body has no message: %s", rec.Body)
	}
	return m
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t testing.TB, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func check(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// aiAgent is a registry agent without a schema (the implicit prompt schema applies).
func aiAgent(name string) *orchestrator.Blueprint {
	return &orchestrator.Blueprint{Name: name, Type: orchestrator.AgentTypeAgent, Description: "test agent", Tags: []string{"test"}}
}

// crawler is the example web-crawler blueprint.
func crawler() *orchestrator.Blueprint {
	return &orchestrator.Blueprint{
		Name:             "web-crawler",
		Type:             orchestrator.AgentTypeDeterministic,
		Description:      "Crawls websites to specified depth",
		Command:          "crawl",
		ParametersSchema: json.RawMessage(`{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`),
	}
}

func registration(host string, bps ...*orchestrator.Blueprint) *orchestrator.RunnerRegistration {
	return &orchestrator.RunnerRegistration{Hostname: host, ProjectDir: "/work", ExecutorType: "test", MaxConcurrent: 2, Blueprints: bps}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
