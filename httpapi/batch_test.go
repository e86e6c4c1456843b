package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestStartRunsOverHTTP: a fan-out in one POST /runs (and through the Client), a batch with invalid runs
// (400, every invalid run by index, nothing created), and the limits on the batch (413).
func TestStartRunsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxBatchRuns: 5, MaxBodyBytes: 4 << 10, MaxBatchBytes: 16 << 10}, coordinator.Config{})
	if _, err := e.coord.CreateAgent(ctxT(t), &orchestrator.Blueprint{Name: "writer"}); err != nil {
		t.Fatal(err)
	}
	client := e.client(t, clientTok)

	res, err := client.StartRuns(ctxT(t), []orchestrator.StartRunParams{
		{AgentName: "writer", Prompt: "one"}, {AgentName: "writer", Prompt: "two"}, {AgentName: "writer", Prompt: "three"},
	})
	if err != nil {
		t.Fatalf("Client.StartRuns: %v", err)
	}
	for i, r := range res {
		run, err := e.coord.GetRun(ctxT(t), r.RunID)
		if err != nil || run.SessionID != r.SessionID {
			t.Fatalf("run %d: %+v, %v; want the run of session %s", i, run, err, r.SessionID)
		}
		want := []string{"one", "two", "three"}[i]
		if !strings.Contains(string(run.Parameters), want) {
			t.Errorf("run %d parameters %s, want prompt %q", i, run.Parameters, want)
		}
	}

	// The parent header applies to every run of a batch.
	rec := serve(e.handler, "POST", "/runs", clientTok, []byte(`{"runs":[{"agent_name":"writer","prompt":"child"}]}`),
		HeaderSessionID, res[0].SessionID)
	if rec.Code != http.StatusCreated {
		t.Fatalf("batch with a parent header: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		Runs []orchestrator.StartRunResult `json:"runs"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Runs) != 1 {
		t.Fatalf("batch answer %s: %v", rec.Body, err)
	}
	child, err := e.coord.GetSession(ctxT(t), out.Runs[0].SessionID)
	if err != nil || child.ParentSessionID != res[0].SessionID {
		t.Errorf("child session %+v, %v; want parent %s", child, err, res[0].SessionID)
	}

	before, _ := e.coord.ListSessions(ctxT(t), orchestrator.SessionFilter{})
	_, err = client.StartRuns(ctxT(t), []orchestrator.StartRunParams{
		{AgentName: "writer", Prompt: "fine"},
		{AgentName: "nobody", Prompt: "x"},
		{AgentName: "writer", Prompt: "x", Parameters: json.RawMessage(`{"prompt":"y"}`)},
	})
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "invalid_runs" || !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("batch with invalid runs: %v, want 400 invalid_runs", err)
	}
	items, _ := oe.Details["items"].([]any)
	var got []string
	for _, it := range items {
		m, _ := it.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["index"], m["error"]))
	}
	if want := "[1:agent_not_found 2:invalid_request]"; fmt.Sprint(got) != want {
		t.Errorf("invalid runs %v, want %s", got, want)
	}
	after, _ := e.coord.ListSessions(ctxT(t), orchestrator.SessionFilter{})
	if len(after.Sessions) != len(before.Sessions) {
		t.Errorf("a refused batch created %d sessions", len(after.Sessions)-len(before.Sessions))
	}

	six := `{"runs":[` + strings.TrimSuffix(strings.Repeat(`{"agent_name":"writer","prompt":"p"},`, 6), ",") + `]}`
	errorBody(t, serve(e.handler, "POST", "/runs", clientTok, []byte(six)), http.StatusRequestEntityTooLarge)
	big := `{"runs":[{"agent_name":"writer","prompt":"` + strings.Repeat("a", 20<<10) + `"}]}`
	errorBody(t, serve(e.handler, "POST", "/runs", clientTok, []byte(big)), http.StatusRequestEntityTooLarge)
	// Within the batch limit, a single run is still held to the body limit.
	single := `{"agent_name":"writer","prompt":"` + strings.Repeat("a", 8<<10) + `"}`
	errorBody(t, serve(e.handler, "POST", "/runs", clientTok, []byte(single)), http.StatusRequestEntityTooLarge)
	for _, body := range []string{`{"runs":5}`, `{"runs":[]}`, `{"runs":null}`, `{"runs":[5]}`} {
		errorBody(t, serve(e.handler, "POST", "/runs", clientTok, []byte(body)), http.StatusBadRequest)
	}
	errorBody(t, serve(e.handler, "POST", "/runs?wait=1s", clientTok, []byte(`{"runs":[{"agent_name":"writer","prompt":"p"}]}`)), http.StatusBadRequest)
}
