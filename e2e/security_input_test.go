//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/webhook"
)

// e2eHookSecret is a secret in the Standard Webhooks form (whsec_ + base64).
const e2eHookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// coordFlag returns the flag and its value when the coordinator binary has the flag, else nothing: the
// tests below must run (and fail for the right reason) against a binary that predates it.
func coordFlag(name, value string) []string {
	if !coordinatorFlags[name] {
		return nil
	}
	return []string{"-" + name, value}
}

// hookReceiver is a webhook receiver in the test process. It verifies every delivery with package
// webhook, answers /ok at once and holds every other request open until the test ends, and logs in
// order what happened: "arrived <path>", "gave-up <path>" (the coordinator closed a held request).
type hookReceiver struct {
	*httptest.Server
	t       *testing.T
	release chan struct{}
	events  chan string

	mu       sync.Mutex
	log      []string
	inflight int
	payloads map[string]orchestrator.WebhookPayload
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{t: t, release: make(chan struct{}), events: make(chan string, 1000), payloads: map[string]orchestrator.WebhookPayload{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		close(h.release)
		h.Close()
	})
	return h
}

func (h *hookReceiver) record(ev string) {
	h.mu.Lock()
	h.log = append(h.log, ev)
	h.mu.Unlock()
	h.events <- ev
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := webhook.Verify(e2eHookSecret, r.Header, body, time.Minute); err != nil {
		// A failure, but the delivery is served all the same: the test goes on to check the timing.
		h.t.Errorf("delivery to %s does not verify with package webhook: %v (headers %v)", r.URL.Path, err, r.Header)
	}
	var p orchestrator.WebhookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		h.t.Errorf("delivery to %s: payload %s: %v", r.URL.Path, body, err)
	}
	h.mu.Lock()
	h.payloads[r.URL.Path] = p
	h.mu.Unlock()
	h.record("arrived " + r.URL.Path)
	if r.URL.Path == "/ok" {
		return
	}
	h.mu.Lock()
	h.inflight++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inflight--
		h.mu.Unlock()
	}()
	select {
	case <-h.release:
	case <-r.Context().Done():
		h.record("gave-up " + r.URL.Path)
	}
}

// waitEvent waits for an event accepted by match.
func (h *hookReceiver) waitEvent(t *testing.T, what string, match func(string) bool) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-h.events:
			if match(ev) {
				return
			}
		case <-deadline:
			h.mu.Lock()
			defer h.mu.Unlock()
			t.Fatalf("timed out waiting for %s; the receiver saw %v", what, h.log)
		}
	}
}

// TestWebhookOnTimeBesideHangingReceivers: twenty receivers that never answer do not delay a healthy
// one. The healthy webhook must arrive before the coordinator gives up on any of the hanging ones —
// with the delivery timeout raised so far that it never does during the test, when the binary allows.
func TestWebhookOnTimeBesideHangingReceivers(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	h := newHookReceiver(t)
	args := []string{"-webhook-secret", e2eHookSecret}
	args = append(args, coordFlag("webhook-allow-hosts", "127.0.0.1")...)
	args = append(args, coordFlag("webhook-timeout", "10m")...)
	co := c.startCoordinator(coordOpts{args: args})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("hooked")}})
	a := co.admin()

	const hanging = 20
	seen := map[string]bool{}
	for i := range hanging {
		a.startRun(map[string]any{"agent_name": "hooked", "callback_url": fmt.Sprintf("%s/hang/%02d", h.URL, i)})
	}
	h.waitEvent(t, fmt.Sprintf("the %d hanging receivers to be called", hanging), func(ev string) bool {
		if strings.HasPrefix(ev, "arrived /hang/") {
			seen[ev] = true
		}
		return len(seen) == hanging
	})
	ok := a.startRun(map[string]any{"agent_name": "hooked", "callback_url": h.URL + "/ok"})
	h.waitEvent(t, "the healthy receiver to be called", func(ev string) bool { return ev == "arrived /ok" })

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.log {
		if strings.HasPrefix(ev, "gave-up") {
			t.Errorf("the coordinator gave up on a hanging receiver before the healthy webhook arrived; order: %v", h.log)
			break
		}
	}
	if h.inflight != hanging {
		t.Errorf("%d deliveries hung when the healthy one arrived, want all %d", h.inflight, hanging)
	}
	if p := h.payloads["/ok"]; p.SessionID != ok.SessionID || p.Status != orchestrator.SessionCompleted {
		t.Errorf("healthy payload %+v, want session %s completed", p, ok.SessionID)
	}
}

// loopbackName returns a host name other than localhost that /etc/hosts maps to loopback addresses only
// (the machine's own name often is one), or "" when there is none.
func loopbackName() string {
	f, err := os.Open("/etc/hosts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.SplitN(sc.Text(), "#", 2)[0])
		if len(fields) < 2 {
			continue
		}
		if a, err := netip.ParseAddr(fields[0]); err != nil || !a.IsLoopback() {
			continue
		}
		for _, name := range fields[1:] {
			name = strings.ToLower(name)
			if name == "localhost" || strings.HasSuffix(name, ".localhost") {
				continue
			}
			addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", name)
			ok := err == nil && len(addrs) > 0
			for _, a := range addrs {
				ok = ok && a.Unmap().IsLoopback()
			}
			if ok {
				return name
			}
		}
	}
	return ""
}

// TestCallbackURLRefusesNonPublicDestinations: a callback_url that shows a non-public destination or
// user info is refused at POST /runs; a name that resolves to loopback is refused when the delivery
// connects, and nothing reaches it.
func TestCallbackURLRefusesNonPublicDestinations(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{args: []string{"-webhook-secret", e2eHookSecret}})
	a := co.admin()
	// No agent of this name exists, so nothing runs whatever the answer: only the check is exercised.
	for _, u := range []string{
		"http://127.0.0.1:9/hook",
		"http://[::1]:9/hook",
		"http://10.0.0.1/hook",
		"http://192.168.0.1/hook",
		"http://172.16.0.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://100.64.0.1/hook",
		"http://[fd00::1]/hook",
		"http://[::ffff:10.0.0.1]/hook",
		"http://0.0.0.0/hook",
		"http://localhost:9/hook",
		"https://user:password@hooks.example.com/hook",
	} {
		status, body, _ := a.do("POST", "/runs", map[string]any{"agent_name": "no-such-agent", "callback_url": u})
		var e map[string]any
		_ = json.Unmarshal(body, &e)
		if status != http.StatusBadRequest || e["error"] != "callback_url_refused" {
			t.Errorf("POST /runs with callback_url %s: %d %s, want 400 callback_url_refused", u, status, body)
		}
	}
	// A public destination passes the check (and the agent is then not found).
	if status, body, _ := a.do("POST", "/runs", map[string]any{"agent_name": "no-such-agent", "callback_url": "https://hooks.example.com/hook"}); status != http.StatusNotFound {
		t.Errorf("POST /runs with a public callback_url: %d %s, want 404 agent_not_found", status, body)
	}

	t.Run("a name that resolves to loopback", func(t *testing.T) {
		name := loopbackName()
		if name == "" {
			t.Skip("/etc/hosts maps no name but localhost to loopback only")
		}
		var hits sync.Map
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Store(r.URL.Path, true)
		}))
		defer target.Close()
		_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
		hookURL := "http://" + net.JoinHostPort(name, port) + "/hook"
		c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("hooked")}})
		a := a.with(t)
		s := a.startRun(map[string]any{"agent_name": "hooked", "callback_url": hookURL})
		if res := a.result(s.SessionID); res.Status != "completed" {
			t.Fatalf("run: %+v", res)
		}
		waitFor(t, time.Minute, "the coordinator to give the delivery up as refused", func() (bool, string) {
			for _, line := range strings.Split(co.proc.output(), "\n") {
				if strings.Contains(line, "webhook given up") && strings.Contains(line, hookURL) {
					return strings.Contains(line, "destination refused") && strings.Contains(line, "loopback"), line
				}
			}
			return false, "no such log line"
		})
		if _, ok := hits.Load("/hook"); ok {
			t.Errorf("the delivery reached %s, which resolves to loopback", hookURL)
		}
	})
}

// e2ePostgresSchema creates a schema for the test, dropped after the processes that use it were killed
// (call it before starting them), and returns a DSN that selects it.
func e2ePostgresSchema(t *testing.T, base string) string {
	t.Helper()
	return pgtest.Schema(t, base, "e2e")
}

// TestMalformedTextIsRefused sends NUL characters and invalid UTF-8 in query parameters, path values,
// JSON strings and headers across the API, to the real binary on SQLite (and on PostgreSQL when
// ORCHESTRATOR_TEST_POSTGRES_URL is set): every one is 400 invalid_encoding, never a 500, and an event
// that is not UTF-8 is not stored.
func TestMalformedTextIsRefused(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) []string{"sqlite": func(*testing.T) []string { return nil }}
	if base := os.Getenv("ORCHESTRATOR_TEST_POSTGRES_URL"); base != "" {
		stores["postgres"] = func(t *testing.T) []string { return []string{"-db", e2ePostgresSchema(t, base)} }
	}
	for name, dbArgs := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t)
			co := c.startCoordinator(coordOpts{args: dbArgs(t)})
			a := co.admin()
			registerOrchestrator(co)
			s := a.startRun(map[string]any{"agent_name": "orchestrator", "prompt": "hello"})
			probes := []struct {
				method, path, body string
				header             []string
			}{
				{"GET", "/sessions?agent_name=%00", "", nil},
				{"GET", "/sessions?parent_session_id=%FF", "", nil},
				{"GET", "/sessions?cursor=a%00", "", nil},
				{"GET", "/sessions?status=%00", "", nil},
				{"GET", "/runs?agent_name=%00", "", nil},
				{"GET", "/runs?session_id=%C3", "", nil},
				{"GET", "/runs?runner_id=%00", "", nil},
				{"GET", "/runs?after=%00", "", nil},
				{"GET", "/agents?tags=%00", "", nil},
				{"GET", "/agents/%00", "", nil},
				{"GET", "/agents/%FF/schema", "", nil},
				{"GET", "/sessions/%00", "", nil},
				{"GET", "/sessions/%00/result", "", nil},
				{"GET", "/sessions/%FF/events", "", nil},
				{"GET", "/sessions/%00/events/stream", "", nil},
				{"GET", "/runs/%00", "", nil},
				{"POST", "/runs/%00/stop", "", nil},
				{"POST", "/sessions/%00/stop", "", nil},
				{"DELETE", "/sessions/%00", "", nil},
				{"POST", "/sessions/%00/events", `{"event_type":"progress"}`, nil},
				{"POST", "/sessions/" + s.SessionID + "/events", `{"event_type":"progress","message":"a\u0000"}`, nil},
				{"POST", "/sessions/" + s.SessionID + "/events", "{\"event_type\":\"progress\",\"message\":\"caf\xc3\"}", nil},
				{"POST", "/runs", `{"agent_name":"a\u0000"}`, nil},
				{"POST", "/runs", "{\"agent_name\":\"\xff\"}", nil},
				{"POST", "/runs", `{"agent_name":"orchestrator","prompt":"hi\u0000"}`, nil},
				{"POST", "/runs", `{"agent_name":"orchestrator","prompt":"p","parent_session_id":"\u0000"}`, nil},
				{"POST", "/runs", `{"agent_name":"orchestrator","prompt":"p"}`, []string{"X-Agent-Session-Id", "ses_\xff"}},
				{"POST", "/agents", `{"name":"x\u0000","type":"agent"}`, nil},
				{"PUT", "/agents/%00", `{"name":"x","type":"agent"}`, nil},
				{"PATCH", "/agents/orchestrator", `{"description":"\u0000"}`, nil},
				{"DELETE", "/agents/%00", "", nil},
				{"POST", "/runner/register", `{"hostname":"h\u0000","project_dir":"/p"}`, nil},
				{"POST", "/runner/heartbeat", `{"runner_id":"a\u0000"}`, nil},
				{"GET", "/runner/runs?runner_id=%00&wait=0", "", nil},
				{"POST", "/runner/runs/%00/started", `{"runner_id":"x"}`, nil},
				{"POST", "/runner/runs/run_x/completed", `{"runner_id":"a\u0000"}`, nil},
				{"POST", "/runner/reports", `{"reports":[{"runner_id":"\u0000","run_id":"r","status":"completed"}]}`, nil},
				{"DELETE", "/runner/%00", "", nil},
				{"DELETE", "/runners/%00", "", nil},
				{"GET", "/runners?x=%00", "", nil},
				{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_agent_session_status","arguments":{"session_id":"\u0000"}}}`,
					[]string{"Accept", "application/json, text/event-stream"}},
			}
			for _, p := range probes {
				var body any
				if p.body != "" {
					body = p.body
				}
				status, data, _ := a.do(p.method, p.path, body, p.header...)
				var e map[string]any
				_ = json.Unmarshal(data, &e)
				if status != http.StatusBadRequest || e["error"] != "invalid_encoding" {
					t.Errorf("%s %s %q %q: %d %s, want 400 invalid_encoding", p.method, p.path, p.body, p.header, status, data)
				}
			}
			// Nothing malformed was stored: the session's events read back as UTF-8.
			_, data, _ := a.do("GET", "/sessions/"+s.SessionID+"/events?after=0", nil)
			if !utf8.Valid(data) || strings.Contains(string(data), `\u0000`) {
				t.Errorf("the session's events hold malformed text: %q", data)
			}
		})
	}
}
