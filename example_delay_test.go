package orchestrator_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// A delayed run is queued at once and claimed only when it is due: Delay counts from the request, RunAt
// names the time. A runner parked in a long poll is woken when the run comes due. Here a hand-moved clock
// stands in for the wait, and a runner's polls are made by hand.
func ExampleStartRunParams_delay() {
	ctx := context.Background()
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	clk := &clock{now: start}
	sys := embed(coordinator.Config{Now: clk.Now}, nil)
	defer sys.stop()
	if _, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "reminder", Description: "Sends a reminder"}); err != nil {
		log.Fatal(err)
	}
	reg, err := sys.coord.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "worker-1", ExecutorType: "claude-code"})
	if err != nil {
		log.Fatal(err)
	}

	res, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "reminder", Prompt: "Renew the certificate", Delay: 30 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	run, err := sys.coord.GetRun(ctx, res.RunID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, "due in", run.RunAt.Sub(start))

	poll := func() int {
		w, err := sys.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1}) // no wait
		if err != nil {
			log.Fatal(err)
		}
		return len(w.Runs)
	}
	fmt.Println("claimed before it is due:", poll())
	clk.Set(start.Add(30 * time.Minute))
	fmt.Println("claimed once due:", poll())
	// Output:
	// pending due in 30m0s
	// claimed before it is due: 0
	// claimed once due: 1
}
