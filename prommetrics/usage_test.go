package prommetrics_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// TestUsageCounters: usage events and a run's final usage (when it reported no events) are counted by
// agent, model and kind, and their cost by agent and model — given or estimated from the price table.
func TestUsageCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := prommetrics.New()
	c, err := coordinator.New(coordinator.Config{Store: store, Metrics: m, Prices: coordinator.Prices{"m1": {Input: 1, Output: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "planner"}); err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/w", ExecutorType: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "planner", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendEvents(ctx, a.SessionID, []orchestrator.Event{
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"m1","input_tokens":1000000,"output_tokens":500000}`)},
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"m1","input_tokens":10,"cache_read_input_tokens":7,"cost_usd":0.5}`)},
	}); err != nil {
		t.Fatal(err)
	}
	b, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "planner", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: b.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{Usage: &orchestrator.Usage{OutputTokens: 3, CostUSD: 0.25}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"planner", "m1", "input"}, 1000010},
		{[]string{"planner", "m1", "output"}, 500000},
		{[]string{"planner", "m1", "cache_read"}, 7},
		{[]string{"planner", "", "output"}, 3},
	} {
		if v := counterValue(t, m, "orchestrator_tokens_total", tc.labels...); v != tc.want {
			t.Errorf("orchestrator_tokens_total%v = %g, want %g", tc.labels, v, tc.want)
		}
	}
	// 1M input at $1 and 0.5M output at $2, estimated, plus the 0.5 given.
	if v := counterValue(t, m, "orchestrator_cost_usd_total", "planner", "m1"); v != 2.5 {
		t.Errorf("orchestrator_cost_usd_total{planner,m1} = %g, want 2.5", v)
	}
	if v := counterValue(t, m, "orchestrator_cost_usd_total", "planner", ""); v != 0.25 {
		t.Errorf("orchestrator_cost_usd_total{planner,\"\"} = %g, want 0.25", v)
	}
	if n := seriesCount(t, m, "orchestrator_tokens_total"); n != 4 {
		t.Errorf("%d token series, want 4 (no series for kinds without tokens)", n)
	}
}

// counterValue reads one series of a counter vector from m's registry (0 when absent).
func counterValue(t *testing.T, m *prommetrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			if len(s.GetLabel()) != len(labels) {
				continue
			}
			// Labels come sorted by name: agent, kind, model for tokens; agent, model for cost.
			byName := map[string]string{}
			for _, l := range s.GetLabel() {
				byName[l.GetName()] = l.GetValue()
			}
			names := []string{"agent", "model", "kind"}
			for i, v := range labels {
				if byName[names[i]] != v {
					continue series
				}
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}

// seriesCount counts the series of a metric in m's registry.
func seriesCount(t *testing.T, m *prommetrics.Metrics, name string) int {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
