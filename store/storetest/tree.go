package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// treeSession returns a session of a tree, with its first run, ready to create.
func treeSession(id, parent, root string, depth int, detached bool, status orchestrator.SessionStatus, n int) (*orchestrator.Session, *orchestrator.Run) {
	s := newSession(id, at(n))
	s.ParentSessionID, s.RootSessionID, s.Depth, s.Detached, s.Status = parent, root, depth, detached, status
	s.Limits = &orchestrator.TreeLimits{MaxDepth: 8, MaxSessions: 100}
	r := newRun("run_"+id, id, at(n))
	r.Status = orchestrator.RunPending
	switch status {
	case orchestrator.SessionRunning:
		r.Status = orchestrator.RunRunning
	case orchestrator.SessionCompleted:
		r.Status = orchestrator.RunCompleted
	}
	s.CurrentRunID = r.ID
	return s, r
}

func testTree(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s, r := treeSession("ses_c", "ses_root", "ses_root", 3, true, orchestrator.SessionPending, 1)
		must(t, "CreateSessionWithRun", st.CreateSessionWithRun(ctx(t), s, r))
		got, err := st.GetSession(ctx(t), s.ID)
		must(t, "GetSession", err)
		equal(t, "GetSession", got, s)
	})

	t.Run("LiveDescendants", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		// root ─┬─ a (running) ─── a1 (pending) ─── a11 (running)
		//       ├─ b (completed) ─ b1 (running)
		//       ├─ d (detached, running) ─ d1 (pending)
		//       └─ e (completed)
		// other ── o (running)
		tree := []struct {
			id, parent string
			depth      int
			detached   bool
			status     orchestrator.SessionStatus
		}{
			{"ses_root", "", 0, false, orchestrator.SessionRunning},
			{"ses_a", "ses_root", 1, false, orchestrator.SessionRunning},
			{"ses_a1", "ses_a", 2, false, orchestrator.SessionPending},
			{"ses_a11", "ses_a1", 3, false, orchestrator.SessionRunning},
			{"ses_b", "ses_root", 1, false, orchestrator.SessionCompleted},
			{"ses_b1", "ses_b", 2, false, orchestrator.SessionRunning},
			{"ses_d", "ses_root", 1, true, orchestrator.SessionRunning},
			{"ses_d1", "ses_d", 2, false, orchestrator.SessionPending},
			{"ses_e", "ses_root", 1, false, orchestrator.SessionCompleted},
			{"ses_other", "", 0, false, orchestrator.SessionRunning},
			{"ses_o", "ses_other", 1, false, orchestrator.SessionRunning},
		}
		for i, n := range tree {
			s, r := treeSession(n.id, n.parent, "ses_root", n.depth, n.detached, n.status, i)
			must(t, "create "+n.id, st.CreateSessionWithRun(ctx(t), s, r))
		}
		now := at(100)
		_, err := st.UpdateRun(ctx(t), "run_ses_b1", nil, "", store.RunUpdate{StopRequestedAt: &now, RunnerID: ptr("lnch_x")})
		must(t, "UpdateRun b1", err)

		ids := func(ms []*store.TreeMember) []string {
			var out []string
			for _, m := range ms {
				out = append(out, m.SessionID)
			}
			slices.Sort(out)
			return out
		}
		got, err := st.LiveDescendants(ctx(t), store.DescendantsParams{SessionID: "ses_root"})
		must(t, "LiveDescendants", err)
		equal(t, "LiveDescendants of the root, detached left out", ids(got), []string{"ses_a", "ses_a1", "ses_a11", "ses_b1"})
		for _, m := range got {
			want := &store.TreeMember{SessionID: m.SessionID, AgentType: orchestrator.AgentTypeDeterministic, CurrentRunID: "run_" + m.SessionID}
			switch m.SessionID {
			case "ses_a":
				want.ParentSessionID, want.Status, want.RunStatus = "ses_root", orchestrator.SessionRunning, orchestrator.RunRunning
			case "ses_a1":
				want.ParentSessionID, want.Status, want.RunStatus = "ses_a", orchestrator.SessionPending, orchestrator.RunPending
			case "ses_a11":
				want.ParentSessionID, want.Status, want.RunStatus = "ses_a1", orchestrator.SessionRunning, orchestrator.RunRunning
			case "ses_b1":
				want.ParentSessionID, want.Status, want.RunStatus = "ses_b", orchestrator.SessionRunning, orchestrator.RunRunning
				want.StopRequested, want.RunnerID = true, "lnch_x"
			}
			equal(t, "member "+m.SessionID, m, want)
		}
		got, err = st.LiveDescendants(ctx(t), store.DescendantsParams{SessionID: "ses_root", IncludeDetached: true})
		must(t, "LiveDescendants with detached", err)
		equal(t, "LiveDescendants of the root, detached in", ids(got), []string{"ses_a", "ses_a1", "ses_a11", "ses_b1", "ses_d", "ses_d1"})
		got, err = st.LiveDescendants(ctx(t), store.DescendantsParams{SessionID: "ses_d"})
		must(t, "LiveDescendants of a detached session", err)
		equal(t, "LiveDescendants of a detached session", ids(got), []string{"ses_d1"})
		got, err = st.LiveDescendants(ctx(t), store.DescendantsParams{SessionID: "ses_e"})
		must(t, "LiveDescendants of a leaf", err)
		if len(got) != 0 {
			t.Fatalf("LiveDescendants of a leaf = %s, want none", show(got))
		}
		got, err = st.LiveDescendants(ctx(t), store.DescendantsParams{SessionID: "ses_missing"})
		if err != nil || len(got) != 0 {
			t.Fatalf("LiveDescendants of an unknown session = %s, %v; want none, nil", show(got), err)
		}
	})

	t.Run("AdmitToTree", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s, r := treeSession("ses_root", "", "ses_root", 0, false, orchestrator.SessionRunning, 1)
		must(t, "create root", st.CreateSessionWithRun(ctx(t), s, r))
		// The root counts itself: max_sessions 3 admits two more.
		for i, want := range []bool{true, true, false, false} {
			ok, err := st.AdmitToTree(ctx(t), "ses_root", 3)
			must(t, "AdmitToTree", err)
			if ok != want {
				t.Fatalf("AdmitToTree #%d (max 3, the root counted) = %v, want %v", i+1, ok, want)
			}
		}
		ok, err := st.AdmitToTree(ctx(t), "ses_root", 4)
		if err != nil || !ok {
			t.Fatalf("AdmitToTree with a larger limit = %v, %v; want true, nil", ok, err)
		}
		_, err = st.AdmitToTree(ctx(t), "ses_missing", 3)
		wantErr(t, "AdmitToTree of an unknown root", err, orchestrator.ErrNotFound)

		// A transaction that fails takes its admission back.
		err = st.InTx(ctx(t), func(ctx2 context.Context, tx store.Store) error {
			if ok, err := tx.AdmitToTree(ctx2, "ses_root", 5); err != nil || !ok {
				t.Errorf("AdmitToTree in a transaction = %v, %v", ok, err)
			}
			return orchestrator.ErrConflict
		})
		wantErr(t, "the failing transaction", err, orchestrator.ErrConflict)
		if ok, err := st.AdmitToTree(ctx(t), "ses_root", 5); err != nil || !ok {
			t.Fatalf("AdmitToTree after a rolled-back admission = %v, %v; want true (the rollback freed its place)", ok, err)
		}
	})

	t.Run("AdmitToTreeConcurrently", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s, r := treeSession("ses_root", "", "ses_root", 0, false, orchestrator.SessionRunning, 1)
		must(t, "create root", st.CreateSessionWithRun(ctx(t), s, r))
		const limit = 10
		starts := concurrencyScale(40)
		if starts < 2*limit {
			starts = 2 * limit
		}
		// Concurrent starts each admit and create their child in one transaction, as the coordinator
		// does: no more than the limit may be created, however they interleave.
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created int
		)
		for i := range starts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := "ses_c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				c, cr := treeSession(id, "ses_root", "ses_root", 1, false, orchestrator.SessionPending, i+2)
				err := st.InTx(ctx(t), func(ctx2 context.Context, tx store.Store) error {
					ok, err := tx.AdmitToTree(ctx2, "ses_root", limit)
					if err != nil {
						return err
					}
					if !ok {
						return orchestrator.ErrConflict
					}
					return tx.CreateSessionWithRun(ctx2, c, cr)
				})
				if err == nil {
					mu.Lock()
					created++
					mu.Unlock()
				} else if !errors.Is(err, orchestrator.ErrConflict) {
					t.Errorf("start %s: %v", id, err)
				}
			}()
		}
		wg.Wait()
		list, err := st.ListSessions(ctx(t), orchestrator.SessionFilter{ParentSessionID: "ses_root"})
		must(t, "ListSessions", err)
		if created != limit-1 || len(list) != limit-1 {
			t.Fatalf("%d concurrent starts in a tree of max_sessions %d (the root counted) created %d (listed %d), want %d",
				starts, limit, created, len(list), limit-1)
		}
	})
}
