package coordinator_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

func ctx(t testing.TB) context.Context { return t.Context() }

func ptr[T any](v T) *T { return &v }

func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// firingFixture is a store with an AI agent and coordinators on it that share one clock, stopped at a
// whole minute.
type firingFixture struct {
	st     store.Store
	clock  *clock
	coords []*coordinator.Coordinator
}

func newFiringFixture(t *testing.T, newStore func(*testing.T) *sqlstore.Store, coordinators int) *firingFixture {
	st := newStore(t)
	fx := &firingFixture{st: st, clock: &clock{now: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}}
	for range coordinators {
		c, err := coordinator.New(coordinator.Config{Store: st, Now: fx.clock.Now, AgentCacheTTL: -1})
		must(t, "coordinator.New", err)
		fx.coords = append(fx.coords, c)
	}
	_, err := fx.coords[0].CreateAgent(ctx(t), &orchestrator.Blueprint{Name: "crawler", Type: orchestrator.AgentTypeAgent,
		ParametersSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)})
	must(t, "CreateAgent", err)
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

// TestScheduleFiring fires schedules from several coordinators sharing one store and one clock, as
// replicas do: every tick fires once, whatever the number of replicas, on every store.
func TestScheduleFiring(t *testing.T) {
	t.Parallel()
	for kind, newStore := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testScheduleFiring(t, newStore)
		})
	}
}

func testScheduleFiring(t *testing.T, newStore func(*testing.T) *sqlstore.Store) {
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
			fx.clock.Advance(time.Minute)
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
		fx.clock.Advance(10 * time.Second)
		fx.fire(t)
		fx.wantFirings(t, "first tick", s.ID, 1)
		_, err := fx.coords[1].UpdateSchedule(ctx(t), s.ID, orchestrator.ScheduleParams{Paused: ptr(true)})
		must(t, "pause", err)
		for range 3 {
			fx.clock.Advance(10 * time.Second)
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
		fx.clock.Advance(10 * time.Second)
		fx.fire(t)
		fx.wantFirings(t, "after resume", s.ID, 2)
	})

	t.Run("MissedTicksFireOnce", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 1)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "* * * * *", Overlap: orchestrator.OverlapAllow})
		fx.clock.Advance(10*time.Minute + 30*time.Second) // ten ticks pass with no coordinator running
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
		fx.clock.Advance(time.Minute)
		fx.fire(t)
		first := fx.wantFirings(t, "first tick", s.ID, 1)
		fx.clock.Advance(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "tick while the first session is active", s.ID, 1)
		fx.endSession(t, first[0].ID)
		fx.fire(t)
		fx.wantFirings(t, "end of the session between ticks", s.ID, 1)
		fx.clock.Advance(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "tick after the session ended", s.ID, 2)
	})

	t.Run("OverlapQueue", func(t *testing.T) {
		t.Parallel()
		fx := newFiringFixture(t, newStore, 2)
		s := fx.create(t, orchestrator.ScheduleParams{Cron: "@every 1m", Overlap: orchestrator.OverlapQueue})
		fx.clock.Advance(time.Minute)
		fx.fire(t)
		first := fx.wantFirings(t, "first tick", s.ID, 1)
		for range 3 { // three ticks while it runs: one queued firing
			fx.clock.Advance(time.Minute)
			fx.fire(t)
		}
		fx.wantFirings(t, "ticks while the first session is active", s.ID, 1)
		queued, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if !queued.Queued {
			t.Fatalf("schedule not queued after a tick during an active session")
		}
		fx.clock.Advance(time.Second)
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
		fx.clock.Advance(time.Minute)
		fx.fire(t)
		fx.wantFirings(t, "with the agent gone", s.ID, 0)
		after, err := fx.st.GetSchedule(ctx(t), s.ID)
		must(t, "GetSchedule", err)
		if after.LastError == "" || !after.NextFireAt.After(fx.clock.Now()) {
			t.Fatalf("after a failed start: last_error %q, next tick %v; want an error and a later tick", after.LastError, after.NextFireAt)
		}
	})
}
