package orchestrator_test

import (
	"context"
	"log"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// system is what the examples below share, set up as Example and Example_embedded show it: a coordinator
// over an in-memory store and, when it has an executor, one runner that serves it.
type system struct {
	coord *coordinator.Coordinator
	stop  func()
}

// embed starts a coordinator with cfg over a fresh in-memory store (cfg.Store is set) and, when executor
// is not nil, a runner that announces blueprints and executes runs with executor. Call stop when done.
func embed(cfg coordinator.Config, executor orchestrator.Executor, blueprints ...*orchestrator.Blueprint) *system {
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Store = store
	coord, err := coordinator.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	s := &system{coord: coord, stop: func() { store.Close() }}
	if executor == nil {
		return s
	}
	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: executor, Blueprints: blueprints})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	<-worker.Registered()
	s.stop = func() { stopRunner(); <-done; store.Close() }
	return s
}

// clock is a coordinator clock (coordinator.Config.Now) that an example moves by hand, so that what
// depends on the time of day — a schedule's tick, a delayed run — happens when the example says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
