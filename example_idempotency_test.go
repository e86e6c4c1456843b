package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// An idempotency key makes a start safe to retry: a caller that lost the answer (a timeout, a dropped
// connection) sends the same request with the same key and gets the first answer back instead of a second
// run. The same key with a different request is refused.
func ExampleStartRunParams_idempotencyKey() {
	ctx := context.Background()
	sys := embed(coordinator.Config{}, nil)
	defer sys.stop()
	if _, err := sys.coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "refund", Description: "Refunds an order"}); err != nil {
		log.Fatal(err)
	}

	p := orchestrator.StartRunParams{AgentName: "refund", Prompt: "Refund order 42", IdempotencyKey: "refund-order-42"}
	first, err := sys.coord.StartRun(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	retry, err := sys.coord.StartRun(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retry replayed:", retry.Replayed, "same run:", retry.RunID == first.RunID)

	p.Parameters, p.Prompt = json.RawMessage(`{"prompt": "Refund order 43"}`), ""
	_, err = sys.coord.StartRun(ctx, p)
	fmt.Println("another request with the key:", orchestrator.ErrorCode(err))

	runs, err := sys.coord.ListRuns(ctx, orchestrator.RunFilter{AgentName: "refund"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("runs:", len(runs))
	// Output:
	// retry replayed: true same run: true
	// another request with the key: idempotency_key_reused
	// runs: 1
}
