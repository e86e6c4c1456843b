package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testSessions(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		full := newSession("ses_full", base)
		full.ParentSessionID, full.Callback, full.RunnerID, full.CurrentRunID = "ses_parent", true, "lnch_a", "run_1"
		full.ExecutorSessionID, full.Error, full.LastEventSeq = "claude-123", "boom", 0
		full.Status, full.EndedAt = orchestrator.SessionFailed, ptr(at(9))
		full.RerunOf = "ses_original" // a re-run keeps the session it re-runs
		full.Result = &orchestrator.Result{
			ResultType: "deterministic", ResultText: "out\n", ResultData: json.RawMessage(`{"pages":[1,2]}`),
			ExitCode: ptr(3), Error: "exit status 3", Truncated: true,
			ValidationErrors: []orchestrator.FieldError{{Path: "$.pages", Message: "bad", SchemaPath: "properties.pages"}},
		}
		bare := &orchestrator.Session{ID: "ses_bare", AgentName: "x", AgentType: orchestrator.AgentTypeAgent,
			Status: orchestrator.SessionPending, CreatedAt: base, UpdatedAt: base}
		for _, se := range []*orchestrator.Session{full, bare} {
			must(t, "CreateSession "+se.ID, s.CreateSession(ctx(t), se))
			got, err := s.GetSession(ctx(t), se.ID)
			must(t, "GetSession "+se.ID, err)
			equal(t, "GetSession "+se.ID, got, se)
		}
		wantErr(t, "CreateSession with a taken id", s.CreateSession(ctx(t), newSession("ses_full", base)), orchestrator.ErrConflict)
		_, err := s.GetSession(ctx(t), "ses_missing")
		wantErr(t, "GetSession missing", err, orchestrator.ErrNotFound)
		_, err = s.GetSession(ctx(t), "ses_\x00")
		wantErr(t, "GetSession with a NUL byte", err, orchestrator.ErrNotFound)
	})

	t.Run("CreateSessionWithRun", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// A run with demands and without tags, and one with tags (stored in a table of their own).
		for _, tags := range [][]string{nil, {"gpu", "linux"}} {
			id := fmt.Sprintf("%d", len(tags))
			se, run := newSession("ses_"+id, base), newRun("run_"+id, "ses_"+id, base)
			se.RerunOf = "ses_original_" + id
			run.Demands = orchestrator.Demands{Hostname: "web-1", RunnerID: "lnch_a", Tags: tags}
			must(t, "CreateSessionWithRun "+id, s.CreateSessionWithRun(ctx(t), se, run))
			gotS, err := s.GetSession(ctx(t), se.ID)
			must(t, "GetSession "+se.ID, err)
			equal(t, "GetSession "+se.ID, gotS, se)
			gotR, err := s.GetRun(ctx(t), run.ID)
			must(t, "GetRun "+run.ID, err)
			equal(t, "GetRun "+run.ID, gotR, run)
		}

		// Both or neither: a taken session id leaves no run behind, a taken run id no session.
		for _, tags := range [][]string{nil, {"gpu"}} {
			err := s.CreateSessionWithRun(ctx(t), newSession("ses_0", base), withTags(newRun("run_new", "ses_0", base), tags))
			wantErr(t, "CreateSessionWithRun with a taken session id", err, orchestrator.ErrConflict)
			_, err = s.GetRun(ctx(t), "run_new")
			wantErr(t, "the run of a refused CreateSessionWithRun", err, orchestrator.ErrNotFound)

			err = s.CreateSessionWithRun(ctx(t), newSession("ses_new", base), withTags(newRun("run_0", "ses_new", base), tags))
			wantErr(t, "CreateSessionWithRun with a taken run id", err, orchestrator.ErrConflict)
			_, err = s.GetSession(ctx(t), "ses_new")
			wantErr(t, "the session of a refused CreateSessionWithRun", err, orchestrator.ErrNotFound)
		}

		// In a transaction it is part of it.
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if err := tx.CreateSessionWithRun(ctx, newSession("ses_tx", base), newRun("run_tx", "ses_tx", base)); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("InTx = %v, want the function's error", err)
		}
		_, err = s.GetSession(ctx(t), "ses_tx")
		wantErr(t, "a session created in a rolled back transaction", err, orchestrator.ErrNotFound)
		_, err = s.GetRun(ctx(t), "run_tx")
		wantErr(t, "a run created in a rolled back transaction", err, orchestrator.ErrNotFound)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		se := newSession("ses_a", base)
		must(t, "CreateSession", s.CreateSession(ctx(t), se))
		pending := []orchestrator.SessionStatus{orchestrator.SessionPending}

		res := &orchestrator.Result{ResultType: "agent", ResultText: "done", ExitCode: ptr(0)}
		got, err := s.UpdateSession(ctx(t), "ses_a", pending, store.SessionUpdate{
			Status: ptr(orchestrator.SessionCompleted), RunnerID: ptr("lnch_a"), CurrentRunID: ptr("run_1"),
			ExecutorSessionID: ptr("exec_1"), Result: res, Error: ptr("none"), ErrorCode: ptr("timeout"), EndedAt: ptr(at(5)), UpdatedAt: at(5),
		})
		must(t, "UpdateSession pending→completed", err)
		want := newSession("ses_a", base)
		want.Status, want.RunnerID, want.CurrentRunID, want.ExecutorSessionID = orchestrator.SessionCompleted, "lnch_a", "run_1", "exec_1"
		want.Result, want.Error, want.ErrorCode, want.EndedAt, want.UpdatedAt = res, "none", "timeout", ptr(at(5)), at(5)
		equal(t, "UpdateSession result", got, want)
		stored, _ := s.GetSession(ctx(t), "ses_a")
		equal(t, "stored after UpdateSession", stored, want)

		_, err = s.UpdateSession(ctx(t), "ses_a", pending, store.SessionUpdate{Status: ptr(orchestrator.SessionRunning), UpdatedAt: at(6)})
		wantErr(t, "UpdateSession from the wrong status", err, orchestrator.ErrConflict)
		if stored, _ := s.GetSession(ctx(t), "ses_a"); !stored.UpdatedAt.Equal(at(5)) {
			t.Fatalf("a refused update changed UpdatedAt to %v", stored.UpdatedAt)
		}
		_, err = s.UpdateSession(ctx(t), "ses_missing", pending, store.SessionUpdate{Status: ptr(orchestrator.SessionRunning)})
		wantErr(t, "UpdateSession missing", err, orchestrator.ErrNotFound)
		_, err = s.UpdateSession(ctx(t), "ses_missing", nil, store.SessionUpdate{Status: ptr(orchestrator.SessionRunning)})
		wantErr(t, "UpdateSession missing, any status", err, orchestrator.ErrNotFound)

		// A resume: back to pending, the end time cleared, the result kept; then cleared.
		got, err = s.UpdateSession(ctx(t), "ses_a", sessionStatusesBefore(orchestrator.SessionPending), store.SessionUpdate{
			Status: ptr(orchestrator.SessionPending), ClearEndedAt: true, UpdatedAt: at(7),
		})
		must(t, "UpdateSession resume", err)
		want.Status, want.EndedAt, want.UpdatedAt = orchestrator.SessionPending, nil, at(7)
		equal(t, "UpdateSession resume", got, want)
		got, err = s.UpdateSession(ctx(t), "ses_a", nil, store.SessionUpdate{ClearResult: true, UpdatedAt: at(8)})
		must(t, "UpdateSession clear result, any status", err)
		want.Result, want.UpdatedAt = nil, at(8)
		equal(t, "UpdateSession clear result", got, want)
		got, err = s.UpdateSession(ctx(t), "ses_a", nil, store.SessionUpdate{ErrorCode: ptr(""), UpdatedAt: at(9)})
		must(t, "UpdateSession clear error code", err)
		want.ErrorCode, want.UpdatedAt = "", at(9)
		equal(t, "UpdateSession clear error code", got, want)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// Seven sessions; ses_3 and ses_4 share a creation time (ordered by id), ids otherwise run against
		// time so that an id-only order would be caught.
		type fx struct {
			id, agent, parent string
			status            orchestrator.SessionStatus
			created           int
			ended             int // 0: not ended
		}
		fixtures := []fx{
			{"ses_9", "a", "", orchestrator.SessionCompleted, 1, 10},
			{"ses_8", "b", "ses_9", orchestrator.SessionRunning, 2, 0},
			{"ses_3", "a", "ses_9", orchestrator.SessionFailed, 3, 30},
			{"ses_4", "a", "", orchestrator.SessionPending, 3, 0},
			{"ses_2", "b", "ses_8", orchestrator.SessionCompleted, 4, 50},
			{"ses_1", "a", "ses_9", orchestrator.SessionStopped, 5, 5},
			{"ses_0", "c", "", orchestrator.SessionRunning, 6, 0},
		}
		for _, f := range fixtures {
			se := newSession(f.id, at(f.created))
			se.AgentName, se.ParentSessionID, se.Status = f.agent, f.parent, f.status
			if f.ended != 0 {
				se.EndedAt = ptr(at(f.ended))
			}
			must(t, "CreateSession "+f.id, s.CreateSession(ctx(t), se))
		}
		all := []string{"ses_9", "ses_8", "ses_3", "ses_4", "ses_2", "ses_1", "ses_0"}
		for _, tc := range []struct {
			name string
			f    orchestrator.SessionFilter
			want []string
		}{
			{"all", orchestrator.SessionFilter{}, all},
			{"status", orchestrator.SessionFilter{Statuses: []orchestrator.SessionStatus{orchestrator.SessionRunning, orchestrator.SessionPending}}, []string{"ses_8", "ses_4", "ses_0"}},
			{"agent", orchestrator.SessionFilter{AgentName: "a"}, []string{"ses_9", "ses_3", "ses_4", "ses_1"}},
			{"parent", orchestrator.SessionFilter{ParentSessionID: "ses_9"}, []string{"ses_8", "ses_3", "ses_1"}},
			{"agent and parent", orchestrator.SessionFilter{AgentName: "a", ParentSessionID: "ses_9"}, []string{"ses_3", "ses_1"}},
			{"ended before 30ms", orchestrator.SessionFilter{EndedBefore: at(30)}, []string{"ses_9", "ses_1"}},
			{"limit", orchestrator.SessionFilter{Limit: 2}, []string{"ses_9", "ses_8"}},
			{"after a tie", orchestrator.SessionFilter{AfterID: "ses_3"}, []string{"ses_4", "ses_2", "ses_1", "ses_0"}},
			{"after, filtered", orchestrator.SessionFilter{AfterID: "ses_3", AgentName: "a", Limit: 1}, []string{"ses_4"}},
			{"after the last", orchestrator.SessionFilter{AfterID: "ses_0"}, []string{}},
			{"newest first", orchestrator.SessionFilter{NewestFirst: true}, reversed(all)},
			{"newest first, filtered", orchestrator.SessionFilter{NewestFirst: true, AgentName: "a", Limit: 3}, []string{"ses_1", "ses_4", "ses_3"}},
			{"newest first, after a tie", orchestrator.SessionFilter{NewestFirst: true, AfterID: "ses_4"}, []string{"ses_3", "ses_8", "ses_9"}},
			{"newest first, after the oldest", orchestrator.SessionFilter{NewestFirst: true, AfterID: "ses_9"}, []string{}},
		} {
			got, err := s.ListSessions(ctx(t), tc.f)
			must(t, "ListSessions "+tc.name, err)
			equal(t, "ListSessions "+tc.name, sessionIDs(got), tc.want)
		}

		_, err := s.ListSessions(ctx(t), orchestrator.SessionFilter{AfterID: "ses_missing"})
		wantErr(t, "ListSessions after a session that does not exist", err, orchestrator.ErrNotFound)

		// Paging with the cursor visits every session once, in order, whatever the page size and direction.
		for _, newest := range []bool{false, true} {
			want := all
			if newest {
				want = reversed(all)
			}
			for size := 1; size <= 4; size++ {
				var seen []string
				after := ""
				for range 10 {
					page, err := s.ListSessions(ctx(t), orchestrator.SessionFilter{AfterID: after, Limit: size, NewestFirst: newest})
					must(t, "ListSessions page", err)
					if len(page) == 0 {
						break
					}
					seen = append(seen, sessionIDs(page)...)
					after = page[len(page)-1].ID
				}
				equal(t, fmt.Sprintf("pages of %d, newest first %v", size, newest), seen, want)
			}
		}
	})

	t.Run("DeleteCascades", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, id := range []string{"ses_a", "ses_parent", "ses_child", "ses_other"} {
			must(t, "CreateSession "+id, s.CreateSession(ctx(t), newSession(id, base)))
		}
		tagged := newRun("run_a1", "ses_a", at(1))
		tagged.Demands = orchestrator.Demands{Tags: []string{"gpu", "x"}}
		must(t, "CreateRun", s.CreateRun(ctx(t), tagged))
		must(t, "CreateRun", s.CreateRun(ctx(t), newRun("run_a2", "ses_a", at(2))))
		must(t, "CreateRun", s.CreateRun(ctx(t), newRun("run_o", "ses_other", at(3))))
		for _, id := range []string{"ses_a", "ses_other"} {
			ev := orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "hi"})
			must(t, "AppendEvents", s.AppendEvents(ctx(t), id, []*orchestrator.Event{&ev}))
		}
		for _, c := range []*orchestrator.Callback{
			{ID: "cb_1", ParentSessionID: "ses_a", ChildSessionID: "ses_child", Type: "child_completed", CreatedAt: base},
			{ID: "cb_2", ParentSessionID: "ses_parent", ChildSessionID: "ses_a", Type: "child_failed", CreatedAt: base},
			{ID: "cb_3", ParentSessionID: "ses_parent", ChildSessionID: "ses_child", Type: "child_failed", CreatedAt: base},
		} {
			must(t, "CreateCallback", s.CreateCallback(ctx(t), c))
		}

		must(t, "DeleteSession", s.DeleteSession(ctx(t), "ses_a"))

		_, err := s.GetSession(ctx(t), "ses_a")
		wantErr(t, "GetSession deleted", err, orchestrator.ErrNotFound)
		for _, id := range []string{"run_a1", "run_a2"} {
			_, err := s.GetRun(ctx(t), id)
			wantErr(t, "GetRun of a deleted session", err, orchestrator.ErrNotFound)
		}
		if ev, err := s.ListEvents(ctx(t), "ses_a", 0, 0); err != nil || len(ev) != 0 {
			t.Fatalf("ListEvents of a deleted session = %d events, %v; want none", len(ev), err)
		}
		cbs, err := s.ListCallbacks(ctx(t), store.CallbackFilter{})
		must(t, "ListCallbacks", err)
		equal(t, "callbacks left", callbackIDs(cbs), []string{"cb_3"})
		// The other session keeps everything.
		if _, err := s.GetRun(ctx(t), "run_o"); err != nil {
			t.Fatalf("GetRun of another session: %v", err)
		}
		if ev, _ := s.ListEvents(ctx(t), "ses_other", 0, 0); len(ev) != 1 {
			t.Fatalf("events of another session = %d, want 1", len(ev))
		}
		// Nothing of the deleted run is left behind: the same run can be created again.
		must(t, "CreateSession again", s.CreateSession(ctx(t), newSession("ses_a", base)))
		must(t, "CreateRun again", s.CreateRun(ctx(t), tagged))
		got, err := s.GetRun(ctx(t), "run_a1")
		must(t, "GetRun", err)
		equal(t, "recreated run", got, tagged)

		wantErr(t, "DeleteSession missing", s.DeleteSession(ctx(t), "ses_missing"), orchestrator.ErrNotFound)
	})
}

// errRollback is a transaction function's own error, which rolls the transaction back.
var errRollback = errors.New("storetest: roll back")

// withTags sets the tags r demands.
func withTags(r *orchestrator.Run, tags []string) *orchestrator.Run {
	r.Demands.Tags = tags
	return r
}
