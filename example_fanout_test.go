package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
)

// A fan-out starts several runs in one call, all or none: one store transaction, one HTTP request through
// the client. The caller then waits for each run. When an item is invalid nothing starts, and the error
// lists every invalid item by its index.
func ExampleBatchStarter() {
	ctx := context.Background()
	funcs := gofunc.New(gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		return Sum{Sum: p.A + p.B}, nil
	}))
	sys := embed(coordinator.Config{}, funcs, funcs.Blueprints()...)
	defer sys.stop()

	var starter orchestrator.BatchStarter = sys.coord // the HTTP client is one too
	started, err := starter.StartRuns(ctx, []orchestrator.StartRunParams{
		{AgentName: "add", Parameters: json.RawMessage(`{"a": 1, "b": 2}`)},
		{AgentName: "add", Parameters: json.RawMessage(`{"a": 3, "b": 4}`)},
		{AgentName: "add", Parameters: json.RawMessage(`{"a": 5, "b": 6}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range started {
		res, err := sys.coord.WaitRun(ctx, s.RunID, time.Minute)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status, string(res.Result.ResultData))
	}

	_, err = starter.StartRuns(ctx, []orchestrator.StartRunParams{
		{AgentName: "add", Parameters: json.RawMessage(`{"a": 1, "b": 2}`)},
		{AgentName: "add", Parameters: json.RawMessage(`{"a": "one"}`)},
	})
	var e *orchestrator.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code+":", e.Message)
		body, _ := json.Marshal(e.Details["items"])
		var items []struct {
			Index int    `json:"index"`
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &items)
		for _, it := range items {
			fmt.Println("item", it.Index, it.Error)
		}
	}
	// Output:
	// completed {"sum":3}
	// completed {"sum":7}
	// completed {"sum":11}
	// invalid_runs: 1 of 2 runs are invalid; none was created
	// item 1 parameter_validation_failed
}
