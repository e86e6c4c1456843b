package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testRetention checks DeleteEndedSessions: what it selects (ended sessions whose end is older than the
// cutoff, oldest end first, at most limit), what it takes with them (runs, demanded tags, events,
// callbacks), what it keeps (sessions a callback or a webhook is still on its way to or from), and that
// concurrent callers (coordinator replicas) delete each session once between them.
func testRetention(t *testing.T, newStore func(*testing.T) store.Store) {
	// ended creates a session in status st that ended at end (ms after base; 0: not ended), created at
	// created.
	ended := func(t *testing.T, s store.Store, id string, st orchestrator.SessionStatus, created, end int) {
		t.Helper()
		se := newSession(id, at(created))
		se.Status = st
		if end != 0 {
			se.EndedAt = ptr(at(end))
		}
		must(t, "CreateSession "+id, s.CreateSession(ctx(t), se))
	}
	remaining := func(t *testing.T, s store.Store) []string {
		t.Helper()
		all, err := s.ListSessions(ctx(t), orchestrator.SessionFilter{})
		must(t, "ListSessions", err)
		return sessionIDs(all)
	}

	t.Run("SelectsEndedBeforeCutoff", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ended(t, s, "ses_completed", orchestrator.SessionCompleted, 1, 10)
		ended(t, s, "ses_failed", orchestrator.SessionFailed, 2, 20)
		ended(t, s, "ses_stopped", orchestrator.SessionStopped, 3, 30)
		ended(t, s, "ses_at_cutoff", orchestrator.SessionCompleted, 4, 40) // not strictly before
		ended(t, s, "ses_recent", orchestrator.SessionCompleted, 5, 50)
		ended(t, s, "ses_running", orchestrator.SessionRunning, 6, 0)
		ended(t, s, "ses_pending", orchestrator.SessionPending, 7, 0)
		// A status that is not ended keeps a session whatever its end time says.
		ended(t, s, "ses_pending_old_end", orchestrator.SessionPending, 8, 5)
		ended(t, s, "ses_running_old_end", orchestrator.SessionRunning, 9, 5)

		n, err := s.DeleteEndedSessions(ctx(t), at(40), 100)
		must(t, "DeleteEndedSessions", err)
		if n != 3 {
			t.Fatalf("DeleteEndedSessions = %d, want 3", n)
		}
		equal(t, "sessions left", remaining(t, s),
			[]string{"ses_at_cutoff", "ses_recent", "ses_running", "ses_pending", "ses_pending_old_end", "ses_running_old_end"})
		n, err = s.DeleteEndedSessions(ctx(t), at(40), 100)
		must(t, "DeleteEndedSessions again", err)
		if n != 0 {
			t.Fatalf("DeleteEndedSessions again = %d, want 0", n)
		}
		n, err = s.DeleteEndedSessions(ctx(t), at(40), 0)
		must(t, "DeleteEndedSessions with limit 0", err)
		if n != 0 {
			t.Fatalf("DeleteEndedSessions with limit 0 = %d, want 0", n)
		}
	})

	t.Run("OldestEndFirstWithinLimit", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// End order differs from creation and id order; ses_c and ses_b end together (ordered by id).
		ended(t, s, "ses_a", orchestrator.SessionCompleted, 1, 40)
		ended(t, s, "ses_e", orchestrator.SessionFailed, 2, 10)
		ended(t, s, "ses_c", orchestrator.SessionCompleted, 3, 20)
		ended(t, s, "ses_b", orchestrator.SessionStopped, 4, 20)
		ended(t, s, "ses_d", orchestrator.SessionCompleted, 5, 30)
		cutoff := at(100)
		for _, step := range []struct {
			limit, want int
			left        []string
		}{
			{1, 1, []string{"ses_a", "ses_c", "ses_b", "ses_d"}},
			{2, 2, []string{"ses_a", "ses_d"}},
			{1, 1, []string{"ses_a"}},
			{5, 1, []string{}},
		} {
			n, err := s.DeleteEndedSessions(ctx(t), cutoff, step.limit)
			must(t, "DeleteEndedSessions", err)
			if n != step.want {
				t.Fatalf("DeleteEndedSessions(limit %d) = %d, want %d", step.limit, n, step.want)
			}
			equal(t, fmt.Sprintf("sessions left after limit %d", step.limit), remaining(t, s), step.left)
		}
	})

	t.Run("Cascades", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ended(t, s, "ses_old", orchestrator.SessionCompleted, 1, 10)
		ended(t, s, "ses_old2", orchestrator.SessionFailed, 2, 11)
		ended(t, s, "ses_keep", orchestrator.SessionCompleted, 3, 90)
		ended(t, s, "ses_parent", orchestrator.SessionCompleted, 4, 95)

		tagged := newRun("run_old_1", "ses_old", at(1))
		tagged.Status = orchestrator.RunCompleted
		tagged.Demands = orchestrator.Demands{Tags: []string{"gpu", "x"}}
		must(t, "CreateRun", s.CreateRun(ctx(t), tagged))
		for _, r := range []*orchestrator.Run{
			newRun("run_old_2", "ses_old", at(2)), newRun("run_old2_1", "ses_old2", at(3)), newRun("run_keep", "ses_keep", at(4)),
		} {
			r.Status = orchestrator.RunFailed
			r.Demands = orchestrator.Demands{Tags: []string{"gpu"}}
			must(t, "CreateRun "+r.ID, s.CreateRun(ctx(t), r))
		}
		for _, id := range []string{"ses_old", "ses_old2", "ses_keep"} {
			e1 := orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "one"})
			e2 := orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "two"})
			must(t, "AppendEvents", s.AppendEvents(ctx(t), id, []*orchestrator.Event{&e1, &e2}))
		}
		delivered := ptr(at(12))
		for _, c := range []*orchestrator.Callback{
			// ses_old as the parent (delivered), as a child of a kept parent, and a callback between others.
			{ID: "cb_parent", ParentSessionID: "ses_old", ChildSessionID: "ses_x", Type: "child_completed", CreatedAt: at(1), DeliveredAt: delivered, DeliveredRun: "run_old_2"},
			{ID: "cb_child", ParentSessionID: "ses_parent", ChildSessionID: "ses_old2", Type: "child_failed", CreatedAt: at(2), DeliveredAt: delivered, DeliveredRun: "run_p"},
			{ID: "cb_other", ParentSessionID: "ses_parent", ChildSessionID: "ses_keep", Type: "child_completed", CreatedAt: at(3), DeliveredAt: delivered, DeliveredRun: "run_p"},
		} {
			must(t, "CreateCallback "+c.ID, s.CreateCallback(ctx(t), c))
		}

		n, err := s.DeleteEndedSessions(ctx(t), at(50), 10)
		must(t, "DeleteEndedSessions", err)
		if n != 2 {
			t.Fatalf("DeleteEndedSessions = %d, want 2", n)
		}
		for _, id := range []string{"run_old_1", "run_old_2", "run_old2_1"} {
			_, err := s.GetRun(ctx(t), id)
			wantErr(t, "GetRun "+id+" of a deleted session", err, orchestrator.ErrNotFound)
		}
		for _, id := range []string{"ses_old", "ses_old2"} {
			if ev, err := s.ListEvents(ctx(t), id, 0, 0); err != nil || len(ev) != 0 {
				t.Fatalf("ListEvents of deleted %s = %d events, %v; want none", id, len(ev), err)
			}
		}
		cbs, err := s.ListCallbacks(ctx(t), store.CallbackFilter{})
		must(t, "ListCallbacks", err)
		equal(t, "callbacks left", callbackIDs(cbs), []string{"cb_other"})

		// The kept session keeps everything.
		if r, err := s.GetRun(ctx(t), "run_keep"); err != nil || len(r.Demands.Tags) != 1 {
			t.Fatalf("GetRun of a kept session = %+v, %v", r, err)
		}
		if ev, _ := s.ListEvents(ctx(t), "ses_keep", 0, 0); len(ev) != 2 {
			t.Fatalf("events of a kept session = %d, want 2", len(ev))
		}
		// Nothing of the deleted runs is left behind (their demanded tags included): the same ids can be
		// created again, and the claim sees exactly the new demands.
		ended(t, s, "ses_old", orchestrator.SessionPending, 60, 0)
		again := newRun("run_old_1", "ses_old", at(60))
		again.Demands = orchestrator.Demands{Tags: []string{"x"}}
		must(t, "CreateRun again", s.CreateRun(ctx(t), again))
		got, err := s.GetRun(ctx(t), "run_old_1")
		must(t, "GetRun", err)
		equal(t, "recreated run", got, again)
		runner := newRunner("lnch_x")
		runner.Tags = []string{"x"}
		claimed, err := claimOne(ctx(t), s, store.ClaimParams{Runner: runner, Now: at(61)})
		must(t, "claim of the recreated run (a left-over gpu tag would block it)", err)
		if claimed.ID != "run_old_1" {
			t.Fatalf("claimed %s, want run_old_1", claimed.ID)
		}
	})

	t.Run("KeepsSessionsSomethingIsOnItsWayTo", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// A parent whose child still runs a run in async_callback mode; one whose child ended; one with a
		// callback not yet delivered; one whose callbacks were all delivered; one whose child runs a run that
		// will not call back (async_poll).
		ended(t, s, "ses_p_live_child", orchestrator.SessionCompleted, 1, 10)
		ended(t, s, "ses_p_ended_child", orchestrator.SessionCompleted, 2, 11)
		ended(t, s, "ses_p_undelivered", orchestrator.SessionCompleted, 3, 12)
		ended(t, s, "ses_p_delivered", orchestrator.SessionCompleted, 4, 13)
		ended(t, s, "ses_p_plain_child", orchestrator.SessionCompleted, 5, 14)
		child := func(id, parent string, callback bool, st orchestrator.SessionStatus, end int) {
			se := newSession(id, at(20))
			se.ParentSessionID, se.Callback, se.Status = parent, callback, st
			if end != 0 {
				se.EndedAt = ptr(at(end))
			}
			must(t, "CreateSession "+id, s.CreateSession(ctx(t), se))
			// Its run: the mode says whether it calls the parent back, the status whether it still may.
			r := newRun("run_"+id, id, at(20))
			r.Mode, r.Status = orchestrator.ModeAsyncPoll, orchestrator.RunRunning
			if callback {
				r.Mode = orchestrator.ModeAsyncCallback
			}
			if st.Ended() {
				r.Status = orchestrator.RunStatus(st)
			}
			must(t, "CreateRun "+r.ID, s.CreateRun(ctx(t), r))
		}
		child("ses_c_live", "ses_p_live_child", true, orchestrator.SessionRunning, 0)
		child("ses_c_ended", "ses_p_ended_child", true, orchestrator.SessionCompleted, 200)
		child("ses_c_plain", "ses_p_plain_child", false, orchestrator.SessionRunning, 0)
		must(t, "CreateCallback", s.CreateCallback(ctx(t), &orchestrator.Callback{
			ID: "cb_pending", ParentSessionID: "ses_p_undelivered", ChildSessionID: "ses_gone", Type: "child_completed", CreatedAt: at(15)}))
		must(t, "CreateCallback", s.CreateCallback(ctx(t), &orchestrator.Callback{
			ID: "cb_done", ParentSessionID: "ses_p_delivered", ChildSessionID: "ses_gone2", Type: "child_completed", CreatedAt: at(15),
			DeliveredAt: ptr(at(16)), DeliveredRun: "run_x"}))

		// A session whose webhook is still being delivered, and one whose webhook was delivered.
		ended(t, s, "ses_w_pending", orchestrator.SessionCompleted, 6, 15)
		ended(t, s, "ses_w_done", orchestrator.SessionCompleted, 7, 16)
		for _, w := range []*store.Webhook{
			{ID: "wh_pending", URL: "https://a.example/hook", SessionID: "ses_w_pending", RunID: "run_w1", Payload: []byte(`{}`),
				Status: store.WebhookPending, Attempts: 3, NextAttemptAt: at(500), CreatedAt: at(15)},
			{ID: "wh_done", URL: "https://a.example/hook", SessionID: "ses_w_done", RunID: "run_w2", Payload: []byte(`{}`),
				Status: store.WebhookDelivered, Attempts: 1, NextAttemptAt: at(16), CreatedAt: at(16), DeliveredAt: ptr(at(17))},
		} {
			must(t, "CreateWebhook "+w.ID, s.CreateWebhook(ctx(t), w))
		}

		n, err := s.DeleteEndedSessions(ctx(t), at(100), 10)
		must(t, "DeleteEndedSessions", err)
		if n != 4 {
			t.Fatalf("DeleteEndedSessions = %d, want 4", n)
		}
		equal(t, "sessions left", remaining(t, s),
			[]string{"ses_p_live_child", "ses_p_undelivered", "ses_w_pending", "ses_c_ended", "ses_c_live", "ses_c_plain"})
		// The pending webhook was kept with its session.
		whs, err := s.ClaimWebhooks(ctx(t), at(1000), at(2000), 10)
		must(t, "ClaimWebhooks", err)
		if len(whs) != 1 || whs[0].ID != "wh_pending" {
			t.Fatalf("ClaimWebhooks after retention = %v, want wh_pending", whs)
		}
	})

	t.Run("ManyInBatches", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		n := scale(1500)
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			for i := range n + 10 {
				se := newSession(fmt.Sprintf("ses_%05d", i), at(i))
				se.Status, se.EndedAt = orchestrator.SessionCompleted, ptr(at(i))
				if err := tx.CreateSession(ctx, se); err != nil {
					return err
				}
				r := newRun(fmt.Sprintf("run_%05d", i), se.ID, at(i))
				r.Status = orchestrator.RunCompleted
				if err := tx.CreateRun(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
		must(t, "create sessions", err)
		got, err := s.DeleteEndedSessions(ctx(t), at(n+10), n)
		must(t, "DeleteEndedSessions", err)
		if got != n {
			t.Fatalf("DeleteEndedSessions(limit %d) = %d", n, got)
		}
		left := remaining(t, s)
		if len(left) != 10 || left[0] != fmt.Sprintf("ses_%05d", n) {
			t.Fatalf("left %d sessions starting with %v; want the 10 newest", len(left), left[:min(1, len(left))])
		}
		runs, err := s.ListRuns(ctx(t), orchestrator.RunFilter{})
		must(t, "ListRuns", err)
		if len(runs) != 10 {
			t.Fatalf("%d runs left, want 10", len(runs))
		}
	})

	// Replicas running retention at once delete every session exactly once between them, without errors.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		n := concurrencyScale(600)
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			for i := range n {
				se := newSession(fmt.Sprintf("ses_%05d", i), at(i))
				se.Status, se.EndedAt = orchestrator.SessionFailed, ptr(at(i))
				if err := tx.CreateSession(ctx, se); err != nil {
					return err
				}
				ev := orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "x"})
				if err := tx.AppendEvents(ctx, se.ID, []*orchestrator.Event{&ev}); err != nil {
					return err
				}
			}
			return nil
		})
		must(t, "create sessions", err)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total int
			errs  []error
		)
		cutoff := at(n)
		for range 4 {
			wg.Go(func() {
				deadline := time.Now().Add(time.Minute)
				for time.Now().Before(deadline) {
					k, err := s.DeleteEndedSessions(context.Background(), cutoff, 25)
					mu.Lock()
					total += k
					if err != nil {
						errs = append(errs, err)
					}
					mu.Unlock()
					if err != nil || k == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			t.Errorf("concurrent DeleteEndedSessions: %v", err)
		}
		if left := remaining(t, s); len(left) != 0 {
			t.Errorf("%d sessions left", len(left))
		}
		if total != n {
			t.Errorf("concurrent callers report %d deletions of %d sessions", total, n)
		}
	})
}
