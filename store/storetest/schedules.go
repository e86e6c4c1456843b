package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
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
		n, err := st.CountSchedules(ctx(t))
		if must(t, "CountSchedules", err); n != 4 {
			t.Errorf("CountSchedules = %d, want 4 (paused and queued ones included)", n)
		}
		must(t, "DeleteSchedule", st.DeleteSchedule(ctx(t), "sch_3"))
		if n, err := st.CountSchedules(ctx(t)); err != nil || n != 3 {
			t.Errorf("CountSchedules after a delete = %d, %v; want 3", n, err)
		}
	})

}
