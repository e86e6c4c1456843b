package orchestratortest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// TB is the part of testing.TB the helpers use. *testing.T and *testing.B implement it.
type TB interface {
	Cleanup(func())
	Fatalf(format string, args ...any)
	Helper()
}

// Config configures [New].
type Config struct {
	// Agents are the agents the code under test invokes. Deterministic ones are announced by the test
	// runner (their commands are never run); the others are created in the registry as AI agents. The
	// runner holds every tag the agents demand; a run that demands more of it (a hostname, an executor
	// type, another tag) stays pending, where the Require functions still see it.
	Agents []*orchestrator.Blueprint
	// Executor performs every run, after it is recorded. Default: each run completes at once with an
	// empty result.
	Executor orchestrator.Executor
	// Coordinator configures the coordinator (a clock, a webhook secret, timeouts); its Store is
	// replaced by the in-memory one.
	Coordinator coordinator.Config
}

// Coordinator is an in-process coordinator on SQLite in memory, with a runner that records every run it
// executes. It is an [orchestrator.Coordinator]: hand it to the code under test.
type Coordinator struct {
	*coordinator.Coordinator

	mu          sync.Mutex
	invocations []*orchestrator.Invocation
}

// New returns a Coordinator serving cfg.Agents. It is stopped, and its store closed, when the test ends.
func New(tb TB, cfg Config) *Coordinator {
	tb.Helper()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		tb.Fatalf("orchestratortest: open the store: %v", err)
	}
	tb.Cleanup(func() { _ = store.Close() })

	ccfg := cfg.Coordinator
	ccfg.Store = store
	coord, err := coordinator.New(ccfg)
	if err != nil {
		tb.Fatalf("orchestratortest: %v", err)
	}
	if err := coord.Start(ctx); err != nil {
		tb.Fatalf("orchestratortest: start the coordinator: %v", err)
	}
	tb.Cleanup(coord.Stop)

	c := &Coordinator{Coordinator: coord}
	var deterministic, agents []*orchestrator.Blueprint
	tags := map[string]bool{} // the runner holds every tag an agent demands, so that it takes their runs
	for _, b := range cfg.Agents {
		if b.Type == orchestrator.AgentTypeDeterministic {
			deterministic = append(deterministic, b)
		} else {
			agents = append(agents, b)
		}
		if b.Demands != nil {
			for _, t := range b.Demands.Tags {
				tags[t] = true
			}
		}
	}
	if len(agents) > 0 {
		if err := coord.PutAgents(ctx, agents); err != nil {
			tb.Fatalf("orchestratortest: create the agents: %v", err)
		}
	}
	exec := cfg.Executor
	if exec == nil {
		exec = ExecutorFunc(complete)
	}
	recording := ExecutorFunc(func(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
		c.record(inv)
		return exec.Execute(ctx, inv, events)
	})
	acceptsAgents := true
	worker, err := runner.New(runner.Config{
		Coordinator:   coord,
		Executor:      recording,
		Blueprints:    deterministic,
		Hostname:      "orchestratortest",
		ExecutorType:  "orchestratortest",
		Tags:          slices.Sorted(maps.Keys(tags)),
		AcceptsAgents: &acceptsAgents,
		MaxConcurrent: 64,
	})
	if err != nil {
		tb.Fatalf("orchestratortest: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.Run(runCtx)
	}()
	tb.Cleanup(func() { stop(); <-done })
	select {
	case <-worker.Registered():
	case <-done:
		tb.Fatalf("orchestratortest: the runner stopped before it registered")
	}
	return c
}

// Invocations returns what the executor was asked to run so far, oldest first.
func (c *Coordinator) Invocations() []*orchestrator.Invocation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.invocations)
}

func (c *Coordinator) record(inv *orchestrator.Invocation) {
	cp := *inv
	c.mu.Lock()
	c.invocations = append(c.invocations, &cp)
	c.mu.Unlock()
}

// ExecutorFunc adapts a function to [orchestrator.Executor], for [Config].Executor.
type ExecutorFunc func(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	return f(ctx, inv, events)
}

// complete is the default executor: an empty result of the agent's type.
func complete(_ context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv.Blueprint != nil && inv.Blueprint.Type == orchestrator.AgentTypeDeterministic {
		exit := 0
		return &orchestrator.Result{ResultType: string(orchestrator.AgentTypeDeterministic), ExitCode: &exit}, nil
	}
	return &orchestrator.Result{ResultType: string(orchestrator.AgentTypeAgent)}, nil
}

var _ orchestrator.Coordinator = (*Coordinator)(nil)

// rawJSON marshals v, keeping json.RawMessage and []byte as the JSON they hold.
func rawJSON(v any) ([]byte, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	}
	return json.Marshal(v)
}
