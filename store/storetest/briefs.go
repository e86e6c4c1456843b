package storetest

import (
	"context"
	"errors"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testBriefs checks [store.BriefUpdater] on stores that have it: each brief update must do exactly
// what its Store counterpart does — guard, errors, changes, appended events — and return the brief of the
// record the counterpart would have returned.
func testBriefs(t *testing.T, newStore func(*testing.T) store.Store) {
	if _, ok := newStore(t).(store.BriefUpdater); !ok {
		t.Skip("the store is not a store.BriefUpdater")
	}

	t.Run("Run", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		b := s.(store.BriefUpdater)
		r := newRun("run_a", "ses_a", base)
		r.Status, r.RunnerID, r.Mode = orchestrator.RunClaimed, "lnch_a", orchestrator.ModeAsyncCallback
		must(t, "CreateRun", s.CreateRun(ctx(t), r))

		_, err := b.UpdateRunBrief(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunClaimed}, "lnch_b",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning)})
		wantErr(t, "UpdateRunBrief by another runner", err, orchestrator.ErrConflict)
		_, err = b.UpdateRunBrief(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunPending}, "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunClaimed)})
		wantErr(t, "UpdateRunBrief from the wrong status", err, orchestrator.ErrConflict)
		_, err = b.UpdateRunBrief(ctx(t), "run_missing", []orchestrator.RunStatus{orchestrator.RunClaimed}, "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning)})
		wantErr(t, "UpdateRunBrief missing", err, orchestrator.ErrNotFound)
		_, err = b.UpdateRunBrief(ctx(t), "run_missing", nil, "", store.RunUpdate{})
		wantErr(t, "UpdateRunBrief missing, unguarded", err, orchestrator.ErrNotFound)
		stored, _ := s.GetRun(ctx(t), "run_a")
		equal(t, "run after refused brief updates", stored, r)

		got, err := b.UpdateRunBrief(ctx(t), "run_a", runStatusesBefore(orchestrator.RunRunning), "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning), StartedAt: ptr(at(1))})
		must(t, "UpdateRunBrief claimed→running", err)
		r.Status, r.StartedAt = orchestrator.RunRunning, ptr(at(1))
		equal(t, "brief of claimed→running", got, store.NewRunBrief(r))
		stored, _ = s.GetRun(ctx(t), "run_a")
		equal(t, "stored after claimed→running", stored, r)

		got, err = b.UpdateRunBrief(ctx(t), "run_a", runStatusesBefore(orchestrator.RunFailed), "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunFailed), Error: ptr("lost"), EndedAt: ptr(at(3)), RunnerID: ptr("lnch_z")})
		must(t, "UpdateRunBrief running→failed", err)
		r.Status, r.Error, r.EndedAt, r.RunnerID = orchestrator.RunFailed, "lost", ptr(at(3)), "lnch_z"
		equal(t, "brief of running→failed", got, store.NewRunBrief(r))
		stored, _ = s.GetRun(ctx(t), "run_a")
		equal(t, "stored after running→failed", stored, r)

		// An empty update still checks the guard.
		_, err = b.UpdateRunBrief(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunRunning}, "", store.RunUpdate{})
		wantErr(t, "empty UpdateRunBrief from the wrong status", err, orchestrator.ErrConflict)
		got, err = b.UpdateRunBrief(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunFailed}, "lnch_z", store.RunUpdate{})
		must(t, "empty UpdateRunBrief", err)
		equal(t, "brief of an empty update", got, store.NewRunBrief(r))
	})

	t.Run("Session", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		b := s.(store.BriefUpdater)
		se := newSession("ses_a", base)
		se.ParentSessionID = "ses_parent"
		must(t, "CreateSession", s.CreateSession(ctx(t), se))
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", []*orchestrator.Event{
			{Type: orchestrator.EventMessage, Data: []byte(`{"role":"user","content":"hi"}`), Time: at(1)},
		}))

		_, err := b.UpdateSessionBrief(ctx(t), "ses_a", []orchestrator.SessionStatus{orchestrator.SessionRunning},
			store.SessionUpdate{Status: ptr(orchestrator.SessionCompleted), UpdatedAt: at(2),
				AppendEvents: []*orchestrator.Event{{Type: orchestrator.EventRunEnded, Data: []byte(`{}`), Time: at(2)}}})
		wantErr(t, "UpdateSessionBrief from the wrong status", err, orchestrator.ErrConflict)
		_, err = b.UpdateSessionBrief(ctx(t), "ses_missing", nil, store.SessionUpdate{UpdatedAt: at(2)})
		wantErr(t, "UpdateSessionBrief missing", err, orchestrator.ErrNotFound)
		stored, _ := s.GetSession(ctx(t), "ses_a")
		if stored.Status != orchestrator.SessionPending || stored.LastEventSeq != 1 {
			t.Fatalf("refused brief updates changed the session: status %s, last event %d", stored.Status, stored.LastEventSeq)
		}

		res := &orchestrator.Result{ResultType: "deterministic", ResultData: []byte(`{"pages":3}`)}
		events := []*orchestrator.Event{
			{Type: orchestrator.EventResult, Data: []byte(`{"result_data":{"pages":3}}`), Time: at(3)},
			{Type: orchestrator.EventRunEnded, Data: []byte(`{"status":"completed"}`), Time: at(3)},
		}
		got, err := b.UpdateSessionBrief(ctx(t), "ses_a", []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning},
			store.SessionUpdate{Status: ptr(orchestrator.SessionCompleted), RunnerID: ptr("lnch_a"), Result: res,
				Error: ptr(""), EndedAt: ptr(at(3)), UpdatedAt: at(3), AppendEvents: events})
		must(t, "UpdateSessionBrief pending→completed", err)
		stored, err = s.GetSession(ctx(t), "ses_a")
		must(t, "GetSession", err)
		equal(t, "brief of pending→completed", got, store.NewSessionBrief(stored))
		if stored.Status != orchestrator.SessionCompleted || stored.RunnerID != "lnch_a" || stored.EndedAt == nil ||
			!stored.EndedAt.Equal(at(3)) || stored.LastEventSeq != 3 || string(stored.Result.ResultData) != `{"pages":3}` {
			t.Fatalf("stored after UpdateSessionBrief: %s", show(stored))
		}
		if events[0].Seq != 2 || events[1].Seq != 3 {
			t.Fatalf("appended events got seqs %d, %d; want 2, 3", events[0].Seq, events[1].Seq)
		}
		listed, err := s.ListEvents(ctx(t), "ses_a", 1, 0)
		must(t, "ListEvents", err)
		if len(listed) != 2 || listed[0].Type != orchestrator.EventResult || listed[1].Type != orchestrator.EventRunEnded {
			t.Fatalf("events after UpdateSessionBrief: %s", show(listed))
		}
	})

	t.Run("InTx", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		r := newRun("run_a", "ses_a", base)
		r.Status, r.RunnerID = orchestrator.RunClaimed, "lnch_a"
		must(t, "CreateRun", s.CreateRun(ctx(t), r))

		// Inside a transaction the capability is there too, and a rollback undoes what it did.
		rollback := errors.New("roll back")
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			b, ok := tx.(store.BriefUpdater)
			if !ok {
				t.Errorf("the transaction's store is not a store.BriefUpdater, though the store is")
				return rollback
			}
			if _, err := b.UpdateRunBrief(ctx, "run_a", []orchestrator.RunStatus{orchestrator.RunClaimed}, "lnch_a",
				store.RunUpdate{Status: ptr(orchestrator.RunCompleted), EndedAt: ptr(at(1))}); err != nil {
				return err
			}
			if _, err := b.UpdateSessionBrief(ctx, "ses_a", nil, store.SessionUpdate{
				Status: ptr(orchestrator.SessionCompleted), UpdatedAt: at(1),
				AppendEvents: []*orchestrator.Event{{Type: orchestrator.EventRunEnded, Data: []byte(`{}`), Time: at(1)}},
			}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx = %v, want the rollback error", err)
		}
		run, _ := s.GetRun(ctx(t), "run_a")
		se, _ := s.GetSession(ctx(t), "ses_a")
		events, _ := s.ListEvents(ctx(t), "ses_a", 0, 0)
		if run.Status != orchestrator.RunClaimed || se.Status != orchestrator.SessionPending || se.LastEventSeq != 0 || len(events) != 0 {
			t.Fatalf("a rolled-back transaction left run %s, session %s with %d events (last seq %d)",
				run.Status, se.Status, len(events), se.LastEventSeq)
		}
	})
}
