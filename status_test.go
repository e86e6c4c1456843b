package orchestrator

import (
	"slices"
	"testing"
)

var (
	allRunStatuses     = []RunStatus{RunPending, RunClaimed, RunRunning, RunCompleted, RunFailed, RunStopped}
	allSessionStatuses = []SessionStatus{SessionPending, SessionRunning, SessionCompleted, SessionFailed, SessionStopped, SessionWaiting}
)

// TestRunStatusCanTransition checks every pair of run statuses against the lifecycle the RunStatus doc
// comment draws: pending → claimed → running → completed | failed | stopped, pending and claimed may fail or
// stop, and a claimed run may complete (a run whose start report was lost ends from claimed).
func TestRunStatusCanTransition(t *testing.T) {
	t.Parallel()
	want := map[RunStatus][]RunStatus{
		RunPending: {RunClaimed, RunFailed, RunStopped},
		RunClaimed: {RunRunning, RunCompleted, RunFailed, RunStopped},
		RunRunning: {RunCompleted, RunFailed, RunStopped},
	}
	for _, from := range allRunStatuses {
		for _, to := range allRunStatuses {
			if got, w := from.CanTransition(to), slices.Contains(want[from], to); got != w {
				t.Errorf("%s.CanTransition(%s) = %v, want %v", from, to, got, w)
			}
		}
		// A terminal status is one no transition leaves.
		leaves := slices.ContainsFunc(allRunStatuses, from.CanTransition)
		if from.Terminal() == leaves {
			t.Errorf("%s: Terminal() = %v, yet a transition leaves it: %v", from, from.Terminal(), leaves)
		}
		if from.CanTransition(from) {
			t.Errorf("%s.CanTransition(%s) = true, want no transition to itself", from, from)
		}
	}
	for _, s := range []RunStatus{"", "done", "PENDING"} {
		if slices.ContainsFunc(allRunStatuses, s.CanTransition) || RunPending.CanTransition(s) {
			t.Errorf("the unknown status %q takes part in a transition", s)
		}
	}
}

// TestSessionStatusCanTransition checks every pair of session statuses against the lifecycle the
// SessionStatus doc comment draws, in which an ended session may become pending again (an AI session
// resumed).
func TestSessionStatusCanTransition(t *testing.T) {
	t.Parallel()
	want := map[SessionStatus][]SessionStatus{
		SessionPending:   {SessionRunning, SessionCompleted, SessionFailed, SessionStopped},
		SessionRunning:   {SessionCompleted, SessionFailed, SessionStopped, SessionWaiting},
		SessionWaiting:   {SessionPending, SessionRunning, SessionCompleted, SessionFailed, SessionStopped},
		SessionCompleted: {SessionPending},
		SessionFailed:    {SessionPending},
		SessionStopped:   {SessionPending},
	}
	for _, from := range allSessionStatuses {
		for _, to := range allSessionStatuses {
			if got, w := from.CanTransition(to), slices.Contains(want[from], to); got != w {
				t.Errorf("%s.CanTransition(%s) = %v, want %v", from, to, got, w)
			}
		}
		// An ended session can only be resumed; one in progress can always end.
		if from.Ended() != slices.Equal(want[from], []SessionStatus{SessionPending}) {
			t.Errorf("%s: Ended() = %v, which its transitions %v contradict", from, from.Ended(), want[from])
		}
	}
	if SessionStatus("").CanTransition(SessionPending) || SessionPending.CanTransition("") {
		t.Error("the empty status takes part in a transition")
	}
}
