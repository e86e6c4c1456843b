package storetest

import (
	"context"
	"errors"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testTx(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("Commit", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if err := tx.CreateSession(ctx, newSession("ses_a", base)); err != nil {
				return err
			}
			if err := tx.CreateRun(ctx, newRun("run_a", "ses_a", base)); err != nil {
				return err
			}
			// The transaction reads its own writes.
			if _, err := tx.GetSession(ctx, "ses_a"); err != nil {
				return err
			}
			e := orchestrator.NewEvent("progress", nil)
			if err := tx.AppendEvents(ctx, "ses_a", []*orchestrator.Event{&e}); err != nil {
				return err
			}
			_, err := tx.UpdateSession(ctx, "ses_a", nil, store.SessionUpdate{Status: ptr(orchestrator.SessionRunning)})
			return err
		})
		must(t, "InTx", err)
		se, err := s.GetSession(ctx(t), "ses_a")
		must(t, "GetSession after commit", err)
		if se.Status != orchestrator.SessionRunning || se.LastEventSeq != 1 {
			t.Fatalf("committed session: status %s last seq %d; want running, 1", se.Status, se.LastEventSeq)
		}
		_, err = s.GetRun(ctx(t), "run_a")
		must(t, "GetRun after commit", err)
	})

	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		boom := errors.New("boom")
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if err := tx.CreateSession(ctx, newSession("ses_b", base)); err != nil {
				return err
			}
			tagged := newRun("run_b", "ses_b", base)
			tagged.Demands.Tags = []string{"gpu"}
			if err := tx.CreateRun(ctx, tagged); err != nil {
				return err
			}
			if _, err := tx.UpdateSession(ctx, "ses_a", nil, store.SessionUpdate{Status: ptr(orchestrator.SessionFailed)}); err != nil {
				return err
			}
			e := orchestrator.NewEvent("progress", nil)
			if err := tx.AppendEvents(ctx, "ses_a", []*orchestrator.Event{&e}); err != nil {
				return err
			}
			return boom
		})
		wantErr(t, "InTx", err, boom)
		_, err = s.GetSession(ctx(t), "ses_b")
		wantErr(t, "GetSession rolled back", err, orchestrator.ErrNotFound)
		_, err = s.GetRun(ctx(t), "run_b")
		wantErr(t, "GetRun rolled back", err, orchestrator.ErrNotFound)
		se, _ := s.GetSession(ctx(t), "ses_a")
		if se.Status != orchestrator.SessionPending || se.LastEventSeq != 0 {
			t.Fatalf("session after rollback: status %s last seq %d; want pending, 0", se.Status, se.LastEventSeq)
		}
		if ev, _ := s.ListEvents(ctx(t), "ses_a", 0, 0); len(ev) != 0 {
			t.Fatalf("%d events survived the rollback", len(ev))
		}
		// What the rolled-back transaction wrote (the run's tags included) left no trace.
		must(t, "CreateSession again", s.CreateSession(ctx(t), newSession("ses_b", base)))
		tagged := newRun("run_b", "ses_b", base)
		tagged.Demands.Tags = []string{"gpu"}
		must(t, "CreateRun again", s.CreateRun(ctx(t), tagged))
	})

	t.Run("Nested", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		boom := errors.New("boom")
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			err := tx.InTx(ctx, func(ctx context.Context, inner store.Store) error {
				return inner.CreateSession(ctx, newSession("ses_inner", base))
			})
			if err != nil {
				return err
			}
			// The inner call joined this transaction: its write is visible here...
			if _, err := tx.GetSession(ctx, "ses_inner"); err != nil {
				return err
			}
			return boom // ...and goes with it.
		})
		wantErr(t, "InTx", err, boom)
		_, err = s.GetSession(ctx(t), "ses_inner")
		wantErr(t, "GetSession of the nested write", err, orchestrator.ErrNotFound)
	})

	t.Run("ErrorsInside", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		// Store errors inside a transaction keep their sentinels.
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if _, err := tx.GetRun(ctx, "run_missing"); !errors.Is(err, orchestrator.ErrNotFound) {
				t.Errorf("GetRun missing in a tx: %v, want ErrNotFound", err)
			}
			return tx.CreateSession(ctx, newSession("ses_a", base))
		})
		wantErr(t, "InTx creating a duplicate", err, orchestrator.ErrConflict)
	})
}
