package orchestrator_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// whoami is an executor that answers every run with the name of its runner.
type whoami string

func (w whoami) Execute(context.Context, *orchestrator.Invocation, orchestrator.EventSink) (*orchestrator.Result, error) {
	return &orchestrator.Result{ResultType: "agent", ResultText: string(w)}, nil
}

// Demands choose the runner a run goes to: an agent's blueprint may demand tags (a GPU), and a caller may
// narrow that further (a host). Every demand that is set must be met; a runner that meets none of a run's
// demands never sees it.
func Example_demands() {
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
	for _, b := range []*orchestrator.Blueprint{
		{Name: "chat", Description: "Runs anywhere"},
		{Name: "transcribe", Description: "Needs a GPU", Demands: &orchestrator.Demands{Tags: []string{"gpu"}}},
	} {
		if _, err := coord.CreateAgent(ctx, b); err != nil {
			log.Fatal(err)
		}
	}

	runCtx, stopRunners := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopRunners(); wg.Wait() }()
	for host, tags := range map[string][]string{"cpu-box": {"linux"}, "gpu-box": {"linux", "gpu"}} {
		worker, err := runner.New(runner.Config{Coordinator: coord, Executor: whoami(host), Hostname: host, Tags: tags})
		if err != nil {
			log.Fatal(err)
		}
		wg.Go(func() { _ = worker.Run(runCtx) })
		<-worker.Registered()
	}

	for _, p := range []orchestrator.StartRunParams{
		{AgentName: "transcribe", Prompt: "meeting.wav"},
		{AgentName: "chat", Prompt: "hi", Demands: &orchestrator.Demands{Hostname: "cpu-box"}},
		{AgentName: "chat", Prompt: "hi", Demands: &orchestrator.Demands{Tags: []string{"gpu"}}},
	} {
		p.Mode = orchestrator.ModeSync
		res, err := coord.StartRun(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.AgentName, "ran on", res.Result.ResultText)
	}
	// Output:
	// transcribe ran on gpu-box
	// chat ran on cpu-box
	// chat ran on gpu-box
}
