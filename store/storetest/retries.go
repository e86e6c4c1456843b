package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// A retry is written in the transaction that ends the failing attempt: the run failed, the next attempt's
// run created pending and due later, and the session back to pending with it as its current run. These
// cases hold a store to what that needs: the write is whole or absent, of concurrent ends of one run
// exactly one writes a retry, and the next attempt is claimable at its time and not before, after a
// restart too.

// retryAttempt is the attempt of the run a retry case fails.
const retryAttempt = 1

// startRetryCase stores a session whose first attempt the runner of the returned params has claimed.
func startRetryCase(t *testing.T, s store.Store) store.ClaimParams {
	t.Helper()
	se := newSession("ses_r", base)
	se.Demands, se.Attempt, se.MaxAttempts = orchestrator.Demands{}, retryAttempt, 3
	se.Retry = &orchestrator.RetryPolicy{MaxAttempts: 3, InitialIntervalSeconds: 5, NonRetryableExitCodes: []int{2}}
	first := newRun("run_r1", "ses_r", base)
	first.AgentType, first.Attempt, first.MaxAttempts = orchestrator.AgentTypeDeterministic, retryAttempt, 3
	first.Demands.RunnerID = "lnch_r" // the runner that owns the deterministic agent
	must(t, "CreateSessionWithRun", s.CreateSessionWithRun(ctx(t), se, first))
	runner := newRunner("lnch_r")
	must(t, "PutRunner", s.PutRunner(ctx(t), runner))
	p := store.ClaimParams{Runner: runner, Now: at(1), Max: 1}
	if _, err := claimOne(ctx(t), s, p); err != nil {
		t.Fatalf("claim the first attempt: %v", err)
	}
	return p
}

// nextAttempt is the run a retry of run_r1 creates, due at due.
func nextAttempt(id string, due time.Time) *orchestrator.Run {
	r := newRun(id, "ses_r", at(5))
	r.AgentType, r.Attempt, r.MaxAttempts, r.RunAt = orchestrator.AgentTypeDeterministic, retryAttempt+1, 3, &due
	r.Demands.RunnerID = "lnch_r"
	return r
}

// writeRetry is the coordinator's retry write: in one transaction, run_r1 failed, next created and the
// session pending with it.
func writeRetry(ctx context.Context, s store.Store, next *orchestrator.Run) error {
	return s.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if _, err := tx.UpdateRun(ctx, "run_r1", runStatusesBefore(orchestrator.RunFailed), "lnch_r", store.RunUpdate{
			Status: ptr(orchestrator.RunFailed), Error: ptr("exit status 1"), EndedAt: ptr(at(5)),
		}); err != nil {
			return err
		}
		if err := tx.CreateRun(ctx, next); err != nil {
			return err
		}
		_, err := tx.UpdateSession(ctx, "ses_r", []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning}, store.SessionUpdate{
			Status: ptr(orchestrator.SessionPending), CurrentRunID: &next.ID, Attempt: &next.Attempt, NextAttemptAt: next.RunAt, UpdatedAt: at(5),
			AppendEvents: []*orchestrator.Event{ptr(orchestrator.NewEvent(orchestrator.EventRetryScheduled, map[string]any{
				"run_id": "run_r1", "attempt": next.Attempt, "next_attempt_at": next.RunAt, "reason": "exit_code",
			}))},
		})
		return err
	})
}

// checkRetried checks the state a retry write leaves: run_r1 failed, next pending and due, the session
// pending on it with the retry event, and next claimable at its time but not before.
func checkRetried(t *testing.T, s store.Store, next *orchestrator.Run, p store.ClaimParams) {
	t.Helper()
	failed, err := s.GetRun(ctx(t), "run_r1")
	must(t, "GetRun(run_r1)", err)
	if failed.Status != orchestrator.RunFailed || failed.Attempt != retryAttempt {
		t.Fatalf("failed attempt: %s attempt %d, want failed attempt %d", failed.Status, failed.Attempt, retryAttempt)
	}
	got, err := s.GetRun(ctx(t), next.ID)
	must(t, "GetRun(next)", err)
	equal(t, "the next attempt's run", got, next)
	se, err := s.GetSession(ctx(t), "ses_r")
	must(t, "GetSession", err)
	if se.Status != orchestrator.SessionPending || se.CurrentRunID != next.ID || se.Attempt != next.Attempt ||
		se.MaxAttempts != 3 || se.NextAttemptAt == nil || !se.NextAttemptAt.Equal(*next.RunAt) || se.Retry == nil || se.Retry.NonRetryableExitCodes[0] != 2 {
		t.Fatalf("session after the retry write: %s", show(se))
	}
	if _, err := s.LastEvent(ctx(t), "ses_r", []string{orchestrator.EventRetryScheduled}, 0); err != nil {
		t.Fatalf("retry_scheduled event: %v", err)
	}
	early := p
	early.Now = next.RunAt.Add(-time.Millisecond)
	if rs, err := s.ClaimRuns(ctx(t), early); err != nil || len(rs) != 0 {
		t.Fatalf("claim before the next attempt is due = %v, %v; want none", runIDs(rs), err)
	}
	due := p
	due.Now = *next.RunAt
	if r, err := claimOne(ctx(t), s, due); err != nil || r.ID != next.ID {
		t.Fatalf("claim once the next attempt is due = %v, %v; want %s", r, err, next.ID)
	}
}

func testRetries(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("RetryWrite", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := startRetryCase(t, s)
		next := nextAttempt("run_r2", at(500))
		must(t, "retry write", writeRetry(ctx(t), s, next))
		checkRetried(t, s, next, p)
	})

	t.Run("RetryWriteIsWhole", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		startRetryCase(t, s)
		// The session has ended (stopped) meanwhile: its guard fails the write, which must leave nothing of it.
		_, err := s.UpdateSession(ctx(t), "ses_r", nil, store.SessionUpdate{Status: ptr(orchestrator.SessionStopped), UpdatedAt: at(3)})
		must(t, "stop the session", err)
		wantErr(t, "retry write on an ended session", writeRetry(ctx(t), s, nextAttempt("run_r2", at(500))), orchestrator.ErrConflict)
		if r, err := s.GetRun(ctx(t), "run_r1"); err != nil || r.Status != orchestrator.RunClaimed {
			t.Fatalf("the failing run after a refused retry write: %v, %v; want still claimed", r, err)
		}
		_, err = s.GetRun(ctx(t), "run_r2")
		wantErr(t, "the next attempt of a refused retry write", err, orchestrator.ErrNotFound)
	})

	t.Run("TimeoutSweeps", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := startRetryCase(t, s) // run_r1, claimed, without a timeout
		timed := nextAttempt("run_timed", at(1))
		timed.RunAt, timed.TimeoutSeconds = nil, 1.5
		deadline := newRun("run_deadline", "ses_r", at(2))
		deadline.StartDeadline, deadline.Demands.Hostname = ptr(at(100)), "nowhere" // never claimed here
		for _, r := range []*orchestrator.Run{timed, deadline} {
			must(t, "CreateRun "+r.ID, s.CreateRun(ctx(t), r))
			got, err := s.GetRun(ctx(t), r.ID)
			must(t, "GetRun "+r.ID, err)
			equal(t, "GetRun "+r.ID, got, r)
		}
		list := func(f orchestrator.RunFilter) []string {
			t.Helper()
			rs, err := s.ListRuns(ctx(t), f)
			must(t, "ListRuns", err)
			return runIDs(rs)
		}
		if got := list(orchestrator.RunFilter{Timed: true}); len(got) != 0 {
			t.Fatalf("timed runs while the timed run is pending = %v, want none", got)
		}
		// The session's first attempt ends, so that its run with a timeout may be claimed.
		_, err := s.UpdateRun(ctx(t), "run_r1", nil, "", store.RunUpdate{Status: ptr(orchestrator.RunFailed)})
		must(t, "end run_r1", err)
		p.Now = at(6)
		if r, err := claimOne(ctx(t), s, p); err != nil || r.ID != "run_timed" {
			t.Fatalf("claim the timed run: %v, %v", r, err)
		}
		equal(t, "claimed or running runs with a timeout", list(orchestrator.RunFilter{Timed: true}), []string{"run_timed"})
		if bu, ok := s.(store.BriefUpdater); ok {
			b, err := bu.UpdateRunBrief(ctx(t), "run_timed", nil, "", store.RunUpdate{TimedOutAt: ptr(at(7))})
			must(t, "UpdateRunBrief", err)
			if b.Timeout != 1500*time.Millisecond || !b.TimedOut {
				t.Fatalf("brief of a timed-out run: timeout %s, timed out %v; want 1.5s, true", b.Timeout, b.TimedOut)
			}
		} else {
			_, err := s.UpdateRun(ctx(t), "run_timed", nil, "", store.RunUpdate{TimedOutAt: ptr(at(7))})
			must(t, "UpdateRun", err)
		}
		if r, _ := s.GetRun(ctx(t), "run_timed"); r.TimedOutAt == nil || !r.TimedOutAt.Equal(at(7)) {
			t.Fatalf("TimedOutAt = %v, want %v", r.TimedOutAt, at(7))
		}
		if got := list(orchestrator.RunFilter{StartDeadlineBefore: at(100)}); len(got) != 0 {
			t.Fatalf("start deadlines before %v = %v, want none (it is at that time)", at(100), got)
		}
		equal(t, "pending runs past their start deadline", list(orchestrator.RunFilter{StartDeadlineBefore: at(101)}), []string{"run_deadline"})
	})

	t.Run("ConcurrentEnds", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := startRetryCase(t, s)
		const writers = 8
		var won atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				next := nextAttempt("run_r2_"+string(rune('a'+i)), at(500))
				err := writeRetry(ctx(t), s, next)
				switch {
				case err == nil:
					won.Add(1)
					winner.Store(next)
				case !errors.Is(err, orchestrator.ErrConflict):
					t.Errorf("concurrent retry write: %v, want nil or ErrConflict", err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d of %d concurrent ends of one run wrote a retry, want exactly 1", won.Load(), writers)
		}
		runs, err := s.ListRuns(ctx(t), orchestrator.RunFilter{SessionID: "ses_r"})
		must(t, "ListRuns", err)
		if len(runs) != 2 {
			t.Fatalf("the session has runs %v after concurrent ends, want the failed one and one retry", runIDs(runs))
		}
		checkRetried(t, s, winner.Load().(*orchestrator.Run), p)
	})
}

// RetryAcrossReopen checks that a retry survives a crash between attempts: the retry is written, the store
// is closed with the next attempt not yet due, and a store opened again on the same database hands the
// next attempt out at its time, once, and not before. open returns a new store on the same database each
// time it is called (the suite closes each one); run it for every backend whose data outlives a process.
func RetryAcrossReopen(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	first := open(t)
	p := startRetryCase(t, first)
	next := nextAttempt("run_r2", at(500))
	must(t, "retry write", writeRetry(ctx(t), first, next))
	must(t, "Close", first.Close())
	again := open(t)
	t.Cleanup(func() { again.Close() })
	checkRetried(t, again, next, p)
	due := p
	due.Now = at(1000)
	if rs, err := again.ClaimRuns(ctx(t), due); err != nil || len(rs) != 0 {
		t.Fatalf("a second claim after reopening = %v, %v; want none (the retry is handed out once)", runIDs(rs), err)
	}
}
