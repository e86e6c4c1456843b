package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// ao show and ao sessions say where a session with retries stands: its attempt, how many it may make,
// and when the next one is due.
func TestAttemptsShown(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	next := now.Add(8 * time.Second)
	waiting := &orchestrator.Session{Status: orchestrator.SessionPending, Attempt: 2, MaxAttempts: 3, NextAttemptAt: &next}
	if got := attempts(now, waiting); !strings.HasPrefix(got, "2 of 3, next at ") || !strings.HasSuffix(got, "(in 8.0s)") {
		t.Errorf("attempts(waiting) = %q, want \"2 of 3, next at … (in 8.0s)\"", got)
	}
	if got := statusWithAttempts(now, waiting); got != "pending (retry 2/3 in 8.0s)" {
		t.Errorf("statusWithAttempts(waiting) = %q", got)
	}
	done := &orchestrator.Session{Status: orchestrator.SessionFailed, Attempt: 3, MaxAttempts: 3}
	if got := attempts(now, done); got != "3 of 3" {
		t.Errorf("attempts(spent) = %q, want \"3 of 3\"", got)
	}
	if got := statusWithAttempts(now, done); got != "failed" {
		t.Errorf("statusWithAttempts(spent) = %q, want failed", got)
	}
	if got := attempts(now, &orchestrator.Session{Attempt: 1, MaxAttempts: 1}); got != "" {
		t.Errorf("attempts(no retries) = %q, want nothing", got)
	}
}
