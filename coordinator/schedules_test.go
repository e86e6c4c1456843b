package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

// scheduled returns the sessions the schedule started.
func scheduled(t *testing.T, c *coordinator.Coordinator, id string) []*orchestrator.Session {
	t.Helper()
	page, err := c.ListSessions(context.Background(), orchestrator.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*orchestrator.Session
	for _, s := range page.Sessions {
		var md struct {
			ScheduleID string `json:"schedule_id"`
		}
		if json.Unmarshal(s.Metadata, &md) == nil && md.ScheduleID == id {
			out = append(out, s)
		}
	}
	return out
}

// The firing loop: a queued tick fires the moment the previous session ends (woken by that end, not by
// its timer, which the test's clock keeps a minute away), and a schedule created while it sleeps is seen
// at once.
func TestScheduleLoopWakesOnSessionEndAndChanges(t *testing.T) {
	t.Parallel()
	clk := newClock()
	clk.now = clk.now.Truncate(time.Minute)
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	ctx := context.Background()
	createAgent(t, c, "nightly")
	s, err := c.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "nightly", Parameters: json.RawMessage(`{"prompt":"go"}`), Cron: "* * * * *", Overlap: orchestrator.OverlapQueue})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := c.FireSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	first := scheduled(t, c, s.ID)
	if len(first) != 1 {
		t.Fatalf("%d sessions after the first tick, want 1", len(first))
	}
	clk.Advance(time.Minute)
	if err := c.FireSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetSchedule(ctx, s.ID); !got.Queued || len(scheduled(t, c, s.ID)) != 1 {
		t.Fatalf("a tick during the first session: queued %v, %d sessions; want queued and 1", got.Queued, len(scheduled(t, c, s.ID)))
	}

	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if _, err := c.StopSession(ctx, first[0].ID); err != nil { // a pending session stops at once
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the queued tick to fire", func() bool { return len(scheduled(t, c, s.ID)) == 2 })

	// A schedule created now whose tick has come by the clock fires without waiting for the loop's timer.
	other, err := c.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "nightly", Parameters: json.RawMessage(`{"prompt":"go"}`), Cron: "@every 1s"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := c.UpdateSchedule(ctx, other.ID, orchestrator.ScheduleParams{Overlap: orchestrator.OverlapAllow}); err != nil { // wakes the loop
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the new schedule to fire", func() bool { return len(scheduled(t, c, other.ID)) == 1 })
}
