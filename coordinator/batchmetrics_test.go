package coordinator_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// createdRecorder counts Metrics.RunCreated by agent.
type createdRecorder struct {
	nopMetrics
	mu      sync.Mutex
	created map[string]int
}

func (r *createdRecorder) RunCreated(agent string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.created[agent]++
}

// TestBatchRunsAreCountedAsCreated: the runs of a fan-out (StartRuns) are counted by Metrics.RunCreated
// (orchestrator_runs_created_total) as runs started one by one are, once each; a refused batch counts none.
func TestBatchRunsAreCountedAsCreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &createdRecorder{created: map[string]int{}}
	c := newCoordinator(t, coordinator.Config{Metrics: m})
	createAgent(t, c, "fan")
	createAgent(t, c, "single")
	start(t, c, orchestrator.StartRunParams{AgentName: "single", Prompt: "one"})
	batch := make([]orchestrator.StartRunParams, 3)
	for i := range batch {
		batch[i] = orchestrator.StartRunParams{AgentName: "fan", Prompt: "p"}
	}
	if _, err := c.StartRuns(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartRuns(ctx, []orchestrator.StartRunParams{{AgentName: "fan", Prompt: "p"}, {AgentName: "nope"}}); err == nil {
		t.Fatal("a batch naming an unknown agent was accepted")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.created["fan"] != 3 || m.created["single"] != 1 {
		t.Errorf("runs counted as created: %v; want fan 3 (the batch's), single 1", m.created)
	}
}
