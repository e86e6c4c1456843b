package coordinator_test

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/webhook"
)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// endRun takes the run on runner a and reports it completed.
func endRun(t *testing.T, c orchestrator.Coordinator, a *orchestrator.Registration, runID string) {
	t.Helper()
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunRunning})
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultType: "deterministic", ResultText: "ok"}})
}

// startWithCallback starts a crawl whose outcome goes to url, has runner a take it and ends it.
func startWithCallback(t *testing.T, c orchestrator.Coordinator, a *orchestrator.Registration, url string) *orchestrator.StartRunResult {
	t.Helper()
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: url,
		Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 || w.Runs[0].Run.ID != res.RunID {
		t.Fatalf("poll: %+v, want run %s", w, res.RunID)
	}
	endRun(t, c, a, res.RunID)
	return res
}

func TestCallbackURLDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		mu       sync.Mutex
		attempts = map[string]int{}
		ids      = map[string][]string{}
		got      = make(chan orchestrator.WebhookPayload, 10)
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(hookSecret, r.Header, body, time.Minute); err != nil {
			t.Errorf("delivery does not verify: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		attempts[r.URL.Path]++
		ids[r.URL.Path] = append(ids[r.URL.Path], r.Header.Get(webhook.HeaderID))
		n := attempts[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/flaky" && n == 1:
			w.WriteHeader(http.StatusServiceUnavailable) // retried
			return
		case r.URL.Path == "/gone":
			w.WriteHeader(http.StatusGone) // permanent: not retried
			return
		}
		var p orchestrator.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("payload: %v", err)
		}
		got <- p
	}))
	defer hook.Close()

	allow := []string{"127.0.0.1"} // the test server's address, which deliveries refuse otherwise
	c := newCoordinator(t, coordinator.Config{WebhookSecret: []byte(hookSecret), WebhookAllowHosts: allow})
	noSecret := newCoordinator(t, coordinator.Config{WebhookAllowHosts: allow})
	register(t, noSecret, "host-a", crawler())
	_, err := noSecret.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: hook.URL + "/ok",
		Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	if orchestrator.ErrorCode(err) != "callback_url_unavailable" {
		t.Errorf("callback_url without a webhook secret: %v, want callback_url_unavailable", err)
	}

	a := register(t, c, "host-a", crawler())
	var sessions []string
	for _, path := range []string{"/flaky", "/gone"} {
		sessions = append(sessions, startWithCallback(t, c, a, hook.URL+path).SessionID)
	}
	// The first attempt at /flaky fails with 503; it is retried after a backoff of about a second.
	deadline := time.After(20 * time.Second)
	for {
		c.DeliverWebhooks(ctx)
		select {
		case p := <-got:
			if p.SessionID != sessions[0] || p.Status != orchestrator.SessionCompleted || p.Result == nil || p.Result.ResultText != "ok" {
				t.Fatalf("delivered payload %+v, want session %s completed with its result", p, sessions[0])
			}
			mu.Lock()
			defer mu.Unlock()
			if attempts["/flaky"] != 2 || attempts["/gone"] != 1 {
				t.Errorf("attempts = %v, want /flaky twice (503 then 200) and /gone once (410 is permanent)", attempts)
			}
			if f := ids["/flaky"]; len(f) != 2 || f[0] != f[1] || !strings.HasPrefix(f[0], "wh_") || ids["/gone"][0] == f[0] {
				t.Errorf("webhook-id headers = %v, want one wh_ id per webhook, the same on its retry", ids)
			}
			return
		case <-deadline:
			t.Fatal("the webhook was never delivered")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hangingReceiver answers /ok at once and holds every other request open until release is closed. It
// reports each arrival, and each held request that ended before release (the sender gave up on it).
type hangingReceiver struct {
	*httptest.Server
	arrived chan string
	release chan struct{}

	mu            sync.Mutex
	inflight, max int
	gaveUp        int
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	h := &hangingReceiver{arrived: make(chan string, 100), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(hookSecret, r.Header, body, time.Minute); err != nil {
			t.Errorf("%s: delivery does not verify: %v", r.URL.Path, err)
		}
		h.arrived <- r.URL.Path
		if r.URL.Path == "/ok" {
			return
		}
		h.mu.Lock()
		h.inflight++
		h.max = max(h.max, h.inflight)
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.inflight--
			h.mu.Unlock()
		}()
		select {
		case <-h.release:
		case <-r.Context().Done():
			h.mu.Lock()
			h.gaveUp++
			h.mu.Unlock()
		}
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.Close()
	})
	return h
}

func (h *hangingReceiver) wait(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-h.arrived:
		if got != want && want != "" {
			t.Fatalf("a delivery to %s arrived, want %s", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no delivery to %q arrived", want)
	}
}

// TestHangingReceiversDelayNoOne: twenty receivers that never answer each hold one delivery slot; a
// webhook queued after them is delivered while they all still hang.
func TestHangingReceiversDelayNoOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHangingReceiver(t)
	c := newCoordinator(t, coordinator.Config{WebhookSecret: []byte(hookSecret),
		WebhookAllowHosts: []string{"127.0.0.1"}, WebhookTimeout: 5 * time.Minute})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop) // after the receiver's release (cleanups run last first)
	a := register(t, c, "host-a", crawler())
	const hanging = 20
	for i := range hanging {
		startWithCallback(t, c, a, h.URL+"/hang/"+string(rune('a'+i)))
	}
	for range hanging {
		h.wait(t, "")
	}
	startWithCallback(t, c, a, h.URL+"/ok")
	h.wait(t, "/ok")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight != hanging || h.gaveUp != 0 {
		t.Errorf("when the healthy webhook arrived, %d deliveries hung and %d had been given up; want all %d still hanging",
			h.inflight, h.gaveUp, hanging)
	}
}

// TestWebhookConcurrencyIsBounded: no more deliveries are in flight than WebhookConcurrency allows, and
// the rest go out as slots free up.
func TestWebhookConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHangingReceiver(t)
	c := newCoordinator(t, coordinator.Config{WebhookSecret: []byte(hookSecret),
		WebhookAllowHosts: []string{"127.0.0.1"}, WebhookConcurrency: 2, WebhookTimeout: 5 * time.Minute})
	a := register(t, c, "host-a", crawler())
	for i := range 5 {
		startWithCallback(t, c, a, h.URL+"/hang/"+string(rune('a'+i)))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.DeliverWebhooks(ctx)
	}()
	h.wait(t, "")
	h.wait(t, "")
	close(h.release) // from now on every delivery is answered at once
	for range 3 {
		h.wait(t, "")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("DeliverWebhooks did not return")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.max != 2 {
		t.Errorf("at most %d deliveries were in flight at once, want 2 (WebhookConcurrency)", h.max)
	}
}

func TestCallbackURLRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{WebhookSecret: []byte(hookSecret)})
	register(t, c, "host-a", crawler())
	for _, u := range []string{
		"http://127.0.0.1:8080/hook",
		"http://[::1]/hook",
		"http://[::ffff:127.0.0.1]/hook",
		"http://10.0.0.1/hook",
		"http://172.16.5.4/hook",
		"http://192.168.1.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://100.64.0.1/hook",
		"http://[fd00::1]/hook",
		"http://[fe80::1%25eth0]/hook",
		"http://0.0.0.0/hook",
		"http://localhost:8080/hook",
		"http://api.localhost/hook",
		"https://user:secret@hooks.example.com/hook",
	} {
		_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: u,
			Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		if orchestrator.ErrorCode(err) != "callback_url_refused" || !strings.Contains(err.Error(), "refused") {
			t.Errorf("callback_url %s: %v, want callback_url_refused", u, err)
		}
	}
	// What the allow-list names is accepted.
	open := newCoordinator(t, coordinator.Config{WebhookSecret: []byte(hookSecret),
		WebhookAllowHosts: []string{"localhost", "10.0.0.0/8"}})
	register(t, open, "host-a", crawler())
	for _, u := range []string{"http://localhost:8080/hook", "http://10.1.2.3/hook", "https://hooks.example.com/hook"} {
		if _, err := open.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: u,
			Parameters: json.RawMessage(`{"url":"https://a.example"}`)}); err != nil {
			t.Errorf("callback_url %s with it allow-listed: %v", u, err)
		}
	}
	if _, err := coordinator.New(coordinator.Config{Store: newStore(t), WebhookAllowHosts: []string{"10.0.0.0/99"}}); err == nil {
		t.Error("coordinator.New accepted a malformed WebhookAllowHosts entry")
	}
	if _, err := coordinator.New(coordinator.Config{Store: newStore(t), WebhookSecret: []byte("whsec_%%%")}); err == nil {
		t.Error("coordinator.New accepted a whsec_ secret that is not base64")
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

// TestRefusedWhenConnecting: a name the URL check cannot judge, which resolves to loopback, is refused
// when the delivery connects; the webhook fails at once, with the reason, and nothing reaches the address.
func TestRefusedWhenConnecting(t *testing.T) {
	t.Parallel()
	name := loopbackName()
	if name == "" {
		t.Skip("/etc/hosts maps no name but localhost to loopback only")
	}
	ctx := context.Background()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a delivery reached %s", r.URL)
	}))
	defer hook.Close()
	_, port, _ := net.SplitHostPort(hook.Listener.Addr().String())
	st := newStore(t)
	c := newCoordinator(t, coordinator.Config{Store: st, WebhookSecret: []byte(hookSecret)})
	a := register(t, c, "host-a", crawler())
	res := startWithCallback(t, c, a, "http://"+net.JoinHostPort(name, port)+"/hook")
	c.DeliverWebhooks(ctx)
	var row struct {
		Status    string `bun:"status"`
		Attempts  int    `bun:"attempts"`
		LastError string `bun:"last_error"`
	}
	if err := st.DB().NewSelect().Table("webhooks").Column("status", "attempts", "last_error").
		Where("session_id = ?", res.SessionID).Scan(ctx, &row); err != nil {
		t.Fatal(err)
	}
	if row.Status != string(store.WebhookFailed) || row.Attempts != 1 ||
		!strings.Contains(row.LastError, "destination refused") || !strings.Contains(row.LastError, "loopback") {
		t.Errorf("webhook to %s: %+v, want failed after 1 attempt, refused as loopback", name, row)
	}
}
