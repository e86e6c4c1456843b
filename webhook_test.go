package orchestrator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	body := []byte(`{"event":"session.ended"}`)
	ts := time.Now().Unix()
	sig := orchestrator.SignWebhook(secret, ts, body)
	stamp := func(t int64) string { return jsonInt(t) }
	if err := orchestrator.VerifyWebhook(secret, sig, stamp(ts), body, 0); err != nil {
		t.Fatalf("VerifyWebhook of a fresh signature: %v", err)
	}
	for _, tc := range []struct {
		name    string
		secret  []byte
		sig, ts string
		body    []byte
	}{
		{"wrong secret", []byte("other"), sig, stamp(ts), body},
		{"tampered body", secret, sig, stamp(ts), []byte(`{"event":"forged"}`)},
		{"old timestamp", secret, orchestrator.SignWebhook(secret, ts-3600, body), stamp(ts - 3600), body},
		{"timestamp not signed", secret, sig, stamp(ts + 1), body},
		{"bad timestamp", secret, sig, "yesterday", body},
	} {
		if err := orchestrator.VerifyWebhook(tc.secret, tc.sig, tc.ts, tc.body, 0); err == nil {
			t.Errorf("%s: VerifyWebhook accepted it", tc.name)
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestCallbackURLDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secret := []byte("hook-secret")
	var (
		mu       sync.Mutex
		attempts = map[string]int{}
		got      = make(chan orchestrator.WebhookPayload, 10)
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := orchestrator.VerifyWebhook(secret, r.Header.Get(orchestrator.HeaderWebhookSignature),
			r.Header.Get(orchestrator.HeaderWebhookTimestamp), body, time.Minute); err != nil {
			t.Errorf("delivery does not verify: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		attempts[r.URL.Path]++
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

	c := newCoordinator(t, orchestrator.CoordinatorConfig{WebhookSecret: secret})
	noSecret := newCoordinator(t, orchestrator.CoordinatorConfig{})
	register(t, noSecret, "host-a", crawler())
	_, err := noSecret.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: hook.URL + "/ok",
		Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	if orchestrator.ErrorCode(err) != "callback_url_unavailable" {
		t.Errorf("callback_url without a webhook secret: %v, want callback_url_unavailable", err)
	}

	a := register(t, c, "host-a", crawler())
	var sessions []string
	for _, path := range []string{"/flaky", "/gone"} {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", CallbackURL: hook.URL + path,
			Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		sessions = append(sessions, res.SessionID)
		poll(t, c, a.RunnerID, 1)
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultType: "deterministic", ResultText: "ok"}})
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
			return
		case <-deadline:
			t.Fatal("the webhook was never delivered")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
