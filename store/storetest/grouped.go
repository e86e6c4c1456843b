package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testGroupedEnds checks [store.BatchBriefUpdater] on stores that have it, as a coordinator uses it
// to end the runs a runner reports together: the runs' updates in one call, then their sessions' with the
// result and run_ended events in another, inside one transaction. A member whose guard does not match
// (held by another runner, in another status, missing, or repeated) changes nothing and gets a nil brief;
// the others are applied exactly as their single counterparts would apply them.
func testGroupedEnds(t *testing.T, newStore func(*testing.T) store.Store) {
	if _, ok := newStore(t).(store.BatchBriefUpdater); !ok {
		t.Skip("the store is not a store.BatchBriefUpdater")
	}

	// held creates n sessions each with a run claimed by runner, ids prefix00000, ….
	held := func(t *testing.T, s store.Store, prefix, runner string, n int) ([]*orchestrator.Session, []*orchestrator.Run) {
		t.Helper()
		sessions, runs := make([]*orchestrator.Session, n), make([]*orchestrator.Run, n)
		for i := range n {
			se := newSession(fmt.Sprintf("ses_%s%05d", prefix, i), at(i))
			se.Status, se.RunnerID = orchestrator.SessionRunning, runner
			r := newRun(fmt.Sprintf("run_%s%05d", prefix, i), se.ID, at(i))
			r.Status, r.RunnerID, r.Demands = orchestrator.RunRunning, runner, orchestrator.Demands{}
			se.CurrentRunID = r.ID
			must(t, "CreateSessionWithRun", s.CreateSessionWithRun(ctx(t), se, r))
			sessions[i], runs[i] = se, r
		}
		return sessions, runs
	}
	end := func(id, runner string, status orchestrator.RunStatus, when int) store.RunsUpdate {
		return store.RunsUpdate{ID: id, From: runStatusesBefore(status), RunnerID: runner, Update: store.RunUpdate{
			Status: ptr(status), Error: ptr(""), EndedAt: ptr(at(when)),
			Usage: &orchestrator.Usage{InputTokens: int64(when)},
		}}
	}
	sessionEnd := func(id string, status orchestrator.SessionStatus, when int) store.SessionsUpdate {
		return store.SessionsUpdate{ID: id, From: []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning},
			Update: store.SessionUpdate{
				Status: ptr(status), Result: &orchestrator.Result{ResultType: "deterministic", ResultData: []byte(fmt.Sprintf(`{"n":%d}`, when))},
				Error: ptr(""), EndedAt: ptr(at(when)), UpdatedAt: at(when),
				AppendEvents: []*orchestrator.Event{
					{Type: orchestrator.EventResult, Data: []byte(fmt.Sprintf(`{"n":%d}`, when)), Time: at(when)},
					{Type: orchestrator.EventRunEnded, Data: []byte(`{"status":"completed"}`), Time: at(when)},
				},
			}}
	}

	t.Run("Fencing", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sessions, runs := held(t, s, "f", "lnch_a", 6)
		must(t, "CreateRun", s.CreateRun(ctx(t), func() *orchestrator.Run {
			r := newRun("run_fpending", sessions[0].ID, at(9))
			r.Demands = orchestrator.Demands{}
			return r
		}()))
		before4, _ := s.GetRun(ctx(t), runs[4].ID)
		var briefs []*store.RunBrief
		must(t, "InTx", s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			var err error
			briefs, err = tx.(store.BatchBriefUpdater).UpdateRunsBrief(ctx, []store.RunsUpdate{
				end(runs[0].ID, "lnch_a", orchestrator.RunCompleted, 10),
				end(runs[1].ID, "lnch_a", orchestrator.RunCompleted, 11),
				end(runs[4].ID, "lnch_b", orchestrator.RunCompleted, 14), // held by another runner
				end("run_fmissing", "lnch_a", orchestrator.RunCompleted, 15),
				end(runs[2].ID, "lnch_a", orchestrator.RunFailed, 12),
				end(runs[1].ID, "lnch_a", orchestrator.RunCompleted, 16), // a repeat: already ended
				end("run_fpending", "lnch_a", orchestrator.RunCompleted, 17),
				end(runs[3].ID, "lnch_a", orchestrator.RunStopped, 13),
			})
			return err
		}))
		if len(briefs) != 8 {
			t.Fatalf("UpdateRunsBrief returned %d briefs, want 8", len(briefs))
		}
		for k, i := range map[int]int{0: 0, 1: 1, 4: 2, 7: 3} {
			want := *runs[i]
			want.Status = []orchestrator.RunStatus{orchestrator.RunCompleted, orchestrator.RunCompleted, orchestrator.RunFailed, orchestrator.RunStopped}[i]
			want.Error, want.EndedAt, want.Usage = "", ptr(at(10+i)), &orchestrator.Usage{InputTokens: int64(10 + i)}
			equal(t, fmt.Sprintf("brief %d", k), briefs[k], store.NewRunBrief(&want))
			stored, err := s.GetRun(ctx(t), runs[i].ID)
			must(t, "GetRun", err)
			equal(t, fmt.Sprintf("stored run %d", i), stored, &want)
		}
		for _, k := range []int{2, 3, 5, 6} {
			if briefs[k] != nil {
				t.Errorf("brief %d = %+v, want nil: its guard does not match", k, briefs[k])
			}
		}
		after4, _ := s.GetRun(ctx(t), runs[4].ID)
		equal(t, "run held by another runner", after4, before4)
		pending, _ := s.GetRun(ctx(t), "run_fpending")
		if pending.Status != orchestrator.RunPending {
			t.Errorf("pending run: status %s, want it left pending", pending.Status)
		}
		if _, err := s.GetRun(ctx(t), "run_fmissing"); err == nil {
			t.Error("a missing run's update created it")
		}
	})

	t.Run("Sessions", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sessions, _ := held(t, s, "s", "lnch_a", 4)
		must(t, "AppendEvents", s.AppendEvents(ctx(t), sessions[1].ID, []*orchestrator.Event{
			{Type: orchestrator.EventMessage, Data: []byte(`{"role":"assistant","content":"x"}`), Time: at(5)},
		}))
		_, err := s.UpdateSession(ctx(t), sessions[3].ID, nil, store.SessionUpdate{Status: ptr(orchestrator.SessionFailed), UpdatedAt: at(6)})
		must(t, "UpdateSession", err)
		us := []store.SessionsUpdate{
			sessionEnd(sessions[0].ID, orchestrator.SessionCompleted, 20),
			sessionEnd(sessions[1].ID, orchestrator.SessionCompleted, 21),
			sessionEnd(sessions[3].ID, orchestrator.SessionCompleted, 23), // already ended
			sessionEnd("ses_smissing", orchestrator.SessionCompleted, 24),
			sessionEnd(sessions[2].ID, orchestrator.SessionStopped, 22),
		}
		var briefs []*store.SessionBrief
		must(t, "InTx", s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			var err error
			briefs, err = tx.(store.BatchBriefUpdater).UpdateSessionsBrief(ctx, us)
			return err
		}))
		wantSeq := map[int]int64{0: 2, 1: 3, 4: 2} // member → last_event_seq after: two events each
		for k, u := range us {
			last, ok := wantSeq[k]
			if !ok {
				if briefs[k] != nil {
					t.Errorf("brief %d = %+v, want nil: its guard does not match", k, briefs[k])
				}
				continue
			}
			stored, err := s.GetSession(ctx(t), u.ID)
			must(t, "GetSession", err)
			equal(t, fmt.Sprintf("brief %d", k), briefs[k], store.NewSessionBrief(stored))
			if stored.Status != *u.Update.Status || stored.LastEventSeq != last || !stored.EndedAt.Equal(*u.Update.EndedAt) ||
				string(stored.Result.ResultData) != string(u.Update.Result.ResultData) {
				t.Errorf("session %s after its grouped end: %s", u.ID, show(stored))
			}
			events, err := s.ListEvents(ctx(t), u.ID, last-2, 0)
			must(t, "ListEvents", err)
			if len(events) != 2 || events[0].Type != orchestrator.EventResult || events[1].Type != orchestrator.EventRunEnded ||
				events[1].Seq != last {
				t.Fatalf("events of %s: %s", u.ID, show(events))
			}
			for i, e := range u.Update.AppendEvents { // numbered in place, as AppendEvents numbers them
				if e.Seq != last-1+int64(i) || e.SessionID != u.ID {
					t.Errorf("appended event %d of %s: seq %d session %q", i, u.ID, e.Seq, e.SessionID)
				}
			}
		}
		ended, _ := s.GetSession(ctx(t), sessions[3].ID)
		if ended.Status != orchestrator.SessionFailed || ended.LastEventSeq != 0 {
			t.Errorf("an ended session changed: %s", show(ended))
		}
		if events, _ := s.ListEvents(ctx(t), sessions[3].ID, 0, 0); len(events) != 0 {
			t.Errorf("events appended to a session whose guard did not match: %s", show(events))
		}
	})

	t.Run("RolledBack", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sessions, runs := held(t, s, "r", "lnch_a", 3)
		boom := fmt.Errorf("the caller gives up")
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			b := tx.(store.BatchBriefUpdater)
			if _, err := b.UpdateRunsBrief(ctx, []store.RunsUpdate{
				end(runs[0].ID, "lnch_a", orchestrator.RunCompleted, 1), end(runs[1].ID, "lnch_a", orchestrator.RunCompleted, 2),
			}); err != nil {
				return err
			}
			if _, err := b.UpdateSessionsBrief(ctx, []store.SessionsUpdate{
				sessionEnd(sessions[0].ID, orchestrator.SessionCompleted, 1), sessionEnd(sessions[1].ID, orchestrator.SessionCompleted, 2),
			}); err != nil {
				return err
			}
			return boom
		})
		wantErr(t, "InTx", err, boom)
		for i := range 2 {
			r, _ := s.GetRun(ctx(t), runs[i].ID)
			se, _ := s.GetSession(ctx(t), sessions[i].ID)
			events, _ := s.ListEvents(ctx(t), sessions[i].ID, 0, 0)
			if r.Status != orchestrator.RunRunning || se.Status != orchestrator.SessionRunning || se.LastEventSeq != 0 || len(events) != 0 {
				t.Errorf("member %d kept after its transaction rolled back: run %s, session %s", i, show(r), show(se))
			}
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const groups = 8
		per := max(2, concurrencyScale(40)/groups)
		sessions, runs := held(t, s, "c", "lnch_a", groups*per)
		errs := make([]error, groups)
		var wg sync.WaitGroup
		for g := range groups {
			wg.Go(func() {
				errs[g] = s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
					b := tx.(store.BatchBriefUpdater)
					var rus []store.RunsUpdate
					var sus []store.SessionsUpdate
					for i := g * per; i < (g+1)*per; i++ {
						rus = append(rus, end(runs[i].ID, "lnch_a", orchestrator.RunCompleted, i))
						sus = append(sus, sessionEnd(sessions[i].ID, orchestrator.SessionCompleted, i))
					}
					rb, err := b.UpdateRunsBrief(ctx, rus)
					if err != nil {
						return err
					}
					sb, err := b.UpdateSessionsBrief(ctx, sus)
					if err != nil {
						return err
					}
					for i := range rb {
						if rb[i] == nil || sb[i] == nil {
							return fmt.Errorf("member %d of group %d not applied", i, g)
						}
					}
					return nil
				})
			})
		}
		wg.Wait()
		for g, err := range errs {
			must(t, fmt.Sprintf("group %d", g), err)
		}
		for i := range runs {
			r, _ := s.GetRun(ctx(t), runs[i].ID)
			se, _ := s.GetSession(ctx(t), sessions[i].ID)
			if r.Status != orchestrator.RunCompleted || se.Status != orchestrator.SessionCompleted || se.LastEventSeq != 2 {
				t.Fatalf("member %d: run %s, session %s", i, r.Status, show(se))
			}
		}
	})
}
