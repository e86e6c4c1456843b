package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// How usage is counted (docs/usage.md):
//
//   - A usage event ([orchestrator.EventUsage]) is a delta. Appending it adds it to its session's totals
//     ([orchestrator.Session.Usage]) in the same store write as the event, so the totals are never behind
//     the events and concurrent appends all count. An event without a cost whose model the price table
//     names is priced first, and its stored data says so ("cost_estimated": true).
//   - A run's final usage (Result.Usage, kept on the run) is added to the session's totals when the run
//     ends only if the run appended no usage event: an executor that reports as it goes (Claude Code)
//     has counted everything already, and its final figure would count it twice.

// UsageMetrics is an optional extension of [Metrics]: a Metrics that also implements it counts the tokens
// and cost every usage delta adds to a session's totals (prommetrics does). Counted after the store
// committed the delta.
type UsageMetrics interface {
	// Usage counts what agent's session consumed of model (empty when unknown).
	Usage(agent, model string, u orchestrator.Usage)
}

// maxUsageTokens and maxUsageCostUSD bound one usage delta: far above any real model call, low enough that
// no sum of them overflows.
const (
	maxUsageTokens  = 1 << 40
	maxUsageCostUSD = 1e6
)

// usageDelta is a usage event's data as a reporter may send it: the fields of a [orchestrator.Usage]
// delta, and nothing else.
type usageDelta struct {
	Model                    string  `json:"model,omitempty"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
	// CostEstimated is the coordinator's own mark on an estimated cost, never a reporter's.
	CostEstimated bool `json:"cost_estimated,omitempty"`
}

// usageEvent validates the data of usage event i and prices it: it returns the data to store (data
// itself, or with the estimated cost added) and the delta it counts. Unknown fields, negative or
// fractional token counts and a negative cost are refused, so that nothing a reporter sends can lower
// a session's totals or be counted in a way the reader of the event cannot see.
func (c *Coordinator) usageEvent(i int, data []byte) ([]byte, orchestrator.Usage, error) {
	invalid := func(format string, args ...any) error {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_usage", "event %d: usage: "+format, append([]any{i}, args...)...).
			With("fields", []string{"model", "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd"})
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d usageDelta
	if err := dec.Decode(&d); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, orchestrator.Usage{}, invalid("%s must be a %s", te.Field, usageFieldKind(te.Field))
		}
		return nil, orchestrator.Usage{}, invalid("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, orchestrator.Usage{}, invalid("data must be one JSON object")
	}
	if d.CostEstimated {
		return nil, orchestrator.Usage{}, invalid("cost_estimated is set by the coordinator only")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"input_tokens", d.InputTokens}, {"output_tokens", d.OutputTokens},
		{"cache_read_input_tokens", d.CacheReadInputTokens}, {"cache_creation_input_tokens", d.CacheCreationInputTokens}} {
		if f.v < 0 || f.v > maxUsageTokens {
			return nil, orchestrator.Usage{}, invalid("%s must be between 0 and %d", f.name, int64(maxUsageTokens))
		}
	}
	if d.CostUSD < 0 || d.CostUSD > maxUsageCostUSD {
		return nil, orchestrator.Usage{}, invalid("cost_usd must be between 0 and %g", maxUsageCostUSD)
	}
	if len(d.Model) > 256 {
		return nil, orchestrator.Usage{}, invalid("model must be at most 256 bytes")
	}
	u := orchestrator.Usage{Model: d.Model, InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
		CacheReadInputTokens: d.CacheReadInputTokens, CacheCreationInputTokens: d.CacheCreationInputTokens, CostUSD: d.CostUSD}
	if u.CostUSD == 0 && !u.IsZero() {
		if cost, ok := c.prices.Estimate(u); ok && cost > 0 {
			u.CostUSD = cost
			d.CostUSD, d.CostEstimated = cost, true
			b, err := json.Marshal(d)
			if err != nil {
				return nil, orchestrator.Usage{}, err
			}
			data = b
		}
	}
	return data, u, nil
}

// usageFieldKind names what a usage field must be, for an error message.
func usageFieldKind(field string) string {
	switch field {
	case "model":
		return "string"
	case "cost_usd":
		return "non-negative number"
	}
	return "non-negative integer"
}

// usageCount is a usage delta to count in the metrics once committed.
type usageCount struct {
	agent string
	u     orchestrator.Usage
}

// countUsage hands committed usage deltas to the metrics, when they count usage.
func (c *Coordinator) countUsage(counts []usageCount) {
	m, ok := c.metrics.(UsageMetrics)
	if !ok {
		return
	}
	for _, uc := range counts {
		m.Usage(uc.agent, uc.u.Model, uc.u)
	}
}

// finalUsage is what a run's end adds to its session's usage totals: the run's reported usage, priced
// when it has no cost, unless the run appended usage events (they counted it already). nil adds nothing.
func (c *Coordinator) finalUsage(ctx context.Context, tx store.Store, run *store.RunBrief, reported *orchestrator.Result) (*orchestrator.Usage, error) {
	if reported == nil || reported.Usage == nil || reported.Usage.IsZero() {
		return nil, nil
	}
	// A session runs one run at a time, and every run that started has a run_started event: a usage event
	// newer than the newest run_started is this run's.
	last, err := tx.LastEvent(ctx, run.SessionID, []string{orchestrator.EventUsage, orchestrator.EventRunStarted}, 0)
	switch {
	case err == nil && last.Type == orchestrator.EventUsage:
		return nil, nil
	case err != nil && !errors.Is(err, orchestrator.ErrNotFound):
		return nil, fmt.Errorf("usage events of session %s: %w", run.SessionID, err)
	}
	u := *reported.Usage
	u.Models, u.Model = nil, ""
	u.CostUSD, _ = c.prices.Estimate(*reported.Usage)
	return &u, nil
}
