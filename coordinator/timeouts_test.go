package coordinator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// A run past its timeout: the sweep tells its runner to stop it, and the stopped report fails it with
// error code timeout; a runner that does not stop it within the grace has it failed by the coordinator.
func TestTimeoutIsEnforcedByTheCoordinator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now, TimeoutGrace: 20 * time.Second, StaleAfter: time.Hour, OfflineAfter: 2 * time.Hour})
	createAgent(t, c, "writer")
	ai := registerAI(t, c, "host-a")
	startHeld := func(timeout float64) *orchestrator.StartRunResult {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi", TimeoutSeconds: timeout})
		poll(t, c, ai.RunnerID, 1)
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
		return res
	}

	obeys := startHeld(60)
	clk.Advance(59 * time.Second)
	c.Sweep(ctx, false)
	if r, _ := c.GetRun(ctx, obeys.RunID); r.StopRequestedAt != nil || r.TimedOutAt != nil {
		t.Fatalf("a run within its timeout was stopped")
	}
	clk.Advance(2 * time.Second)
	c.Sweep(ctx, false)
	if r, _ := c.GetRun(ctx, obeys.RunID); r.StopRequestedAt == nil || r.TimedOutAt == nil {
		t.Fatalf("a run past its timeout: no stop requested")
	}
	if w := poll(t, c, ai.RunnerID, 0); !slices.Contains(w.Stop, obeys.SessionID) {
		t.Fatalf("the runner was not told to stop the timed-out run: %+v", w)
	}
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: obeys.RunID, Status: orchestrator.RunStopped})
	s, _ := c.GetSession(ctx, obeys.SessionID)
	if s.Status != orchestrator.SessionFailed || s.ErrorCode != "timeout" || s.Error != "timed out after 1m0s" {
		t.Fatalf("after the runner stopped it: session %s %q code %q; want failed \"timed out after 1m0s\" timeout", s.Status, s.Error, s.ErrorCode)
	}
	if r, _ := c.GetRun(ctx, obeys.RunID); r.Status != orchestrator.RunFailed {
		t.Fatalf("the timed-out run is %s, want failed", r.Status)
	}

	ignores := startHeld(30)
	clk.Advance(31 * time.Second)
	c.Sweep(ctx, false)
	clk.Advance(19 * time.Second)
	c.Sweep(ctx, false)
	if s, _ := c.GetSession(ctx, ignores.SessionID); s.Status != orchestrator.SessionRunning {
		t.Fatalf("within the grace: session %s, want still running", s.Status)
	}
	clk.Advance(2 * time.Second)
	c.Sweep(ctx, false)
	s, _ = c.GetSession(ctx, ignores.SessionID)
	if s.Status != orchestrator.SessionFailed || s.ErrorCode != "timeout" || !strings.HasPrefix(s.Error, "timed out after 30s") {
		t.Fatalf("past the grace: session %s %q code %q; want failed by the coordinator, timeout", s.Status, s.Error, s.ErrorCode)
	}
}

// A timeout is retried under a given policy (reason timeout); the request's timeout overrides the
// blueprint's.
func TestTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now, StaleAfter: time.Hour, OfflineAfter: 2 * time.Hour})
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "writer", TimeoutSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	ai := registerAI(t, c, "host-a")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi", TimeoutSeconds: 10,
		Retry: &orchestrator.RetryPolicy{MaxAttempts: 2, InitialIntervalSeconds: 1}})
	if r, _ := c.GetRun(ctx, res.RunID); r.TimeoutSeconds != 10 {
		t.Fatalf("run timeout %v, want the request's 10", r.TimeoutSeconds)
	}
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	clk.Advance(11 * time.Second)
	c.Sweep(ctx, false)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunStopped})
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionPending || s.Attempt != 2 {
		t.Fatalf("timed-out attempt under a policy: session %s attempt %d, want pending attempt 2", s.Status, s.Attempt)
	}
	if evs := retryEvents(t, c, res.SessionID); len(evs) != 1 || evs[0]["reason"] != "timeout" {
		t.Fatalf("retry_scheduled = %v, want reason timeout", evs)
	}
	if r, _ := c.GetRun(ctx, s.CurrentRunID); r.TimeoutSeconds != 10 || r.Attempt != 2 {
		t.Fatalf("the retry: timeout %v attempt %d, want 10 and 2", r.TimeoutSeconds, r.Attempt)
	}
}

// A session no runner takes by its start deadline fails with start_timeout, and is not retried.
func TestStartDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	createAgent(t, c, "writer")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi", StartTimeoutSeconds: 10,
		Retry: &orchestrator.RetryPolicy{MaxAttempts: 3}})
	clk.Advance(9 * time.Second)
	c.Sweep(ctx, false)
	if s, _ := c.GetSession(ctx, res.SessionID); s.Status != orchestrator.SessionPending {
		t.Fatalf("before the start deadline: %s, want pending", s.Status)
	}
	clk.Advance(2 * time.Second)
	c.Sweep(ctx, false)
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionFailed || s.ErrorCode != "start_timeout" || s.Attempt != 1 {
		t.Fatalf("past the start deadline: session %s code %q attempt %d; want failed start_timeout, not retried", s.Status, s.ErrorCode, s.Attempt)
	}
	for _, bad := range []orchestrator.StartRunParams{
		{AgentName: "writer", Prompt: "hi", TimeoutSeconds: -1},
		{AgentName: "writer", Prompt: "hi", StartTimeoutSeconds: 8 * 24 * 3600},
	} {
		if _, err := c.StartRun(ctx, bad); orchestrator.ErrorCode(err) != "invalid_timeout" {
			t.Errorf("StartRun(timeout %v, start timeout %v) = %v, want invalid_timeout", bad.TimeoutSeconds, bad.StartTimeoutSeconds, err)
		}
	}
}
