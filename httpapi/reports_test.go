package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// claimedRuns starts n runs of a crawler blueprint of a fresh runner's own (crawler-<host>) and claims
// them; it returns the runner, its credential and the runs.
func claimedRuns(t *testing.T, env *testEnv, host string, n int) (string, string, []*orchestrator.Run) {
	t.Helper()
	ctx := ctxT(t)
	bp := crawler()
	bp.Name = "crawler-" + host
	reg := registration(host, bp)
	reg.MaxConcurrent = n
	out := must[*orchestrator.Registration](t, "RegisterRunner")(env.coord.RegisterRunner(ctx, reg))
	rid := out.RunnerID
	for range n {
		must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{
			AgentName: bp.Name, Parameters: json.RawMessage(`{"url":"https://example.com"}`),
		}))
	}
	work := must[*orchestrator.Work](t, "PollWork")(env.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: rid, Max: n, Wait: time.Second}))
	if len(work.Runs) != n {
		t.Fatalf("PollWork claimed %d runs, want %d", len(work.Runs), n)
	}
	runs := make([]*orchestrator.Run, n)
	for i, a := range work.Runs {
		runs[i] = a.Run
	}
	return rid, credential(out), runs
}

// countRequests wraps h and counts the requests to each "METHOD path".
func countRequests(h http.Handler, counts map[string]*atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/runner/runs/") {
			key = r.Method + " /runner/runs/{id}/" + r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		}
		if c := counts[key]; c != nil {
			c.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// TestReportRuns: several reports in one POST /runner/reports, each answered as its own request would be.
func TestReportRuns(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	counts := map[string]*atomic.Int64{"POST /runner/reports": {}, "POST /runner/runs/{id}/completed": {}}
	srv := httptest.NewServer(countRequests(env.handler, counts))
	t.Cleanup(srv.Close)
	ctx := ctxT(t)

	rid, cred, runs := claimedRuns(t, env, "h1", 3)
	otherID, _, otherRuns := claimedRuns(t, env, "h2", 1)
	runner, err := NewClient(srv.URL, ClientConfig{Token: cred, RetryWaitMin: time.Millisecond, RetryWaitMax: 10 * time.Millisecond})
	check(t, "NewClient", err)
	zero := 0
	reps := []orchestrator.RunReport{
		{RunnerID: rid, RunID: runs[0].ID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultText: `{"pages":3}`, ResultData: json.RawMessage(`{"pages":3}`), ExitCode: &zero}},
		{RunnerID: otherID, RunID: otherRuns[0].ID, Status: orchestrator.RunCompleted}, // as another runner
		{RunnerID: rid, RunID: otherRuns[0].ID, Status: orchestrator.RunCompleted},     // another runner's run
		{RunnerID: rid, RunID: runs[2].ID, Status: orchestrator.RunFailed, Error: "boom"},
		{RunnerID: rid, RunID: runs[0].ID, Status: orchestrator.RunCompleted}, // a repeat
		{RunnerID: rid, RunID: "run_missing", Status: orchestrator.RunCompleted},
		{RunnerID: rid, RunID: runs[1].ID, Status: "finished"},                  // refused before it is sent
		{RunID: "run_missing_too", Status: orchestrator.RunStopped},             // the credential's runner
		{RunnerID: otherID, RunID: runs[1].ID, Status: orchestrator.RunStopped}, // as another runner, on ours
	}
	errs := runner.ReportRuns(ctx, reps)
	if len(errs) != len(reps) {
		t.Fatalf("ReportRuns returned %d errors for %d reports", len(errs), len(reps))
	}
	want := []struct {
		kind error
		code string
	}{
		{nil, ""},
		{orchestrator.ErrForbidden, "runner_mismatch"},
		{orchestrator.ErrConflict, "run_not_held"},
		{nil, ""},
		{nil, ""},
		{orchestrator.ErrNotFound, "run_not_found"},
		{orchestrator.ErrInvalid, "invalid_request"},
		{orchestrator.ErrNotFound, "run_not_found"},
		{orchestrator.ErrForbidden, "runner_mismatch"},
	}
	for i, w := range want {
		switch {
		case w.kind == nil && errs[i] != nil:
			t.Errorf("report %d: err = %v, want nil", i, errs[i])
		case w.kind != nil && (!errors.Is(errs[i], w.kind) || orchestrator.ErrorCode(errs[i]) != w.code):
			t.Errorf("report %d: err = %v (code %q), want %v %q", i, errs[i], orchestrator.ErrorCode(errs[i]), w.kind, w.code)
		}
	}
	if n := counts["POST /runner/reports"].Load(); n != 1 {
		t.Errorf("POST /runner/reports requests = %d, want 1", n)
	}
	if n := counts["POST /runner/runs/{id}/completed"].Load(); n != 0 {
		t.Errorf("single report requests = %d, want 0", n)
	}

	s0 := must[*orchestrator.Session](t, "GetSession")(env.coord.GetSession(ctx, runs[0].SessionID))
	if s0.Status != orchestrator.SessionCompleted || s0.Result == nil || string(s0.Result.ResultData) != `{"pages":3}` {
		t.Errorf("session of the completed run = %s, result %+v", s0.Status, s0.Result)
	}
	s2 := must[*orchestrator.Session](t, "GetSession")(env.coord.GetSession(ctx, runs[2].SessionID))
	if s2.Status != orchestrator.SessionFailed || s2.Error != "boom" {
		t.Errorf("session of the failed run = %s %q", s2.Status, s2.Error)
	}
	for _, id := range []string{runs[1].ID, otherRuns[0].ID} {
		if r := must[*orchestrator.Run](t, "GetRun")(env.coord.GetRun(ctx, id)); r.Status != orchestrator.RunClaimed {
			t.Errorf("run %s, reported by or as a runner that does not hold it, is %s, want still claimed", id, r.Status)
		}
	}
}

// TestReportRunsWithoutTheEndpoint: against a coordinator that does not serve POST /runner/reports (an
// older version), the client sends the reports one by one, then does so from the start.
func TestReportRunsWithoutTheEndpoint(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	counts := map[string]*atomic.Int64{"POST /runner/reports": {}, "POST /runner/runs/{id}/completed": {}}
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/runner/reports" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		env.handler.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(countRequests(old, counts))
	t.Cleanup(srv.Close)
	ctx := ctxT(t)
	rid, cred, runs := claimedRuns(t, env, "h1", 4)
	runner, err := NewClient(srv.URL, ClientConfig{Token: cred})
	check(t, "NewClient", err)
	for round := range 2 {
		reps := []orchestrator.RunReport{
			{RunnerID: rid, RunID: runs[2*round].ID, Status: orchestrator.RunCompleted},
			{RunnerID: rid, RunID: runs[2*round+1].ID, Status: orchestrator.RunCompleted},
		}
		for i, err := range runner.ReportRuns(ctx, reps) {
			check(t, "report "+reps[i].RunID, err)
		}
	}
	if n := counts["POST /runner/reports"].Load(); n != 1 {
		t.Errorf("POST /runner/reports requests = %d, want 1 (then none)", n)
	}
	if n := counts["POST /runner/runs/{id}/completed"].Load(); n != 4 {
		t.Errorf("single report requests = %d, want 4", n)
	}
	for _, r := range runs {
		if got := must[*orchestrator.Run](t, "GetRun")(env.coord.GetRun(ctx, r.ID)); got.Status != orchestrator.RunCompleted {
			t.Errorf("run %s is %s, want completed", r.ID, got.Status)
		}
	}
}

// TestReportRunsBody: the batch endpoint's answers to malformed requests.
func TestReportRunsBody(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	_, reg := env.runnerClient(t, registration("h"))
	runnerTok := credential(reg)
	for _, tc := range []struct {
		body string
		code string
	}{
		{`{}`, "invalid_body"},
		{`{"reports":[]}`, "invalid_body"},
		{`{"reports":{}}`, "invalid_body"},
		{`{"reports":[` + strings.Repeat(`{"run_id":"run_x","runner_id":"r","status":"completed"},`, MaxReportsPerRequest) + `{}]}`, "invalid_body"},
	} {
		rec := serve(env.handler, "POST", "/runner/reports", runnerTok, []byte(tc.body))
		if m := errorBody(t, rec, http.StatusBadRequest); m["error"] != tc.code {
			t.Errorf("%.40s…: error %v, want %s", tc.body, m["error"], tc.code)
		}
	}
	rec := serve(env.handler, "POST", "/runner/reports", runnerTok,
		[]byte(`{"reports":[{"run_id":"run_x","status":"completed"},{"run_id":"run_y","status":"done"},`+
			`{"run_id":"run_z","runner_id":"lnch_x","status":"completed"}]}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /runner/reports: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Results) != 3 {
		t.Fatalf("answer %s: %v", rec.Body, err)
	}
	if r := out.Results[2]; r["run_id"] != "run_z" || r["status"] != float64(403) || r["error"] != "runner_mismatch" {
		t.Errorf("result 2 = %v", r)
	}
	if r := out.Results[0]; r["run_id"] != "run_x" || r["status"] != float64(404) || r["error"] != "run_not_found" || r["message"] == "" {
		t.Errorf("result 0 = %v", r)
	}
	if r := out.Results[1]; r["run_id"] != "run_y" || r["status"] != float64(400) || r["error"] != "invalid_request" {
		t.Errorf("result 1 = %v", r)
	}
}
