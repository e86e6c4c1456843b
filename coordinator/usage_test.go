package coordinator_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// usageRecorder is a Metrics that also counts usage (coordinator.UsageMetrics).
type usageRecorder struct {
	coordinator.Metrics
	mu    sync.Mutex
	usage map[[2]string]orchestrator.Usage
}

func (r *usageRecorder) Usage(agent, model string, u orchestrator.Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := r.usage[[2]string{agent, model}]
	sum.Add(u)
	r.usage[[2]string{agent, model}] = sum
}

// nopMetrics measures nothing.
type nopMetrics struct{}

func (nopMetrics) RunCreated(string)                                      {}
func (nopMetrics) RunClaimed(string, time.Duration)                       {}
func (nopMetrics) RunEnded(string, orchestrator.RunStatus, time.Duration) {}
func (nopMetrics) WebhookDelivery(string)                                 {}
func (nopMetrics) Callback(string)                                        {}
func (nopMetrics) StoreTx(string, time.Duration)                          {}

// TestUsageEvents: usage events raise their session's totals as they are appended; one without a cost is
// priced from the table (Config.Prices over the defaults) and says so; bad usage data is refused whole.
func TestUsageEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	metrics := &usageRecorder{Metrics: nopMetrics{}, usage: map[[2]string]orchestrator.Usage{}}
	c := newCoordinator(t, coordinator.Config{Metrics: metrics,
		Prices: coordinator.Prices{"house-model": {Input: 2, Output: 4}}})
	createAgent(t, c, "helper")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	evs, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
		// Priced by the default table: 1M input at $3, 0.5M output at $15, 2M cache reads at $0.30, 0.1M cache writes at $3.75.
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"claude-sonnet-4-5-20250929","input_tokens":1000000,"output_tokens":500000,"cache_read_input_tokens":2000000,"cache_creation_input_tokens":100000}`)},
		// A cost given is kept.
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"claude-sonnet-4-5","input_tokens":10,"cost_usd":0.5}`)},
		// Priced by Config.Prices.
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"house-model","input_tokens":1000000,"output_tokens":1000000}`)},
		// A model no table names: no cost.
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"unknown-model","output_tokens":7}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var first map[string]any
	if err := json.Unmarshal(evs[0].Data, &first); err != nil {
		t.Fatal(err)
	}
	wantFirst := 3 + 7.5 + 0.6 + 0.375
	if math.Abs(first["cost_usd"].(float64)-wantFirst) > 1e-9 || first["cost_estimated"] != true {
		t.Errorf("priced event %s: want cost_usd %g, cost_estimated", evs[0].Data, wantFirst)
	}
	if string(evs[1].Data) != `{"model":"claude-sonnet-4-5","input_tokens":10,"cost_usd":0.5}` {
		t.Errorf("an event with a cost was changed: %s", evs[1].Data)
	}
	if string(evs[3].Data) != `{"model":"unknown-model","output_tokens":7}` {
		t.Errorf("an event of an unpriced model was changed: %s", evs[3].Data)
	}
	s, err := c.GetSession(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	want := orchestrator.Usage{InputTokens: 2000010, OutputTokens: 1500007, CacheReadInputTokens: 2000000, CacheCreationInputTokens: 100000, CostUSD: wantFirst + 0.5 + 6}
	if math.Abs(s.Usage.CostUSD-want.CostUSD) > 1e-9 {
		t.Errorf("session cost %g, want %g", s.Usage.CostUSD, want.CostUSD)
	}
	s.Usage.CostUSD = want.CostUSD
	if !reflect.DeepEqual(s.Usage, want) {
		t.Errorf("session usage %+v, want %+v", s.Usage, want)
	}
	metrics.mu.Lock()
	if got := metrics.usage[[2]string{"helper", "house-model"}]; got.InputTokens != 1000000 || got.CostUSD != 6 {
		t.Errorf("metrics of house-model: %+v", got)
	}
	metrics.mu.Unlock()

	for _, bad := range []string{
		`{"input_tokens":-1}`,
		`{"input_tokens":1.5}`,
		`{"output_tokens":"3"}`,
		`{"cost_usd":-0.01}`,
		`{"cost_usd":1e9}`,
		`{"input_tokens":1e15}`,
		`{"model":7}`,
		`{"tokens":3}`,
		`{"models":{"m":{"input_tokens":1}}}`,
		`{"input_tokens":1,"cost_estimated":true}`,
	} {
		_, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
			{Type: "progress", Data: json.RawMessage(`{}`)},
			{Type: orchestrator.EventUsage, Data: json.RawMessage(bad)},
		})
		if orchestrator.ErrorCode(err) != "invalid_usage" {
			t.Errorf("usage event %s: %v, want invalid_usage", bad, err)
		}
	}
	after, err := c.GetSession(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if after.LastEventSeq != s.LastEventSeq || !reflect.DeepEqual(after.Usage, s.Usage) {
		t.Errorf("refused appends changed the session: seq %d → %d, usage %+v → %+v", s.LastEventSeq, after.LastEventSeq, s.Usage, after.Usage)
	}
}

// TestFinalUsageCountedOnce: a run's final usage is added to its session's totals when the run reported
// no usage event, and not again when it did.
func TestFinalUsageCountedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	ai := registerAI(t, c, "host-ai")
	createAgent(t, c, "helper")
	final := &orchestrator.Usage{InputTokens: 100, OutputTokens: 50, CostUSD: 0.25,
		Models: map[string]*orchestrator.ModelUsage{"fake": {InputTokens: 100, OutputTokens: 50, CostUSD: 0.25}}}

	// No usage events: the final figure counts.
	quiet := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: quiet.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultText: "ok", Usage: final}})
	s, err := c.GetSession(ctx, quiet.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (orchestrator.Usage{InputTokens: 100, OutputTokens: 50, CostUSD: 0.25}); !reflect.DeepEqual(s.Usage, want) {
		t.Errorf("usage of a run without usage events: %+v, want %+v", s.Usage, want)
	}

	// Usage events: they are the count, the final figure is not added again.
	live := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: live.RunID, Status: orchestrator.RunRunning})
	if _, err := c.AppendEvents(ctx, live.SessionID, []orchestrator.Event{
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"fake","input_tokens":60,"output_tokens":20,"cost_usd":0.125}`)},
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"model":"fake","input_tokens":40,"output_tokens":30,"cost_usd":0.125}`)},
	}); err != nil {
		t.Fatal(err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: live.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultText: "ok", Usage: final}})
	s, err = c.GetSession(ctx, live.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (orchestrator.Usage{InputTokens: 100, OutputTokens: 50, CostUSD: 0.25}); !reflect.DeepEqual(s.Usage, want) {
		t.Errorf("usage of a run with usage events: %+v, want %+v (counted once)", s.Usage, want)
	}

	// Its resume reports no usage events: its own final figure counts, on top.
	resumed := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Type: orchestrator.RunTypeResume, SessionID: live.SessionID, Prompt: "again"})
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: resumed.RunID, Status: orchestrator.RunRunning})
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: resumed.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultText: "ok", Usage: final}})
	s, err = c.GetSession(ctx, live.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (orchestrator.Usage{InputTokens: 200, OutputTokens: 100, CostUSD: 0.5}); !reflect.DeepEqual(s.Usage, want) {
		t.Errorf("usage after a resume without usage events: %+v, want %+v", s.Usage, want)
	}
}

// TestPrices: the lookup by snapshot-less name, and the estimate by model breakdown.
func TestPrices(t *testing.T) {
	t.Parallel()
	p := coordinator.DefaultPrices()
	for _, m := range []string{"claude-opus-4-5", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001", "claude-3-7-sonnet-latest", "claude-opus-4-20250514"} {
		if _, ok := p.Lookup(m); !ok {
			t.Errorf("Lookup(%q): not found", m)
		}
	}
	for _, m := range []string{"claude-opus-4-8", "gpt-4o", "", "claude-opus-4-5-extra"} {
		if pr, ok := p.Lookup(m); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", m, pr)
		}
	}
	cost, ok := p.Estimate(orchestrator.Usage{InputTokens: 2e6, Models: map[string]*orchestrator.ModelUsage{
		"claude-haiku-4-5": {InputTokens: 1e6}, "claude-opus-4-5": {InputTokens: 1e6}}})
	if !ok || cost != 6 {
		t.Errorf("Estimate by models = %g, %v; want 6, true", cost, ok)
	}
	if _, ok := p.Estimate(orchestrator.Usage{Model: "mystery", InputTokens: 5}); ok {
		t.Error("Estimate of an unknown model: ok")
	}
	if _, err := coordinator.ParsePrices([]byte(`{"m":{"input":-1}}`)); err == nil {
		t.Error("ParsePrices with a negative price: no error")
	}
	if _, err := coordinator.ParsePrices([]byte(`{"m":{"inputs":1}}`)); err == nil {
		t.Error("ParsePrices with an unknown field: no error")
	}
	got, err := coordinator.ParsePrices([]byte(`{"m":{"input":1,"output":2,"cache_read":0.1,"cache_write":1.25}}`))
	if err != nil || got["m"] != (coordinator.Price{Input: 1, Output: 2, CacheRead: 0.1, CacheWrite: 1.25}) {
		t.Errorf("ParsePrices = %+v, %v", got, err)
	}
}
