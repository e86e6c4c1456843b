package storetest

import (
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testRuns(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		full := newRun("run_full", "ses_a", base)
		full.Demands = orchestrator.Demands{Hostname: "h", ProjectDir: "/p", ExecutorType: "claude-code",
			ExecutorProfile: "fast", Tags: []string{"gpu", "eu"}, RunnerID: "lnch_a"}
		full.Status, full.RunnerID, full.Error = orchestrator.RunFailed, "lnch_a", "boom"
		full.StopRequestedAt, full.StopSentAt = ptr(at(1)), ptr(at(2))
		full.ClaimedAt, full.StartedAt, full.EndedAt = ptr(at(3)), ptr(at(4)), ptr(at(5))
		bare := &orchestrator.Run{ID: "run_bare", SessionID: "ses_a", AgentName: "x", AgentType: orchestrator.AgentTypeAgent,
			Type: orchestrator.RunTypeResume, Status: orchestrator.RunPending, CreatedAt: base}
		for _, r := range []*orchestrator.Run{full, bare} {
			must(t, "CreateRun "+r.ID, s.CreateRun(ctx(t), r))
			got, err := s.GetRun(ctx(t), r.ID)
			must(t, "GetRun "+r.ID, err)
			equal(t, "GetRun "+r.ID, got, r)
		}
		wantErr(t, "CreateRun with a taken id", s.CreateRun(ctx(t), newRun("run_full", "ses_a", base)), orchestrator.ErrConflict)
		dup := newRun("run_bare", "ses_a", base)
		dup.Demands.Tags = []string{"t"}
		wantErr(t, "CreateRun with a taken id and tags", s.CreateRun(ctx(t), dup), orchestrator.ErrConflict)
		_, err := s.GetRun(ctx(t), "run_missing")
		wantErr(t, "GetRun missing", err, orchestrator.ErrNotFound)
		_, err = s.GetRun(ctx(t), "run_\x00")
		wantErr(t, "GetRun with a NUL byte", err, orchestrator.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		type fx struct {
			id, session, runner, agent string
			status                     orchestrator.RunStatus
			created                    int
		}
		fixtures := []fx{
			{"run_9", "ses_a", "", "crawl", orchestrator.RunPending, 1},
			{"run_8", "ses_a", "lnch_a", "crawl", orchestrator.RunCompleted, 2},
			{"run_3", "ses_b", "lnch_a", "write", orchestrator.RunRunning, 3},
			{"run_4", "ses_b", "lnch_b", "crawl", orchestrator.RunClaimed, 3},
			{"run_1", "ses_c", "", "write", orchestrator.RunPending, 4},
		}
		for _, f := range fixtures {
			r := newRun(f.id, f.session, at(f.created))
			r.RunnerID, r.AgentName, r.Status = f.runner, f.agent, f.status
			if f.id == "run_9" || f.id == "run_4" {
				r.Demands.RunnerID = "lnch_owner"
			}
			must(t, "CreateRun "+f.id, s.CreateRun(ctx(t), r))
		}
		if n, err := s.SetRunsParked(ctx(t), []string{"run_1"}, true); err != nil || n != 1 {
			t.Fatalf("SetRunsParked(run_1) = %d, %v; want 1", n, err)
		}
		for _, tc := range []struct {
			name string
			f    orchestrator.RunFilter
			want []string
		}{
			{"all", orchestrator.RunFilter{}, []string{"run_9", "run_8", "run_3", "run_4", "run_1"}},
			{"pending", orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}}, []string{"run_9", "run_1"}},
			{"claimed or running", orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}}, []string{"run_3", "run_4"}},
			{"session", orchestrator.RunFilter{SessionID: "ses_b"}, []string{"run_3", "run_4"}},
			{"runner", orchestrator.RunFilter{RunnerID: "lnch_a"}, []string{"run_8", "run_3"}},
			{"agent", orchestrator.RunFilter{AgentName: "write"}, []string{"run_3", "run_1"}},
			{"pending created before 4ms", orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, CreatedBefore: at(4)}, []string{"run_9"}},
			{"after a tie", orchestrator.RunFilter{AfterID: "run_3"}, []string{"run_4", "run_1"}},
			{"after, limited", orchestrator.RunFilter{AfterID: "run_9", Limit: 2}, []string{"run_8", "run_3"}},
			{"pinned to a runner", orchestrator.RunFilter{DemandRunnerID: "lnch_owner"}, []string{"run_9", "run_4"}},
			{"pinned, pending", orchestrator.RunFilter{DemandRunnerID: "lnch_owner", Statuses: []orchestrator.RunStatus{orchestrator.RunPending}}, []string{"run_9"}},
			{"parked", orchestrator.RunFilter{Parked: ptr(true)}, []string{"run_1"}},
			{"pending, not parked", orchestrator.RunFilter{Parked: ptr(false), Statuses: []orchestrator.RunStatus{orchestrator.RunPending}}, []string{"run_9"}},
		} {
			got, err := s.ListRuns(ctx(t), tc.f)
			must(t, "ListRuns "+tc.name, err)
			equal(t, "ListRuns "+tc.name, runIDs(got), tc.want)
		}
	})

	t.Run("Park", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		runner := newRunner("lnch_p")
		for i, id := range []string{"run_p1", "run_p2"} {
			r := newRun(id, "ses_p", at(i))
			r.Demands = orchestrator.Demands{}
			must(t, "CreateRun "+id, s.CreateRun(ctx(t), r))
		}
		done := newRun("run_done", "ses_p", at(5))
		done.Status = orchestrator.RunCompleted
		must(t, "CreateRun run_done", s.CreateRun(ctx(t), done))

		n, err := s.SetRunsParked(ctx(t), []string{"run_p1", "run_done", "run_missing"}, true)
		if err != nil || n != 1 {
			t.Fatalf("SetRunsParked = %d, %v; want 1 (only the pending run)", n, err)
		}
		if n, err := s.SetRunsParked(ctx(t), []string{"run_p1"}, true); err != nil || n != 0 {
			t.Fatalf("SetRunsParked again = %d, %v; want 0", n, err)
		}
		if got, _ := s.GetRun(ctx(t), "run_p1"); !got.Parked {
			t.Fatalf("run_p1 not parked after SetRunsParked")
		}
		// A parked run is never claimed, even though it is the oldest.
		got, err := claimOne(ctx(t), s, store.ClaimParams{Runner: runner, Now: at(10)})
		must(t, "claim", err)
		if got.ID != "run_p2" {
			t.Fatalf("claimed %s, want run_p2 (run_p1 is parked)", got.ID)
		}
		_, err = claimOne(ctx(t), s, store.ClaimParams{Runner: runner, Now: at(11)})
		wantErr(t, "claim with only a parked run left", err, orchestrator.ErrNotFound)
		if n, err := s.SetRunsParked(ctx(t), []string{"run_p1"}, false); err != nil || n != 1 {
			t.Fatalf("unpark = %d, %v; want 1", n, err)
		}
		got, err = claimOne(ctx(t), s, store.ClaimParams{Runner: runner, Now: at(12)})
		must(t, "claim after unparking", err)
		if got.ID != "run_p1" || got.Parked {
			t.Fatalf("claimed %+v, want run_p1 unparked", got)
		}
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		r := newRun("run_a", "ses_a", base)
		r.Status, r.RunnerID = orchestrator.RunClaimed, "lnch_a"
		must(t, "CreateRun", s.CreateRun(ctx(t), r))

		_, err := s.UpdateRun(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunClaimed}, "lnch_b",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning)})
		wantErr(t, "UpdateRun by another runner", err, orchestrator.ErrConflict)
		_, err = s.UpdateRun(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunPending}, "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunClaimed)})
		wantErr(t, "UpdateRun from the wrong status", err, orchestrator.ErrConflict)
		_, err = s.UpdateRun(ctx(t), "run_missing", []orchestrator.RunStatus{orchestrator.RunClaimed}, "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning)})
		wantErr(t, "UpdateRun missing", err, orchestrator.ErrNotFound)
		_, err = s.UpdateRun(ctx(t), "run_missing", nil, "", store.RunUpdate{})
		wantErr(t, "UpdateRun missing, unguarded", err, orchestrator.ErrNotFound)
		if got, _ := s.GetRun(ctx(t), "run_a"); got.Status != orchestrator.RunClaimed {
			t.Fatalf("a refused update changed the status to %s", got.Status)
		}

		got, err := s.UpdateRun(ctx(t), "run_a", runStatusesBefore(orchestrator.RunRunning), "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunRunning), StartedAt: ptr(at(1))})
		must(t, "UpdateRun claimed→running", err)
		r.Status, r.StartedAt = orchestrator.RunRunning, ptr(at(1))
		equal(t, "UpdateRun claimed→running", got, r)

		got, err = s.UpdateRun(ctx(t), "run_a", nil, "", store.RunUpdate{StopRequestedAt: ptr(at(2))})
		must(t, "UpdateRun stop request, unguarded", err)
		r.StopRequestedAt = ptr(at(2))
		equal(t, "UpdateRun stop request", got, r)

		usage := &orchestrator.Usage{InputTokens: 12, OutputTokens: 345, CacheReadInputTokens: 6789, CacheCreationInputTokens: 1011, CostUSD: 0.0421,
			Models: map[string]*orchestrator.ModelUsage{"claude-sonnet-4-5": {InputTokens: 12, OutputTokens: 345, CacheReadInputTokens: 6789, CacheCreationInputTokens: 1011, CostUSD: 0.0421}}}
		got, err = s.UpdateRun(ctx(t), "run_a", runStatusesBefore(orchestrator.RunFailed), "lnch_a",
			store.RunUpdate{Status: ptr(orchestrator.RunFailed), Error: ptr("lost"), EndedAt: ptr(at(3)), RunnerID: ptr("lnch_z"), Usage: usage})
		must(t, "UpdateRun running→failed", err)
		r.Status, r.Error, r.EndedAt, r.RunnerID, r.Usage = orchestrator.RunFailed, "lost", ptr(at(3)), "lnch_z", usage
		equal(t, "UpdateRun running→failed", got, r)
		stored, _ := s.GetRun(ctx(t), "run_a")
		equal(t, "stored after UpdateRun", stored, r)

		// An empty update still checks the guard.
		_, err = s.UpdateRun(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunRunning}, "", store.RunUpdate{})
		wantErr(t, "empty UpdateRun from the wrong status", err, orchestrator.ErrConflict)
		got, err = s.UpdateRun(ctx(t), "run_a", []orchestrator.RunStatus{orchestrator.RunFailed}, "lnch_z", store.RunUpdate{})
		must(t, "empty UpdateRun", err)
		equal(t, "empty UpdateRun", got, r)
	})

	t.Run("TakeStopRequests", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		type fx struct {
			id, runner string
			status     orchestrator.RunStatus
			stop       bool
		}
		for i, f := range []fx{
			{"run_b", "lnch_a", orchestrator.RunRunning, true},
			{"run_a", "lnch_a", orchestrator.RunClaimed, true},
			{"run_c", "lnch_a", orchestrator.RunRunning, false},
			{"run_d", "lnch_a", orchestrator.RunPending, true},
			{"run_e", "lnch_a", orchestrator.RunCompleted, true},
			{"run_f", "lnch_b", orchestrator.RunRunning, true},
		} {
			r := newRun(f.id, "ses_a", at(i))
			r.RunnerID, r.Status = f.runner, f.status
			if f.stop {
				r.StopRequestedAt = ptr(at(10))
			}
			must(t, "CreateRun "+f.id, s.CreateRun(ctx(t), r))
		}
		got, err := s.TakeStopRequests(ctx(t), "lnch_a", at(100), at(50))
		must(t, "TakeStopRequests", err)
		equal(t, "TakeStopRequests", runIDs(got), []string{"run_b", "run_a"})
		for _, r := range got {
			if r.StopSentAt == nil || !r.StopSentAt.Equal(at(100)) {
				t.Fatalf("run %s StopSentAt = %v, want %v", r.ID, r.StopSentAt, at(100))
			}
		}
		// Sent at 100ms: not again until the resend threshold passes it.
		got, err = s.TakeStopRequests(ctx(t), "lnch_a", at(150), at(100))
		must(t, "TakeStopRequests again", err)
		equal(t, "TakeStopRequests again", runIDs(got), []string{})
		got, err = s.TakeStopRequests(ctx(t), "lnch_a", at(200), at(101))
		must(t, "TakeStopRequests for a resend", err)
		equal(t, "TakeStopRequests for a resend", runIDs(got), []string{"run_b", "run_a"})
		if r, _ := s.GetRun(ctx(t), "run_a"); r.StopSentAt == nil || !r.StopSentAt.Equal(at(200)) {
			t.Fatalf("stored StopSentAt = %v, want %v", r.StopSentAt, at(200))
		}
		got, err = s.TakeStopRequests(ctx(t), "lnch_missing", at(200), at(101))
		must(t, "TakeStopRequests of an unknown runner", err)
		equal(t, "TakeStopRequests of an unknown runner", runIDs(got), []string{})
	})
}
