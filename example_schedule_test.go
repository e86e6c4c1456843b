package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// A schedule starts a run at every tick of a cron expression, read in its time zone. Each firing is an
// ordinary run whose metadata names the schedule. The coordinator fires schedules by itself once started;
// here a hand-moved clock and FireSchedules make the ticks happen on cue.
func ExampleScheduler() {
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)} // a Monday, 07:00 in Paris
	sys := embed(coordinator.Config{Now: clk.Now}, nil)
	defer sys.stop()
	if _, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "digest", Description: "Writes the morning digest"}); err != nil {
		log.Fatal(err)
	}

	var scheduler orchestrator.Scheduler = sys.coord // the HTTP client is one too
	s, err := scheduler.CreateSchedule(ctx, orchestrator.ScheduleParams{
		AgentName:  "digest",
		Parameters: json.RawMessage(`{"prompt": "Summarise yesterday's incidents"}`),
		Cron:       "0 9 * * 1-5", // 09:00 on weekdays
		Timezone:   "Europe/Paris",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next tick:", s.NextFireAt.UTC().Format(time.RFC3339), "overlap:", s.Overlap)

	clk.Set(s.NextFireAt) // 09:00 in Paris
	if err := sys.coord.FireSchedules(ctx); err != nil {
		log.Fatal(err)
	}
	s, err = scheduler.GetSchedule(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	session, err := sys.coord.GetSession(ctx, s.LastSessionID)
	if err != nil {
		log.Fatal(err)
	}
	var md struct {
		ScheduleID string `json:"schedule_id"`
	}
	_ = json.Unmarshal(session.Metadata, &md)
	fmt.Println("fired:", session.AgentName, session.Status, "by its schedule:", md.ScheduleID == s.ID)
	fmt.Println("next tick:", s.NextFireAt.UTC().Format(time.RFC3339))
	// Output:
	// next tick: 2026-03-02T08:00:00Z overlap: skip
	// fired: digest pending by its schedule: true
	// next tick: 2026-03-03T08:00:00Z
}
