package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// Every route named in resultRoutes exists: a typo there would leave a report route at MaxBodyBytes.
func TestResultRoutesExist(t *testing.T) {
	t.Parallel()
	for key := range resultRoutes {
		found := false
		for _, rt := range Routes() {
			found = found || rt.String() == key
		}
		if !found {
			t.Errorf("resultRoutes names %q, which is not a route", key)
		}
	}
}

// The report routes' body limit follows the coordinator's result limit rather than MaxBodyBytes, and a
// registering runner is told the result limit; the other routes keep MaxBodyBytes.
func TestReportBodyFollowsResultLimit(t *testing.T) {
	t.Parallel()
	const resultLimit = 1 << 20
	env := newEnv(t, Config{MaxBodyBytes: 64 << 10}, coordinator.Config{Limits: orchestrator.Limits{MaxResultBytes: resultLimit}})
	runner := env.client(t, runnerTok)
	ctx := ctxT(t)

	reg := must[*orchestrator.Registration](t, "RegisterRunner")(runner.RegisterRunner(ctx, registration("h1")))
	if reg.MaxResultBytes != resultLimit {
		t.Errorf("registration max_result_bytes = %d, want the coordinator's %d", reg.MaxResultBytes, resultLimit)
	}
	rid, cred, runs := claimedRuns(t, env, "h2", 3)
	post := func(run *orchestrator.Run, text string) (int, string) {
		body, _ := json.Marshal(map[string]any{"runner_id": rid, "result": map[string]any{"result_type": "deterministic", "result_text": text}})
		rec := serve(env.handler, "POST", "/runner/runs/"+run.ID+"/completed", cred, body)
		return rec.Code, rec.Body.String()
	}
	// A result well above MaxBodyBytes, within the result limit: accepted.
	if code, body := post(runs[0], strings.Repeat("x", 900<<10)); code != http.StatusNoContent {
		t.Errorf("a 900 KiB result: %d %s, want 204", code, body)
	}
	// Above the result limit, within the body limit: refused by the coordinator, saying why.
	if code, body := post(runs[1], strings.Repeat("x", resultLimit+1)); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "result_too_large") {
		t.Errorf("a result over the limit: %d %s, want 413 result_too_large", code, body)
	}
	// Above the body limit (2 × 1 MiB + 1 MiB): refused unread.
	if code, body := post(runs[2], strings.Repeat("x", 3<<20+1)); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "body_too_large") {
		t.Errorf("a body over the report limit: %d %s, want 413 body_too_large", code, body)
	}
	if r := must[*orchestrator.Run](t, "GetRun")(env.coord.GetRun(ctx, runs[1].ID)); r.Status != orchestrator.RunClaimed {
		t.Errorf("the run whose report was refused is %s, want still claimed", r.Status)
	}
	// Other routes keep MaxBodyBytes.
	big, _ := json.Marshal(map[string]any{"agent_name": "web-crawler", "parameters": map[string]any{"url": "https://example.com", "pad": strings.Repeat("x", 100<<10)}})
	if rec := serve(env.handler, "POST", "/runs", clientTok, big); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /runs with a 100 KiB body: %d, want 413 (MaxBodyBytes 64 KiB)", rec.Code)
	}
}

// With the defaults, a report of a few MB — more than MaxBodyBytes — is accepted: the runner was never
// refused output its own executor allows.
func TestReportDefaultsAcceptSeveralMB(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	rid, cred, runs := claimedRuns(t, env, "h1", 1)
	runner := env.client(t, cred)
	err := runner.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: runs[0].ID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultType: "deterministic", ResultText: strings.Repeat("x", 3_000_000)}})
	if err != nil {
		t.Fatalf("a 3 MB result: %v, want it accepted", err)
	}
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(env.client(t, runnerTok).RegisterRunner(ctx, registration("h2")))
	if reg.MaxResultBytes != int64(orchestrator.Limits{}.WithDefaults().MaxResultBytes) {
		t.Errorf("max_result_bytes = %d, want %d", reg.MaxResultBytes, orchestrator.Limits{}.WithDefaults().MaxResultBytes)
	}
}

// A registration announces no more than the handler's own report limit lets through.
func TestRegistrationAnnouncesTheSmallerLimit(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{MaxReportBytes: 3 << 20}, coordinator.Config{})
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(env.client(t, runnerTok).RegisterRunner(ctxT(t), registration("h1")))
	if reg.MaxResultBytes != 2<<20 {
		t.Errorf("max_result_bytes = %d, want 2 MiB (3 MiB reports less 1 MiB for the envelope)", reg.MaxResultBytes)
	}
}

// In POST /runner/reports an oversized result refuses its own report only.
func TestReportsBatchWithOneOversizedResult(t *testing.T) {
	t.Parallel()
	const resultLimit = 256 << 10
	env := newEnv(t, Config{}, coordinator.Config{Limits: orchestrator.Limits{MaxResultBytes: resultLimit}})
	ctx := ctxT(t)
	rid, cred, runs := claimedRuns(t, env, "h1", 3)
	runner := env.client(t, cred)
	reps := make([]orchestrator.RunReport, 3)
	for i, r := range runs {
		reps[i] = orchestrator.RunReport{RunnerID: rid, RunID: r.ID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultType: "deterministic", ResultText: "ok"}}
	}
	reps[1].Result.ResultText = strings.Repeat("x", resultLimit+1)
	errs := runner.ReportRuns(ctx, reps)
	for i, err := range errs {
		if i == 1 {
			if !errors.Is(err, orchestrator.ErrTooLarge) || orchestrator.ErrorCode(err) != "result_too_large" {
				t.Errorf("the oversized report: %v, want result_too_large", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("report %d: %v, want nil", i, err)
		}
		if s := must[*orchestrator.Session](t, "GetSession")(env.coord.GetSession(ctx, runs[i].SessionID)); s.Status != orchestrator.SessionCompleted {
			t.Errorf("session %d is %s, want completed", i, s.Status)
		}
	}
}
