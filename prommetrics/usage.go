package prommetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

var _ coordinator.UsageMetrics = (*Metrics)(nil)

// usageCounters count the tokens and cost added to sessions' usage totals.
type usageCounters struct {
	tokens *prometheus.CounterVec
	cost   *prometheus.CounterVec
}

func newUsageCounters(reg *prometheus.Registry) usageCounters {
	u := usageCounters{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_tokens_total",
			Help: "Tokens agents consumed, by agent, model and kind (input, output, cache_read, cache_creation), as their usage was counted.",
		}, []string{"agent", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_cost_usd_total",
			Help: "What agents' usage cost in US dollars (reported, else estimated from the price table), by agent and model.",
		}, []string{"agent", "model"}),
	}
	reg.MustRegister(u.tokens, u.cost)
	return u
}

// Usage implements [coordinator.UsageMetrics]. Kinds with no tokens add no series: an agent whose
// model never reads the cache shows no cache_read series.
func (m *Metrics) Usage(agent, model string, u orchestrator.Usage) {
	agent, model = m.agents.value(agent), m.models.value(model)
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadInputTokens}, {"cache_creation", u.CacheCreationInputTokens}} {
		if k.n > 0 {
			m.usage.tokens.WithLabelValues(agent, model, k.kind).Add(float64(k.n))
		}
	}
	if u.CostUSD > 0 {
		m.usage.cost.WithLabelValues(agent, model).Add(u.CostUSD)
	}
}
