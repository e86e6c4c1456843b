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

// A Go function becomes an agent: its parameters_schema is derived from the parameter type, and callers
// invoke it like any other agent and get typed result_data back.
func Example_goFunction() {
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}

	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		return Sum{Sum: p.A + p.B}, nil
	})
	funcs := gofunc.New(add)
	worker, err := runner.New(runner.Config{
		Coordinator: coord,
		Executor:    funcs,
		Blueprints:  funcs.Blueprints(),
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	info, err := coord.GetAgent(ctx, "add")
	if err != nil {
		log.Fatal(err)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(info.ParametersSchema, &schema)
	fmt.Println(info.Name, info.Type, "requires", schema.Required)

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:  "add",
		Mode:       orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"a": 2, "b": 3}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, string(res.Result.ResultData))

	_, err = coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "add", Parameters: json.RawMessage(`{"a": 2}`)})
	fmt.Println(err)
	// Output:
	// add deterministic requires [a b]
	// completed {"sum":5}
	// Parameters do not match agent's parameters_schema: $: 'b' is a required property
}
