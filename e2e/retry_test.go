//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// Runs that recover by themselves, on the real binaries: a command that fails twice and then succeeds
// completes, with two retry_scheduled events spaced by the backoff; a non-retryable exit code fails at
// once; an attempt past its timeout_seconds fails with error code timeout; a session no runner takes by
// its start_timeout_seconds fails with start_timeout.
func TestRetries(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "flaky", blueprints: []string{testAgent("flaky")}})
	a := co.admin()
	events := func(t *testing.T, sessionID, typ string) []*orchestrator.Event {
		var out []*orchestrator.Event
		for _, e := range a.with(t).events(sessionID) {
			if e.Type == typ {
				out = append(out, e)
			}
		}
		return out
	}
	session := func(t *testing.T, id string) orchestrator.Session {
		var s orchestrator.Session
		a.with(t).json("GET", "/sessions/"+id, nil, http.StatusOK, &s)
		return s
	}

	t.Run("fails twice, then succeeds", func(t *testing.T) {
		s := a.with(t).startRun(map[string]any{"agent_name": "flaky", "parameters": map[string]any{"log": c.path("twice.log"), "fail_first": 2},
			"retry": map[string]any{"max_attempts": 3, "initial_interval_seconds": 0.5, "backoff_coefficient": 2}})
		r := a.with(t).result(s.SessionID)
		if r.Status != "completed" {
			t.Fatalf("result: %s, want completed at the third attempt", mustJSON(t, r))
		}
		if sess := session(t, s.SessionID); sess.Attempt != 3 || sess.MaxAttempts != 3 || sess.NextAttemptAt != nil {
			t.Errorf("session: %s, want attempt 3 of 3", mustJSON(t, sess))
		}
		retried := events(t, s.SessionID, orchestrator.EventRetryScheduled)
		if len(retried) != 2 {
			t.Fatalf("retry_scheduled events: %s, want 2", mustJSON(t, retried))
		}
		for i, ev := range retried {
			var d struct {
				RunID         string    `json:"run_id"`
				Attempt       int       `json:"attempt"`
				NextAttemptAt time.Time `json:"next_attempt_at"`
				Reason        string    `json:"reason"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			interval := time.Duration(500<<i) * time.Millisecond // 0.5 s, then 1 s
			wait := d.NextAttemptAt.Sub(ev.Time)
			if d.Attempt != i+2 || d.Reason != "exit_code" || d.RunID == "" || wait < interval*7/10-time.Millisecond || wait > interval*13/10+time.Millisecond {
				t.Errorf("retry_scheduled %d: %+v, due %s after it; want attempt %d, exit_code, %s ±30%%", i, d, wait, i+2, interval)
			}
		}
		var runs struct {
			Runs []*orchestrator.Run `json:"runs"`
		}
		a.with(t).json("GET", "/runs?session_id="+s.SessionID, nil, http.StatusOK, &runs)
		if len(runs.Runs) != 3 || runs.Runs[0].Status != orchestrator.RunFailed || runs.Runs[2].Status != orchestrator.RunCompleted || runs.Runs[2].Attempt != 3 {
			t.Errorf("runs: %s, want failed, failed, completed (attempts 1 to 3)", mustJSON(t, runs.Runs))
		}
	})

	t.Run("a non-retryable exit code fails at once", func(t *testing.T) {
		s := a.with(t).startRun(map[string]any{"agent_name": "flaky", "parameters": map[string]any{"exit": 2},
			"retry": map[string]any{"max_attempts": 3, "initial_interval_seconds": 0.1, "non_retryable_exit_codes": []int{2}}})
		r := a.with(t).result(s.SessionID)
		if r.Status != "failed" || strings.HasPrefix(r.Error, "failed after") {
			t.Fatalf("result: %s, want failed at the first attempt", mustJSON(t, r))
		}
		if sess := session(t, s.SessionID); sess.Attempt != 1 || len(events(t, s.SessionID, orchestrator.EventRetryScheduled)) != 0 {
			t.Errorf("session: %s, want one attempt and no retry", mustJSON(t, sess))
		}
	})

	t.Run("an attempt past its timeout fails with timeout", func(t *testing.T) {
		s := a.with(t).startRun(map[string]any{"agent_name": "flaky", "parameters": map[string]any{"sleep_ms": 60000}, "timeout_seconds": 1})
		r := a.with(t).result(s.SessionID)
		if sess := session(t, s.SessionID); r.Status != "failed" || sess.ErrorCode != "timeout" || !strings.HasPrefix(r.Error, "timed out after 1s") {
			t.Fatalf("result: %s, session %s; want failed, error_code timeout", mustJSON(t, r), mustJSON(t, sess))
		}
	})

	t.Run("no runner by the start deadline", func(t *testing.T) {
		a.with(t).json("POST", "/agents", map[string]any{"name": "lonely", "type": "agent"}, http.StatusCreated, nil)
		s := a.with(t).startRun(map[string]any{"agent_name": "lonely", "prompt": "hi", "start_timeout_seconds": 1,
			"retry": map[string]any{"max_attempts": 3}})
		r := a.with(t).result(s.SessionID)
		if sess := session(t, s.SessionID); r.Status != "failed" || sess.ErrorCode != "start_timeout" || sess.Attempt != 1 {
			t.Fatalf("result: %s, session %s; want failed, error_code start_timeout, not retried", mustJSON(t, r), mustJSON(t, sess))
		}
	})
}
