package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// A Go service embeds a coordinator and a runner in one process, announces a deterministic agent and
// invokes it. Parameters are validated against the agent's schema (defaults applied) and become
// command-line flags; stdout is the result.
func Example_embedded() {
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
	if err := coord.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer coord.Stop()

	greet := &orchestrator.Blueprint{
		Name:        "greet",
		Type:        orchestrator.AgentTypeDeterministic,
		Description: "Greets someone",
		Command:     "echo hello",
		ParametersSchema: json.RawMessage(`{
			"type": "object",
			"required": ["name"],
			"properties": {
				"name":  {"type": "string"},
				"times": {"type": "integer", "minimum": 1, "default": 1},
				"loud":  {"type": "boolean"}
			}
		}`),
	}
	worker, err := runner.New(runner.Config{
		Coordinator: coord,
		Executor:    deterministic.New(deterministic.Config{}),
		Blueprints:  []*orchestrator.Blueprint{greet},
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:  "greet",
		Mode:       orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"name": "world", "loud": true}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, *res.Result.ExitCode, strings.TrimSpace(res.Result.ResultText))

	_, err = coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:  "greet",
		Parameters: json.RawMessage(`{"name": 7, "times": 0}`),
	})
	var ve *orchestrator.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Printf("%s: %s (%s)\n", fe.Path, fe.Message, fe.SchemaPath)
		}
	}
	// Output:
	// completed 0 hello --loud --name world --times 1
	// $.name: 7 is not of type 'string' (properties.name.type)
	// $.times: 0 is less than the minimum of 1 (properties.times.minimum)
}
