package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
)

func newSchedule(id, agent string, next time.Time) *orchestrator.Schedule {
	return &orchestrator.Schedule{
		ID:         id,
		AgentName:  agent,
		Parameters: json.RawMessage(`{"url":"https://example.com"}`),
		Cron:       "*/5 * * * *",
		Timezone:   "Europe/Paris",
		Overlap:    orchestrator.OverlapQueue,
		NextFireAt: next,
		CreatedAt:  base,
		UpdatedAt:  base,
	}
}

func scheduleIDs(ss []*orchestrator.Schedule) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func testSchedules(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s := newSchedule("sch_1", "crawler", at(5000))
		s.Paused, s.Queued = true, true
		s.LastFiredAt, s.LastSessionID, s.LastError = ptr(at(10)), "ses_1", "agent_not_found: gone"
		must(t, "CreateSchedule", st.CreateSchedule(ctx(t), s))
		wantErr(t, "CreateSchedule twice", st.CreateSchedule(ctx(t), newSchedule("sch_1", "x", at(1))), orchestrator.ErrConflict)
		got, err := st.GetSchedule(ctx(t), "sch_1")
		must(t, "GetSchedule", err)
		equal(t, "GetSchedule", got, s)
		_, err = st.GetSchedule(ctx(t), "sch_nope")
		wantErr(t, "GetSchedule missing", err, orchestrator.ErrNotFound)
		wantErr(t, "DeleteSchedule missing", st.DeleteSchedule(ctx(t), "sch_nope"), orchestrator.ErrNotFound)
		must(t, "DeleteSchedule", st.DeleteSchedule(ctx(t), "sch_1"))
		_, err = st.GetSchedule(ctx(t), "sch_1")
		wantErr(t, "GetSchedule deleted", err, orchestrator.ErrNotFound)
	})

	t.Run("GuardedUpdate", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		must(t, "CreateSchedule", st.CreateSchedule(ctx(t), newSchedule("sch_1", "crawler", at(1000))))
		a, err := st.GetSchedule(ctx(t), "sch_1")
		must(t, "GetSchedule", err)
		b := *a
		a.NextFireAt, a.LastSessionID, a.UpdatedAt = at(2000), "ses_a", at(1)
		must(t, "UpdateSchedule a", st.UpdateSchedule(ctx(t), a))
		if a.Revision != 1 {
			t.Fatalf("revision after update = %d, want 1", a.Revision)
		}
		b.LastSessionID = "ses_b"
		wantErr(t, "UpdateSchedule with a stale revision", st.UpdateSchedule(ctx(t), &b), orchestrator.ErrConflict)
		got, err := st.GetSchedule(ctx(t), "sch_1")
		must(t, "GetSchedule", err)
		equal(t, "after the lost update", got, a)
		missing := newSchedule("sch_nope", "crawler", at(1))
		wantErr(t, "UpdateSchedule missing", st.UpdateSchedule(ctx(t), missing), orchestrator.ErrNotFound)

		// Of concurrent writers that read the same revision exactly one wins.
		const writers = 8
		var wg sync.WaitGroup
		wins := make(chan string, writers)
		for i := range writers {
			w := *got
			w.LastSessionID = "ses_w" + string(rune('0'+i))
			wg.Go(func() {
				if err := st.UpdateSchedule(ctx(t), &w); err == nil {
					wins <- w.LastSessionID
				}
			})
		}
		wg.Wait()
		close(wins)
		if n := len(wins); n != 1 {
			t.Fatalf("%d concurrent guarded updates won, want exactly 1", n)
		}
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s1 := newSchedule("sch_1", "crawler", at(3000))
		s2 := newSchedule("sch_2", "mailer", at(1000))
		s2.CreatedAt = at(1)
		s3 := newSchedule("sch_3", "crawler", at(500))
		s3.CreatedAt, s3.Paused = at(2), true
		s4 := newSchedule("sch_4", "crawler", at(9000))
		s4.CreatedAt, s4.Queued = at(3), true
		for _, s := range []*orchestrator.Schedule{s1, s2, s3, s4} {
			must(t, "CreateSchedule", st.CreateSchedule(ctx(t), s))
		}
		for _, tc := range []struct {
			name string
			f    orchestrator.ScheduleFilter
			want []string
		}{
			{"all, oldest first", orchestrator.ScheduleFilter{}, []string{"sch_1", "sch_2", "sch_3", "sch_4"}},
			{"by agent", orchestrator.ScheduleFilter{AgentName: "crawler"}, []string{"sch_1", "sch_3", "sch_4"}},
			{"page", orchestrator.ScheduleFilter{AfterID: "sch_1", Limit: 2}, []string{"sch_2", "sch_3"}},
			{"active, soonest first", orchestrator.ScheduleFilter{Active: true}, []string{"sch_2", "sch_1", "sch_4"}},
			{"active page", orchestrator.ScheduleFilter{Active: true, AfterID: "sch_2", Limit: 1}, []string{"sch_1"}},
			{"due: unpaused, by time or queued", orchestrator.ScheduleFilter{DueBy: at(2000)}, []string{"sch_2", "sch_4"}},
			{"due later", orchestrator.ScheduleFilter{DueBy: at(3000)}, []string{"sch_2", "sch_1", "sch_4"}},
		} {
			got, err := st.ListSchedules(ctx(t), tc.f)
			must(t, tc.name, err)
			equal(t, tc.name, scheduleIDs(got), tc.want)
		}
		_, err := st.ListSchedules(ctx(t), orchestrator.ScheduleFilter{AfterID: "sch_nope"})
		wantErr(t, "ListSchedules after a missing cursor", err, orchestrator.ErrNotFound)
	})

	testScheduleFiring(t, newStore)
}

// clock is a settable clock several coordinators share.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// firingFixture is a store with an AI agent and coordinators on it that share one clock, stopped at a
// whole minute.
type firingFixture struct {
	st     store.Store
	clock  *clock
	coords []*coordinator.Coordinator
}

func newFiringFixture(t *testing.T, newStore func(*testing.T) store.Store, coordinators int) *firingFixture {
	st := newStore(t)
	must(t, "CreateAgent", st.CreateAgent(ctx(t), newAgent("crawler", orchestrator.AgentTypeAgent, "")))
	fx := &firingFixture{st: st, clock: &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}}
	for range coordinators {
		c, err := coordinator.New(coordinator.Config{Store: st, Now: fx.clock.Now, AgentCacheTTL: -1})
		must(t, "coordinator.New", err)
		fx.coords = append(fx.coords, c)
	}
	return fx
}

// fire makes every coordinator fire what is due, all at once.
func (fx *firingFixture) fire(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(fx.coords))
	for _, c := range fx.coords {
		wg.Go(func() { errs <- c.FireSchedules(ctx(t)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "FireSchedules", err)
	}
}

// sessions returns the sessions the schedule started, oldest first.
func (fx *firingFixture) sessions(t *testing.T, scheduleID string) []*orchestrator.Session {
	t.Helper()
	all, err := fx.st.ListSessions(ctx(t), orchestrator.SessionFilter{})
	must(t, "ListSessions", err)
	var out []*orchestrator.Session
	for _, s := range all {
		var md struct {
			ScheduleID string `json:"schedule_id"`
		}
		if json.Unmarshal(s.Metadata, &md) == nil && md.ScheduleID == scheduleID {
			out = append(out, s)
		}
	}
	return out
}

func (fx *firingFixture) wantFirings(t *testing.T, what, scheduleID string, want int) []*orchestrator.Session {
	t.Helper()
	got := fx.sessions(t, scheduleID)
	if len(got) != want {
		t.Fatalf("%s: %d sessions with schedule_id %s, want %d", what, len(got), scheduleID, want)
	}
	return got
}

func (fx *firingFixture) create(t *testing.T, p orchestrator.ScheduleParams) *orchestrator.Schedule {
	t.Helper()
	p.AgentName = "crawler"
	p.Parameters = json.RawMessage(`{"url":"https://example.com"}`)
	s, err := fx.coords[0].CreateSchedule(ctx(t), p)
	must(t, "CreateSchedule", err)
	return s
}

// endSession completes a session as its runner would have.
func (fx *firingFixture) endSession(t *testing.T, id string) {
	t.Helper()
	_, err := fx.st.UpdateSession(ctx(t), id, nil, store.SessionUpdate{
		Status: ptr(orchestrator.SessionCompleted), EndedAt: ptr(fx.clock.Now()), UpdatedAt: fx.clock.Now(),
	})
	must(t, "end session", err)
}

func testScheduleFiring(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("OneFiringPerTickWithTwoCoordinators", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 2)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "* * * * *", Overlap: orchestrator.OverlapAllow})
		if want := fx.clock.Now().Add(time.Minute); !s.NextFireAt.Equal(want) {
			t.Fatalf("first tick = %v, want %v", s.NextFireAt, want)
		}
		fx.fire(t)
		fx.wantFirings(t, "before the first tick", s.ID, 0)
		for tick := 1; tick <= 5; tick++ {
			fx.clock.Add(time.Minute)
			fx.fire(t)
			fx.fire(t) // a second pass on the same tick fires nothing either
			got := fx.wantFirings(t, "tick", s.ID, tick)
			after, err := fx.st.GetSchedule(ctx(t), s.ID)
			must(t, "GetSchedule", err)
			if after.LastSessionID != got[len(got)-1].ID || !after.NextFireAt.Equal(fx.clock.Now().Add(time.Minute)) {
				t.Fatalf("tick %d: schedule last session %s next %v, want %s and %v", tick,
					after.LastSessionID, after.NextFireAt, got[len(got)-1].ID, fx.clock.Now().Add(time.Minute))
			}
		}
		runs, err := fx.st.ListRuns(ctx(t), orchestrator.RunFilter{AgentName: "crawler"})
		must(t, "ListRuns", err)
		if len(runs) != 5 {
			t.Fatalf("%d runs after 5 ticks, want 5", len(runs))
		}
	})

	t.Run("PauseStopsFiring", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 2)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "*/10 * * * * *", Overlap: orchestrator.OverlapAllow})
		fx.clock.Add(10 * time.Second)
		fx.fire(t)
		fx.wantFirings(t, "first tick", s.ID, 1)
		_, err := fx.coords[1].UpdateSchedule(ctx(t), s.ID, orchestrator.ScheduleParams{Paused: ptr(true)})
		must(t, "pause", err)
		for range 3 {
			fx.clock.Add(10 * time.Second)
			fx.fire(t)
		}
		fx.wantFirings(t, "while paused", s.ID, 1)
		resumed, err := fx.coords[0].UpdateSchedule(ctx(t), s.ID, orchestrator.ScheduleParams{Paused: ptr(false)})
		must(t, "resume", err)
		if want := fx.clock.Now().Add(10 * time.Second); !resumed.NextFireAt.Equal(want) {
			t.Fatalf("after resume the next tick is %v, want %v (missed ticks are not made up)", resumed.NextFireAt, want)
		}
		fx.fire(t)
		fx.wantFirings(t, "right after resume", s.ID, 1)
		fx.clock.Add(10 * time.Second)
		fx.fire(t)
		fx.wantFirings(t, "after resume", s.ID, 2)
	})

	t.Run("MissedTicksFireOnce", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 1)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "* * * * *", Overlap: orchestrator.OverlapAllow})
		fx.clock.Add(10*time.Minute + 30*time.Second) // ten ticks pass with no coordinator running
		fx.fire(t)
		fx.wantFirings(t, "after downtime", s.ID, 1)
		after, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if want := fx.clock.Now().Truncate(time.Minute).Add(time.Minute); !after.NextFireAt.Equal(want) {
			t.Fatalf("next tick after downtime = %v, want %v (the first after now)", after.NextFireAt, want)
		}
	})

	t.Run("OverlapSkip", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 2)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "@every 1m"})
		if s.Overlap != orchestrator.OverlapSkip {
			t.Fatalf("default overlap = %q, want skip", s.Overlap)
		}
		fx.clock.Add(time.Minute)
		fx.fire(t)
		first := fx.wantFirings(t, "first tick", s.ID, 1)
		fx.clock.Add(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "tick while the first session is active", s.ID, 1)
		fx.endSession(t, first[0].ID)
		fx.fire(t)
		fx.wantFirings(t, "end of the session between ticks", s.ID, 1)
		fx.clock.Add(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "tick after the session ended", s.ID, 2)
	})

	t.Run("OverlapQueue", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 2)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "@every 1m", Overlap: orchestrator.OverlapQueue})
		fx.clock.Add(time.Minute)
		fx.fire(t)
		first := fx.wantFirings(t, "first tick", s.ID, 1)
		for range 3 { // three ticks while it runs: one queued firing
			fx.clock.Add(time.Minute)
			fx.fire(t)
		}
		fx.wantFirings(t, "ticks while the first session is active", s.ID, 1)
		queued, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if !queued.Queued {
			t.Fatalf("schedule not queued after a tick during an active session")
		}
		fx.clock.Add(time.Second)
		fx.endSession(t, first[0].ID)
		fx.fire(t)
		fx.wantFirings(t, "after the first session ended", s.ID, 2)
		fx.fire(t)
		fx.wantFirings(t, "a second pass", s.ID, 2)
		after, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if after.Queued {
			t.Fatalf("schedule still queued after its queued tick fired")
		}
	})

	t.Run("FailedStartUsesTheTick", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 1)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "@every 1m", Overlap: orchestrator.OverlapAllow})
		must(t, "DeleteAgent", fx.st.DeleteAgent(ctx(t), "crawler"))
		fx.clock.Add(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "with the agent gone", s.ID, 0)
		after, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if after.LastError == "" || !after.NextFireAt.After(fx.clock.Now()) {
			t.Fatalf("after a failed start: last_error %q, next tick %v; want an error and a later tick", after.LastError, after.NextFireAt)
		}
	})
}
