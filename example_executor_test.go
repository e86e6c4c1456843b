package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// shouter is an [orchestrator.Executor] written from scratch: it answers an AI agent's prompt by shouting
// it back. A real one would call a model's API where this calls strings.ToUpper, and would return as soon
// as ctx ends (the run was stopped, or the runner is shutting down).
type shouter struct{}

func (shouter) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	var p struct {
		Prompt string `json:"prompt"` // an AI agent's parameters; a resume gets {"prompt": …} too
	}
	if err := json.Unmarshal(inv.Parameters, &p); err != nil {
		return nil, err // the executor could not do its job: the run fails with this error
	}
	// Events reach the session's log while the run goes on.
	progress := orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "thinking"})
	if err := events.Emit(ctx, progress); err != nil {
		return nil, err
	}
	return &orchestrator.Result{ResultType: "agent", ResultText: strings.ToUpper(p.Prompt) + "!"}, nil
}

// A custom Executor serves AI agents: a runner that announces no blueprints takes the runs of the
// coordinator's registry agents and hands each to its executor.
func Example_customExecutor() {
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
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "echo", Description: "Shouts the prompt back"}); err != nil {
		log.Fatal(err)
	}

	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: shouter{}, ExecutorType: "shouter"})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Prompt: "hello", Mode: orchestrator.ModeSync})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Result.ResultText)
	events, err := coord.ListEvents(ctx, res.SessionID, 0, 100, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == orchestrator.EventProgress {
			fmt.Println(ev.Type, string(ev.Data))
		}
	}
	// Output:
	// completed HELLO!
	// progress {"message":"thinking"}
}
