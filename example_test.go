package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// AddParams are the parameters of the agent "add"; its parameters_schema is derived from them.
type AddParams struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

// Sum is what "add" returns, as result_data.
type Sum struct {
	Sum int `json:"sum"`
}

// A Go service embeds a coordinator and a runner in one process, makes a Go function an agent and
// invokes it.
func Example() {
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil) // or a file, or "postgres://…"
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil { // liveness, no-match and callback sweeps
		log.Fatal(err)
	}
	defer coord.Stop()

	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		return Sum{Sum: p.A + p.B}, nil
	})
	funcs := gofunc.New(add)
	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: funcs, Blueprints: funcs.Blueprints()})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "add", Mode: orchestrator.ModeSync, Parameters: json.RawMessage(`{"a": 2, "b": 3}`),
	})
	if err != nil {
		log.Fatal(err) // a bad input is an *orchestrator.ValidationError listing every error
	}
	fmt.Println(res.Status, string(res.Result.ResultData))
	// Output: completed {"sum":5}
}
