package coordinator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/coordinator"

	"github.com/agentorchestrator/orchestrator"
)

// TestStartRunModeAndType: mode is how the caller learns the outcome, type whether the run starts or
// resumes a session. The legacy "mode": "resume" is a resume that waits (sync) when the caller asks to
// wait, and async_poll otherwise.
func TestStartRunModeAndType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "writer")
	ai := registerAI(t, c, "host-ai")
	finish := func(runID, text string) {
		t.Helper()
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: runID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultType: "agent", ResultText: text}})
	}
	// claim takes the next run off the queue, waiting for it.
	claim := func() *orchestrator.Run {
		t.Helper()
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: ai.RunnerID, Max: 1, Wait: 30 * time.Second})
		if err != nil || len(w.Runs) != 1 {
			t.Fatalf("poll: %+v, %v", w, err)
		}
		return w.Runs[0].Run
	}
	first := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "draft"})
	finish(claim().ID, "draft done")

	// Legacy resume without a wait: async_poll.
	res := start(t, c, orchestrator.StartRunParams{Mode: "resume", SessionID: first.SessionID, Prompt: "again"})
	if res.Status != orchestrator.SessionPending || res.Result != nil {
		t.Errorf("legacy resume without a wait = %+v, want pending at once", res)
	}
	if r := claim(); r.ID != res.RunID || r.Type != orchestrator.RunTypeResume || r.Mode != orchestrator.ModeAsyncPoll {
		t.Errorf("legacy resume's run: type %s mode %s, want resume async_poll", r.Type, r.Mode)
	}
	finish(res.RunID, "again done")

	// Legacy resume with a wait: a sync resume, answered with the result.
	done := make(chan *orchestrator.StartRunResult, 1)
	go func() {
		r, err := c.StartRun(ctx, orchestrator.StartRunParams{Mode: "resume", SessionID: first.SessionID, Prompt: "final", Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("legacy resume with a wait: %v", err)
		}
		done <- r
	}()
	r := claim()
	if r.Type != orchestrator.RunTypeResume || r.Mode != orchestrator.ModeSync {
		t.Errorf("legacy resume with a wait: run type %s mode %s, want resume sync", r.Type, r.Mode)
	}
	finish(r.ID, "final done")
	if got := <-done; got == nil || got.Status != orchestrator.SessionCompleted || got.Result == nil || got.Result.ResultText != "final done" {
		t.Errorf("legacy resume with a wait = %+v, want completed with the result", got)
	}

	for _, tc := range []struct {
		p    orchestrator.StartRunParams
		want string
	}{
		{orchestrator.StartRunParams{Mode: "resume", Type: orchestrator.RunTypeStart, AgentName: "writer"}, `legacy spelling of type resume`},
		{orchestrator.StartRunParams{Mode: "start", AgentName: "writer"}, "start or resume is the type field"},
		{orchestrator.StartRunParams{Type: "sync", AgentName: "writer"}, "are modes (the mode field)"},
	} {
		_, err := c.StartRun(ctx, tc.p)
		if orchestrator.ErrorCode(err) != "invalid_request" || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StartRun(mode %q, type %q) = %v, want invalid_request saying %q", tc.p.Mode, tc.p.Type, err, tc.want)
		}
	}
}
