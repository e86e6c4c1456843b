package prommetrics_test

import (
	"context"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// A retry the coordinator schedules counts in orchestrator_run_retries_total{agent,reason}.
func TestRetriesCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := prommetrics.New()
	c, err := coordinator.New(coordinator.Config{Store: store, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "writer"}); err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/w", ExecutorType: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1}); err != nil || len(w.Runs) != 1 {
		t.Fatalf("poll: %+v, %v", w, err)
	}
	if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunFailed,
		Result: &orchestrator.Result{Error: "overloaded", ErrorCode: "api_rate_limited"}}); err != nil {
		t.Fatal(err)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := 0.0
	for _, f := range families {
		if f.GetName() != "orchestrator_run_retries_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["agent"] == "writer" && labels["reason"] == "api_rate_limited" {
				got = metric.GetCounter().GetValue()
			}
		}
	}
	if got != 1 {
		t.Fatalf(`orchestrator_run_retries_total{agent="writer",reason="api_rate_limited"} = %v, want 1`, got)
	}
}
