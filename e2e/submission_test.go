package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// The coordinator's answer to POST /runs is lost on its way back (a proxy forwards the request, lets the
// coordinator create the run, and drops the connection instead of the answer). The Go client retries
// with the same idempotency key and gets the first run back: the agent, which appends a line to a file
// each time it starts, runs exactly once.
func TestStartRunRetryAfterLostAnswerRunsOnce(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("probe")}})

	target, err := url.Parse(co.url)
	if err != nil {
		t.Fatal(err)
	}
	var creates, dropped atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if r.Method == "POST" && r.URL.Path == "/runs" && creates.Add(1) == 1 {
			// The coordinator has answered (the run exists); the caller never hears it.
			dropped.Add(1)
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(proxy.Close)

	cl, err := httpapi.NewClient(proxy.URL, httpapi.ClientConfig{Token: co.opts.adminToken, RetryMax: 3, RetryWaitMin: 50 * time.Millisecond, RetryWaitMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	log := c.path("starts.log")
	res, err := cl.StartRun(context.Background(), orchestrator.StartRunParams{
		AgentName: "probe", Parameters: json.RawMessage(`{"log":` + mustJSON(t, log) + `}`),
	})
	if err != nil {
		t.Fatalf("StartRun through a proxy that drops the first answer: %v", err)
	}
	if dropped.Load() != 1 || creates.Load() != 2 {
		t.Fatalf("the proxy saw %d creates and dropped %d answers, want 2 and 1", creates.Load(), dropped.Load())
	}
	if !res.Replayed {
		t.Errorf("the retry's answer is not marked replayed: %+v", res)
	}
	a := co.admin().with(t)
	if r := a.result(res.SessionID); r.Status != "completed" {
		t.Fatalf("session %s ended %s, want completed", res.SessionID, r.Status)
	}
	var runs struct {
		Runs []*orchestrator.Run `json:"runs"`
	}
	a.json("GET", "/runs?agent_name=probe", nil, http.StatusOK, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != res.RunID {
		t.Fatalf("GET /runs lists %d runs of probe, want exactly the one the client got (%s)", len(runs.Runs), res.RunID)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if starts := strings.Count(string(data), "start "); starts != 1 {
		t.Fatalf("the agent started %d times, want once:\n%s", starts, data)
	}
}

// The wire contract of submission control: Idempotency-Key answers 201, then 200 with the same run and
// session, then 422 for a different request; bad values are 400 with their codes.
func TestSubmissionControlWire(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("probe")}})
	a := co.admin().with(t)

	body := map[string]any{"agent_name": "probe", "parameters": map[string]any{"tag": "once"}, "priority": 2, "delay": "1s", "concurrency_key": "cust-1"}
	var first, again orchestrator.StartRunResult
	status, data, _ := a.do("POST", "/runs", body, "Idempotency-Key", "wire-1")
	if status != http.StatusCreated || json.Unmarshal(data, &first) != nil {
		t.Fatalf("first POST /runs: %d %s, want 201", status, data)
	}
	status, data, _ = a.do("POST", "/runs", body, "Idempotency-Key", "wire-1")
	if status != http.StatusOK || json.Unmarshal(data, &again) != nil || again.RunID != first.RunID || again.SessionID != first.SessionID || !again.Replayed {
		t.Fatalf("repeated POST /runs: %d %s, want 200 with run %s of session %s, replayed", status, data, first.RunID, first.SessionID)
	}
	other := map[string]any{"agent_name": "probe", "parameters": map[string]any{"tag": "other"}, "idempotency_key": "wire-1"}
	if status, data, _ := a.do("POST", "/runs", other); status != http.StatusUnprocessableEntity || !strings.Contains(string(data), `"idempotency_key_reused"`) {
		t.Fatalf("same key, different request: %d %s, want 422 idempotency_key_reused", status, data)
	}
	var run orchestrator.Run
	a.json("GET", "/runs/"+first.RunID, nil, http.StatusOK, &run)
	if run.Priority != 2 || run.RunAt == nil || run.ConcurrencyKey != "cust-1" || run.KeyLimit != 1 {
		t.Fatalf("GET /runs/%s: %s, want priority 2, run_at set, concurrency_key cust-1 with key_limit 1", first.RunID, mustJSON(t, run))
	}
	if r := a.result(first.SessionID); r.Status != "completed" {
		t.Fatalf("the delayed run's session ended %s, want completed", r.Status)
	}
	for _, tc := range []struct {
		field any
		name  string
		code  string
	}{
		{5, "priority", "invalid_priority"},
		{"soon", "delay", "invalid_delay"},
		{"-1s", "delay", "invalid_delay"},
		{"tomorrow", "run_at", "invalid_body"},
		{strings.Repeat("k", 256), "concurrency_key", "invalid_concurrency_key"},
	} {
		b := map[string]any{"agent_name": "probe", tc.name: tc.field}
		status, data, _ := a.do("POST", "/runs", b)
		if status != http.StatusBadRequest || !strings.Contains(string(data), `"`+tc.code+`"`) {
			t.Errorf("POST /runs with %s %v: %d %s, want 400 %s", tc.name, tc.field, status, data, tc.code)
		}
	}
}
