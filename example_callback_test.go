package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// planner stands in for an AI agent that delegates: its first run starts a child session in
// async_callback mode and ends; when the child ends, the coordinator resumes it with a prompt that
// carries the child's result.
type planner struct{ coord orchestrator.Coordinator }

func (p planner) Execute(ctx context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv.Mode == orchestrator.RunTypeResume {
		var in struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal(inv.Parameters, &in); err != nil {
			return nil, err
		}
		firstLine, _, _ := strings.Cut(in.Prompt, "\n")
		return &orchestrator.Result{ResultType: "agent", ResultText: "resumed: " + firstLine}, nil
	}
	_, err := p.coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:       "add",
		Parameters:      json.RawMessage(`{"a": 2, "b": 3}`),
		Mode:            orchestrator.ModeAsyncCallback,
		ParentSessionID: inv.SessionID, // call this session back when the child ends
	})
	if err != nil {
		return nil, err
	}
	return &orchestrator.Result{ResultType: "agent", ResultText: "asked add"}, nil
}

// A parent agent hears back from its child: the child is started with Mode async_callback and the
// parent's session id; when the child ends, the parent session is resumed with a callback prompt, and its
// log holds a callback event with the child's result.
func Example_childCallback() {
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
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "planner", Description: "Delegates sums"}); err != nil {
		log.Fatal(err)
	}

	// One runner for the AI agent, one for the Go function it delegates to. The sync answer is the first
	// run's, even when the child ends and resumes the parent before the answer is read.
	add := gofunc.New(gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		return Sum{Sum: p.A + p.B}, nil
	}))
	runCtx, stopRunners := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopRunners(); wg.Wait() }()
	for _, cfg := range []runner.Config{
		{Coordinator: coord, Executor: planner{coord}},
		{Coordinator: coord, Executor: add, Blueprints: add.Blueprints()},
	} {
		worker, err := runner.New(cfg)
		if err != nil {
			log.Fatal(err)
		}
		wg.Go(func() { _ = worker.Run(runCtx) })
		<-worker.Registered()
	}

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "planner", Prompt: "2 + 3?", Mode: orchestrator.ModeSync})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Result.ResultText)

	// Follow the parent's log until the callback arrives, then wait for the run it started to end.
	var after int64
	for found := false; !found; {
		events, err := coord.ListEvents(ctx, res.SessionID, after, 100, time.Minute)
		if err != nil {
			log.Fatal(err)
		}
		for _, ev := range events {
			after = ev.Seq
			if ev.Type != orchestrator.EventCallback {
				continue
			}
			var cb struct {
				Callbacks []orchestrator.Callback `json:"callbacks"`
			}
			if err := json.Unmarshal(ev.Data, &cb); err != nil {
				log.Fatal(err)
			}
			child := cb.Callbacks[0]
			fmt.Println("callback:", child.ChildAgent, child.Type, string(child.Result.ResultData))
			found = true
		}
	}
	parent, err := coord.WaitSession(ctx, res.SessionID, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(parent.Status, parent.Result.ResultText)
	// Output:
	// completed asked add
	// callback: add child_completed {"sum":5}
	// completed resumed: A child session you started has ended.
}
