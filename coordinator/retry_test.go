package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// retryEvents returns the data of a session's retry_scheduled events.
func retryEvents(t *testing.T, c *coordinator.Coordinator, sessionID string) []map[string]any {
	t.Helper()
	events, err := c.ListEvents(context.Background(), sessionID, 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range events {
		if ev.Type == orchestrator.EventRetryScheduled {
			var d map[string]any
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

func exitCode(n int) *orchestrator.Result {
	return &orchestrator.Result{ExitCode: &n, Error: "exit status"}
}

// A run that fails twice and then succeeds: each failure schedules the next attempt after the backoff,
// the session stays pending in between, and callers see only the final outcome.
func TestRetryAfterFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`),
		Retry: &orchestrator.RetryPolicy{MaxAttempts: 3, InitialIntervalSeconds: 10, BackoffCoefficient: 2}})
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Attempt != 1 || s.MaxAttempts != 3 || s.NextAttemptAt != nil {
		t.Fatalf("new session: attempt %d of %d, next %v; want 1 of 3, none", s.Attempt, s.MaxAttempts, s.NextAttemptAt)
	}
	runID := res.RunID
	for attempt := 1; attempt <= 2; attempt++ {
		w := poll(t, c, a.RunnerID, 1)
		if len(w.Runs) != 1 || w.Runs[0].Run.ID != runID || w.Runs[0].Run.Attempt != attempt {
			t.Fatalf("attempt %d: poll = %+v, want run %s", attempt, w, runID)
		}
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunRunning})
		failedAt := clk.Now()
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunFailed, Result: exitCode(3)})
		s, _ = c.GetSession(ctx, res.SessionID)
		if s.Status != orchestrator.SessionPending || s.Attempt != attempt+1 || s.NextAttemptAt == nil || s.CurrentRunID == runID {
			t.Fatalf("after failure %d: session %s attempt %d next %v run %s; want pending, attempt %d, a new run", attempt, s.Status, s.Attempt, s.NextAttemptAt, s.CurrentRunID, attempt+1)
		}
		interval := time.Duration(10<<(attempt-1)) * time.Second
		if wait := s.NextAttemptAt.Sub(failedAt); wait < interval*7/10-time.Millisecond || wait > interval*13/10+time.Millisecond {
			t.Fatalf("after failure %d: next attempt in %s, want %s ±30%%", attempt, wait, interval)
		}
		if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 0 {
			t.Fatalf("after failure %d: the retry was handed out before it was due: %+v", attempt, w.Runs[0].Run)
		}
		if out, err := c.WaitRun(ctx, res.RunID, 0); err != nil || out.Status != orchestrator.SessionPending {
			t.Fatalf("WaitRun between attempts = %+v, %v; want pending", out, err)
		}
		clk.Advance(interval * 14 / 10)
		runID = s.CurrentRunID
	}
	w := poll(t, c, a.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].Run.ID != runID || w.Runs[0].Run.Attempt != 3 {
		t.Fatalf("third attempt: poll = %+v", w)
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunRunning})
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunCompleted, Result: &orchestrator.Result{ResultText: "ok"}})
	s, _ = c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionCompleted || s.Attempt != 3 || s.NextAttemptAt != nil || s.Error != "" {
		t.Fatalf("final session: %s attempt %d next %v error %q; want completed, attempt 3", s.Status, s.Attempt, s.NextAttemptAt, s.Error)
	}
	evs := retryEvents(t, c, res.SessionID)
	if len(evs) != 2 || evs[0]["attempt"] != 2.0 || evs[1]["attempt"] != 3.0 || evs[0]["reason"] != "exit_code" || evs[0]["run_id"] != res.RunID {
		t.Fatalf("retry_scheduled events = %v", evs)
	}
	out, err := c.WaitRun(ctx, res.RunID, 0)
	if err != nil || out.Status != orchestrator.SessionCompleted || out.Result == nil || out.Result.ResultText != "ok" {
		t.Fatalf("WaitRun(first attempt) = %+v, %v; want the final outcome, completed", out, err)
	}
	first, _ := c.GetRun(ctx, res.RunID)
	if first.Status != orchestrator.RunFailed || first.Attempt != 1 {
		t.Fatalf("first run: %s attempt %d, want failed attempt 1", first.Status, first.Attempt)
	}
}

// Spent attempts end the session with an error that says how many were made; a non-retryable exit code
// and a stopped run end it at once.
func TestRetryEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	a := register(t, c, "host-a", crawler())
	policy := &orchestrator.RetryPolicy{MaxAttempts: 2, InitialIntervalSeconds: 1, NonRetryableExitCodes: []int{2}}
	startOne := func() *orchestrator.StartRunResult {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`), Retry: policy})
		poll(t, c, a.RunnerID, 1)
		return res
	}

	spent := startOne()
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: spent.RunID, Status: orchestrator.RunFailed, Result: exitCode(1)})
	clk.Advance(2 * time.Second)
	w := poll(t, c, a.RunnerID, 1)
	if len(w.Runs) != 1 {
		t.Fatalf("the retry was not handed out once due")
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: w.Runs[0].Run.ID, Status: orchestrator.RunFailed, Result: exitCode(1)})
	s, _ := c.GetSession(ctx, spent.SessionID)
	if s.Status != orchestrator.SessionFailed || !strings.HasPrefix(s.Error, "failed after 2 attempts: ") {
		t.Fatalf("spent session: %s %q, want failed \"failed after 2 attempts: …\"", s.Status, s.Error)
	}

	fatal := startOne()
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: fatal.RunID, Status: orchestrator.RunFailed, Result: exitCode(2)})
	if s, _ := c.GetSession(ctx, fatal.SessionID); s.Status != orchestrator.SessionFailed || s.Attempt != 1 {
		t.Fatalf("non-retryable exit: session %s attempt %d, want failed at attempt 1", s.Status, s.Attempt)
	}

	stopped := startOne()
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: stopped.RunID, Status: orchestrator.RunStopped})
	if s, _ := c.GetSession(ctx, stopped.SessionID); s.Status != orchestrator.SessionStopped {
		t.Fatalf("stopped run: session %s, want stopped", s.Status)
	}
	if n := len(retryEvents(t, c, fatal.SessionID)) + len(retryEvents(t, c, stopped.SessionID)); n != 0 {
		t.Fatalf("%d retries scheduled for runs that must not be retried", n)
	}
}

// A deterministic agent without a policy is not retried; an AI agent without one retries only the model
// API's passing failures.
func TestRetryDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	det := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	poll(t, c, a.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: det.RunID, Status: orchestrator.RunFailed, Result: exitCode(1)})
	if s, _ := c.GetSession(ctx, det.SessionID); s.Status != orchestrator.SessionFailed || s.MaxAttempts != 1 {
		t.Fatalf("deterministic without a policy: %s, max attempts %d; want failed, 1", s.Status, s.MaxAttempts)
	}

	createAgent(t, c, "writer")
	ai := registerAI(t, c, "host-b")
	for _, tc := range []struct {
		code  string
		retry bool
	}{{"api_overloaded", true}, {"api_rate_limited", true}, {"api_error", true}, {"", false}, {"budget_exceeded", false}} {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi"})
		poll(t, c, ai.RunnerID, 1)
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunFailed,
			Result: &orchestrator.Result{Error: "boom", ErrorCode: tc.code}})
		s, _ := c.GetSession(ctx, res.SessionID)
		if got := s.Status == orchestrator.SessionPending; got != tc.retry || s.MaxAttempts != orchestrator.DefaultAgentRetryPolicy().MaxAttempts {
			t.Errorf("AI agent, error code %q: session %s (max attempts %d), retried %v, want %v", tc.code, s.Status, s.MaxAttempts, got, tc.retry)
		}
		if tc.retry {
			if _, err := c.StopSession(ctx, res.SessionID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A usage limit's reset time is when its retry is due.
func TestRetryWaitsForUsageLimitReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	createAgent(t, c, "writer")
	ai := registerAI(t, c, "host-b")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi"})
	poll(t, c, ai.RunnerID, 1)
	reset := clk.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunFailed,
		Result: &orchestrator.Result{Error: "usage limit", ErrorCode: "usage_limit", RetryAt: &reset}})
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionPending || s.NextAttemptAt == nil || !s.NextAttemptAt.Equal(reset) {
		t.Fatalf("usage limit: session %s, next attempt %v; want pending until %v", s.Status, s.NextAttemptAt, reset)
	}
	if evs := retryEvents(t, c, res.SessionID); len(evs) != 1 || evs[0]["reason"] != "usage_limit" {
		t.Fatalf("retry_scheduled = %v, want one with reason usage_limit", evs)
	}
}

// A policy out of bounds is refused with invalid_retry_policy, naming the field, and creates nothing.
func TestRetryPolicyValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	register(t, c, "host-a", crawler())
	for _, tc := range []struct {
		policy orchestrator.RetryPolicy
		field  string
	}{
		{orchestrator.RetryPolicy{MaxAttempts: 0}, "max_attempts"},
		{orchestrator.RetryPolicy{MaxAttempts: 101}, "max_attempts"},
		{orchestrator.RetryPolicy{MaxAttempts: 2, InitialIntervalSeconds: -1}, "initial_interval_seconds"},
		{orchestrator.RetryPolicy{MaxAttempts: 2, MaxIntervalSeconds: -1}, "max_interval_seconds"},
		{orchestrator.RetryPolicy{MaxAttempts: 2, BackoffCoefficient: 0.5}, "backoff_coefficient"},
		{orchestrator.RetryPolicy{MaxAttempts: 2, NonRetryableExitCodes: []int{0}}, "non_retryable_exit_codes"},
	} {
		_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`), Retry: &tc.policy})
		var e *orchestrator.Error
		if !errors.As(err, &e) || e.Code != "invalid_retry_policy" || !strings.Contains(e.Message, tc.field) || !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("policy %+v: err %v, want invalid_retry_policy naming %s", tc.policy, err, tc.field)
		}
	}
	bp := crawler()
	bp.Name, bp.Retry = "bad", &orchestrator.RetryPolicy{MaxAttempts: -1}
	if err := bp.Validate(); orchestrator.ErrorCode(err) != "invalid_retry_policy" {
		t.Errorf("blueprint with a bad retry: %v, want invalid_retry_policy", err)
	}
	if page, _ := c.ListSessions(ctx, orchestrator.SessionFilter{}); len(page.Sessions) != 0 {
		t.Errorf("refused starts created %d sessions", len(page.Sessions))
	}
}

// A runner lost during a run: under a policy the run is retried (reason runner_lost).
func TestRetryAfterRunnerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{StaleAfter: time.Minute, OfflineAfter: 3 * time.Minute, Now: clk.Now})
	createAgent(t, c, "writer")
	lost := registerAI(t, c, "host-a")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi", Retry: &orchestrator.RetryPolicy{MaxAttempts: 2, InitialIntervalSeconds: 1}})
	poll(t, c, lost.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: lost.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	clk.Advance(4 * time.Minute)
	other := registerAI(t, c, "host-b")
	c.Sweep(ctx, false)
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionPending || s.Attempt != 2 {
		t.Fatalf("after the runner was lost: session %s attempt %d, want pending attempt 2", s.Status, s.Attempt)
	}
	if evs := retryEvents(t, c, res.SessionID); len(evs) != 1 || evs[0]["reason"] != "runner_lost" {
		t.Fatalf("retry_scheduled = %v, want reason runner_lost", evs)
	}
	clk.Advance(2 * time.Second)
	if w := poll(t, c, other.RunnerID, 1); len(w.Runs) != 1 || w.Runs[0].Run.Attempt != 2 {
		t.Fatalf("another runner did not get the retry: %+v", w)
	}
}

// An AI agent whose executor recorded its own session id is retried by resuming that session, on the
// runner that holds it, with a prompt that takes the failed turn up again.
func TestRetryResumesTheExecutorSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	createAgent(t, c, "writer")
	ai := registerAI(t, c, "host-a")
	registerAI(t, c, "host-b")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi"})
	if w := poll(t, c, ai.RunnerID, 1); len(w.Runs) != 1 || w.Runs[0].Run.Attempt != 1 {
		t.Fatalf("first attempt: %+v", w)
	}
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	if _, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{orchestrator.NewEvent(orchestrator.EventExecutorSession, map[string]string{"executor_session_id": "claude-1"})}); err != nil {
		t.Fatal(err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunFailed,
		Result: &orchestrator.Result{Error: "API Error: 529 Overloaded", ErrorCode: "api_overloaded"}})
	s, _ := c.GetSession(ctx, res.SessionID)
	next, _ := c.GetRun(ctx, s.CurrentRunID)
	if next.Type != orchestrator.RunTypeResume || next.Demands.RunnerID != ai.RunnerID || !strings.Contains(string(next.Parameters), "Continue the task") {
		t.Fatalf("the retry: type %s, pinned to %q, parameters %s; want a resume on %s", next.Type, next.Demands.RunnerID, next.Parameters, ai.RunnerID)
	}
	clk.Advance(time.Minute)
	w := poll(t, c, ai.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].ExecutorSessionID != "claude-1" || w.Runs[0].Run.Attempt != 2 {
		t.Fatalf("the retry's assignment: %+v, want executor session claude-1, attempt 2", w)
	}
}
