package orchestrator_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// An AI agent's session can be resumed once its run has ended: a run of type resume gives it a new
// prompt, and its executor continues the same conversation (Invocation.ExecutorSessionID). Each start or
// resume is a run of the one session.
func ExampleStartRunParams_resume() {
	ctx := context.Background()
	sys := embed(coordinator.Config{}, shouter{}) // the executor of Example_customExecutor
	defer sys.stop()
	if _, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "echo", Description: "Shouts the prompt back"}); err != nil {
		log.Fatal(err)
	}

	first, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Prompt: "hello", Mode: orchestrator.ModeSync})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.Status, first.Result.ResultText)

	again, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{
		Type:      orchestrator.RunTypeResume,
		SessionID: first.SessionID,
		Prompt:    "and again",
		Mode:      orchestrator.ModeSync,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.Status, again.Result.ResultText, "same session:", again.SessionID == first.SessionID)

	runs, err := sys.coord.ListRuns(ctx, orchestrator.RunFilter{SessionID: first.SessionID})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range runs {
		fmt.Println("run:", r.Type, r.Status)
	}
	// Output:
	// completed HELLO!
	// completed AND AGAIN! same session: true
	// run: start completed
	// run: resume completed
}
