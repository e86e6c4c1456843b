package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestStartRunModeAndType: over HTTP, type says start or resume and mode how the caller learns the
// outcome. The legacy "mode": "resume" is a sync resume when ?wait= is given (it waits and answers with
// the result) and async_poll otherwise; a Client sends the legacy form's Wait as ?wait= too.
func TestStartRunModeAndType(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(env.client(t, runnerTok).RegisterRunner(ctx, registration("h")))
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.client(t, adminTok).CreateAgent(ctx, aiAgent("writer")))
	// runAs plays the runner: it takes the next run and completes it with text.
	runAs := func(text string) *orchestrator.Run {
		t.Helper()
		w := must[*orchestrator.Work](t, "PollWork")(env.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1, Wait: 30 * time.Second}))
		if len(w.Runs) != 1 {
			t.Fatalf("poll: %+v, want one run", w)
		}
		r := w.Runs[0].Run
		check(t, "ReportRun", env.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: r.ID,
			Status: orchestrator.RunCompleted, Result: &orchestrator.Result{ResultType: "agent", ResultText: text}}))
		return r
	}
	// post sends POST target with body; the answer comes on the channel (a sync run answers when it ends).
	post := func(target, body string) <-chan *orchestrator.StartRunResult {
		out := make(chan *orchestrator.StartRunResult, 1)
		go func() {
			rec := serve(env.handler, "POST", target, clientTok, []byte(body))
			var res orchestrator.StartRunResult
			if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &res) != nil {
				t.Errorf("POST %s %s: %d %s", target, body, rec.Code, rec.Body)
				out <- nil
				return
			}
			out <- &res
		}()
		return out
	}
	first := <-post("/runs", `{"agent_name":"writer","prompt":"draft"}`)
	runAs("draft done")
	sid := first.SessionID

	for _, tc := range []struct {
		name, target, body string
		mode               orchestrator.Mode
	}{
		{"legacy resume with ?wait=", "/runs?wait=30s", `{"mode":"resume","session_id":"` + sid + `","prompt":"one"}`, orchestrator.ModeSync},
		{"type resume, mode sync", "/runs?wait=30s", `{"type":"resume","mode":"sync","session_id":"` + sid + `","prompt":"two"}`, orchestrator.ModeSync},
		{"legacy resume without ?wait=", "/runs", `{"mode":"resume","session_id":"` + sid + `","prompt":"three"}`, orchestrator.ModeAsyncPoll},
	} {
		answer := post(tc.target, tc.body)
		if tc.mode == orchestrator.ModeAsyncPoll {
			// An async resume answers before its run ends.
			if res := <-answer; res == nil || res.Status != orchestrator.SessionPending || res.Result != nil {
				t.Errorf("%s: %+v, want pending at once", tc.name, res)
			}
		}
		r := runAs(tc.name)
		if r.Type != orchestrator.RunTypeResume || r.Mode != tc.mode || r.SessionID != sid {
			t.Errorf("%s: run type %s mode %s, want resume %s", tc.name, r.Type, r.Mode, tc.mode)
		}
		if tc.mode == orchestrator.ModeSync {
			if res := <-answer; res == nil || res.Status != orchestrator.SessionCompleted || res.Result == nil || res.Result.ResultText != tc.name {
				t.Errorf("%s: %+v, want completed with the result", tc.name, res)
			}
		}
	}

	// The Client sends a legacy resume's Wait as ?wait= as well.
	done := make(chan *orchestrator.StartRunResult, 1)
	go func() {
		res, err := env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{Mode: "resume", SessionID: sid, Prompt: "four", Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("Client legacy resume: %v", err)
		}
		done <- res
	}()
	if r := runAs("four"); r.Mode != orchestrator.ModeSync {
		t.Errorf("Client legacy resume with Wait: run mode %s, want sync", r.Mode)
	}
	if res := <-done; res == nil || res.Status != orchestrator.SessionCompleted {
		t.Errorf("Client legacy resume with Wait: %+v, want completed", res)
	}

	// Errors say which field is which.
	for body, want := range map[string]string{
		`{"agent_name":"writer","mode":"start"}`:                      "start or resume is the type field",
		`{"agent_name":"writer","type":"sync"}`:                       "are modes (the mode field)",
		`{"mode":"resume","type":"start","session_id":"` + sid + `"}`: "legacy spelling of type resume",
	} {
		m := errorBody(t, serve(env.handler, "POST", "/runs?wait=1s", clientTok, []byte(body)), http.StatusBadRequest)
		if msg, _ := m["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("POST /runs %s: %q, want it to say %q", body, msg, want)
		}
	}
}
