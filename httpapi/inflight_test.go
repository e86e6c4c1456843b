package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

// TestBatchBytesInFlightAreBounded: while one fan-out's body holds the whole budget of batch bytes in
// flight, another fan-out and a runner's report batch are refused at once — 429 too_many_bytes_in_flight
// with Retry-After, before their bodies are read, changing nothing — and once that body is answered, the
// budget is free again. Ordinary routes are not counted.
func TestBatchBytesInFlightAreBounded(t *testing.T) {
	t.Parallel()
	// The budget is raised to MaxBatchBytes and MaxReportBytes, so that one request alone always fits:
	// here all three are 4 MiB.
	env := newEnv(t, Config{MaxBatchBytes: 4 << 20, MaxReportBytes: 4 << 20, MaxBatchBytesInFlight: 1}, coordinator.Config{})
	client := env.client(t, clientTok)
	if _, err := env.coord.CreateAgent(ctxT(t), &orchestrator.Blueprint{Name: "helper", Type: orchestrator.AgentTypeAgent}); err != nil {
		t.Fatal(err)
	}
	post := func(path, token string, body io.Reader, length int64) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", env.srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		return resp
	}

	// A fan-out that announces 4 MiB and sends them slowly: its reservation holds the whole budget.
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // registered after the server's: runs first, so the server can close
	heldReq, err := http.NewRequest("POST", env.srv.URL+"/runs", pr)
	if err != nil {
		t.Fatal(err)
	}
	heldReq.ContentLength = 4 << 20
	heldReq.Header.Set("Content-Type", "application/json")
	heldReq.Header.Set("Authorization", "Bearer "+clientTok)
	held := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(heldReq)
		if err == nil {
			resp.Body.Close()
		}
		held <- err // the body is cut short: an error, or the server's 400
	}()
	if _, err := pw.Write([]byte(`{"runs": [`)); err != nil {
		t.Fatal(err)
	}

	// An invalid fan-out is 400 when admitted (so a probe creates nothing) and 429 once the budget is full.
	const probe = `{"runs": "not a list"}`
	var refused *http.Response
	testkit.WaitFor(t, 30*time.Second, "a fan-out to be refused for the bytes in flight", func() bool {
		resp := post("/runs", clientTok, strings.NewReader(probe), int64(len(probe)))
		if resp.StatusCode == http.StatusTooManyRequests {
			refused = resp
			return true
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("the probe fan-out: %d, want 400 or 429", resp.StatusCode)
		}
		return false
	})
	var body map[string]any
	if err := json.NewDecoder(refused.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	refused.Body.Close()
	if body["error"] != "too_many_bytes_in_flight" || refused.Header.Get("Retry-After") == "" || body["limit"] != float64(4<<20) {
		t.Errorf("refused fan-out: %v, Retry-After %q; want too_many_bytes_in_flight, limit %d and Retry-After", body, refused.Header.Get("Retry-After"), 4<<20)
	}
	// A runner's report batch shares the budget.
	_, reg := env.runnerClient(t, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/p", ExecutorType: "deterministic"})
	reports := `{"reports": []}`
	if resp := post("/runner/reports", credential(reg), strings.NewReader(reports), int64(len(reports))); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a report batch while the budget is full: %d, want 429", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	// Other routes are not counted.
	if _, err := client.ListAgents(ctxT(t), orchestrator.ListAgentsParams{}); err != nil {
		t.Errorf("GET /agents while the budget is full: %v", err)
	}
	page, err := client.ListSessions(ctxT(t), orchestrator.SessionFilter{})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("sessions while the budget is full: %d, %v; want none (the refused requests changed nothing)", len(page.Sessions), err)
	}

	// The held fan-out ends (its body is cut short: 400); the budget is free.
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-held
	resp := post("/runs", clientTok, strings.NewReader(probe), int64(len(probe)))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a fan-out after the held one ended: %d, want it admitted (400 for its invalid body)", resp.StatusCode)
	}
}
