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

// A session's events form an append-only log numbered from 1. A caller follows it as it grows by asking
// for the events after the last one it saw, with a wait: the call returns the moment new events exist
// (a long poll), and the run_ended event says the run is over.
func ExampleCoordinator_ListEvents() {
	ctx := context.Background()
	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		gofunc.Progress(ctx, "adding %d and %d", p.A, p.B) // an event in the session's log
		return Sum{Sum: p.A + p.B}, nil
	})
	funcs := gofunc.New(add)
	sys := embed(coordinator.Config{}, funcs, funcs.Blueprints()...)
	defer sys.stop()

	res, err := sys.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "add", Parameters: json.RawMessage(`{"a": 2, "b": 3}`)})
	if err != nil {
		log.Fatal(err)
	}
	var after int64
	for ended := false; !ended; {
		events, err := sys.coord.ListEvents(ctx, res.SessionID, after, 100, 10*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		for _, ev := range events {
			after = ev.Seq
			switch ev.Type {
			case orchestrator.EventProgress:
				var d struct{ Message string }
				_ = ev.DecodeData(&d)
				fmt.Println(ev.Seq, ev.Type, d.Message)
			default:
				fmt.Println(ev.Seq, ev.Type)
			}
			ended = ended || ev.Type == orchestrator.EventRunEnded
		}
	}
	// Output:
	// 1 run_started
	// 2 progress adding 2 and 3
	// 3 result
	// 4 run_ended
}
