package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
)

// Watch is the parameters of the agent "watch", which runs until it is stopped.
type Watch struct {
	Target string `json:"target"`
}

// StopRun stops a run wherever it is: a queued run at once, a running one through its runner, which
// cancels the execution (here the Go function's ctx) and reports the run stopped.
func ExampleCoordinator_StopRun() {
	ctx := context.Background()
	started := make(chan struct{})
	watch := gofunc.NewTask("watch", "Watches a target until stopped", func(ctx context.Context, p Watch) (struct{}, error) {
		close(started)
		<-ctx.Done() // a stop cancels the run's context
		return struct{}{}, ctx.Err()
	})
	funcs := gofunc.New(watch)
	sys := embed(coordinator.Config{}, funcs, funcs.Blueprints()...)
	defer sys.stop()
	// An AI agent that no runner serves: its run waits in the queue.
	if _, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "reviewer", Description: "Reviews code"}); err != nil {
		log.Fatal(err)
	}

	queued, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "reviewer", Prompt: "Review the change"})
	if err != nil {
		log.Fatal(err)
	}
	run, err := sys.coord.StopRun(ctx, queued.RunID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued run:", run.Status)

	running, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "watch", Parameters: json.RawMessage(`{"target": "db"}`)})
	if err != nil {
		log.Fatal(err)
	}
	<-started
	if _, err := sys.coord.StopRun(ctx, running.RunID); err != nil {
		log.Fatal(err)
	}
	res, err := sys.coord.WaitRun(ctx, running.RunID, time.Minute) // the runner's report ends it
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("running run:", res.Status, "exit code", *res.Result.ExitCode)
	// Output:
	// queued run: stopped
	// running run: stopped exit code -1
}
