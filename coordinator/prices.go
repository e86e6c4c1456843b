package coordinator

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/agentorchestrator/orchestrator"
)

// Price is what a model charges, in US dollars per million tokens of each kind.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of input tokens read from the prompt cache.
	CacheRead float64 `json:"cache_read"`
	// CacheWrite is the price of input tokens written to the prompt cache (the five-minute cache's).
	CacheWrite float64 `json:"cache_write"`
}

// Prices is a price table by model name, with which the coordinator estimates the cost of usage that
// arrives without one (see [Config].Prices). A model is found by its exact name, else by its name
// without a trailing "-YYYYMMDD" snapshot date or "-latest" ("claude-sonnet-4-5-20250929" is priced as
// "claude-sonnet-4-5"). A model the table does not name is not priced: its cost stays 0, as reported.
type Prices map[string]Price

// DefaultPrices returns the list prices of current Claude models (standard API rates, five-minute cache
// writes, no batch discount), as Anthropic published them. A deployment whose rates differ — a
// negotiated discount, a cloud provider's, a model newer than this table — sets its own in
// [Config].Prices or with the -prices flag.
func DefaultPrices() Prices {
	opus4 := Price{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}
	sonnet := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	return Prices{
		"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
		"claude-opus-4-1":   opus4,
		"claude-opus-4-0":   opus4,
		"claude-opus-4":     opus4,
		"claude-sonnet-4-5": sonnet,
		"claude-sonnet-4-0": sonnet,
		"claude-sonnet-4":   sonnet,
		"claude-3-7-sonnet": sonnet,
		"claude-3-5-sonnet": sonnet,
		"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
		"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
		"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.3},
		"claude-3-opus":     opus4,
	}
}

// snapshotSuffix is the date or -latest a model id ends with, which its price does not depend on.
var snapshotSuffix = regexp.MustCompile(`-(\d{8}|latest)$`)

// Lookup returns model's price.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	if base := snapshotSuffix.ReplaceAllString(model, ""); base != model {
		pr, ok := p[base]
		return pr, ok
	}
	return Price{}, false
}

// cost is what u's tokens cost at pr.
func (pr Price) cost(in, out, cacheRead, cacheWrite int64) float64 {
	return (float64(in)*pr.Input + float64(out)*pr.Output + float64(cacheRead)*pr.CacheRead +
		float64(cacheWrite)*pr.CacheWrite) / 1e6
}

// Estimate returns the cost of u: its CostUSD when it has one, else its tokens priced per model — by
// its Models breakdown when it has one (a model's own CostUSD wins there too), else as Model's. ok is
// false when some of it could not be priced (no cost given and a model the table does not name); the
// cost of what could be priced is returned all the same.
func (p Prices) Estimate(u orchestrator.Usage) (cost float64, ok bool) {
	if u.CostUSD > 0 {
		return u.CostUSD, true
	}
	if len(u.Models) > 0 {
		ok = true
		for name, m := range u.Models {
			if m == nil {
				continue
			}
			if m.CostUSD > 0 {
				cost += m.CostUSD
				continue
			}
			pr, found := p.Lookup(name)
			if !found {
				ok = false
				continue
			}
			cost += pr.cost(m.InputTokens, m.OutputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens)
		}
		return cost, ok
	}
	pr, found := p.Lookup(u.Model)
	if !found {
		return 0, u.IsZero()
	}
	return pr.cost(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens), true
}

// LoadPrices reads a price table from a JSON file: an object by model name, each
// {"input", "output", "cache_read", "cache_write"} in US dollars per million tokens.
func LoadPrices(path string) (Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePrices(b)
}

// ParsePrices reads a price table from JSON, as [LoadPrices] does; unknown fields and negative or
// non-finite prices are errors.
func ParsePrices(b []byte) (Prices, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var p Prices
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	for name, pr := range p {
		for _, v := range []float64{pr.Input, pr.Output, pr.CacheRead, pr.CacheWrite} {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("price table: model %q: prices must be non-negative numbers", name)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("price table: a model name is empty")
		}
	}
	return p, nil
}

// withDefaults is DefaultPrices with p's entries in place of theirs.
func (p Prices) withDefaults() Prices {
	out := DefaultPrices()
	for name, pr := range p {
		out[name] = pr
	}
	return out
}
