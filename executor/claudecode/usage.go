package claudecode

import (
	"slices"
	"strings"
	"sync"

	"github.com/agentorchestrator/orchestrator"
)

// How a run's usage is counted (docs/decisions.md, "Claude Code usage"):
//
//   - Live: each API message's usage, from the assistant lines' message.usage, becomes one usage event
//     ([orchestrator.EventUsage]) the moment its first line arrives. The CLI prints a message once per
//     content block and repeats its id and usage on each line, so a message.id is counted once. The cost
//     is left 0: the CLI prices turns, not messages, so the coordinator estimates it.
//   - Per turn (one CLI process): the result line's figures win. They are the turn's own:
//     model_usage_since_last_result when the line has it (2.1.332, whose modelUsage and total_cost_usd
//     count the whole Claude session across --resume), else modelUsage and total_cost_usd (2.1.197
//     reports those per turn), else the line's usage. The live figures fall short of them: an assistant
//     line carries the message's usage as the stream began (output_tokens 1, before the final count),
//     and requests without a line of their own (the session title Claude Code asks for) are not shown
//     at all. So the turn ends with one more usage event per model carrying the difference, and the usage
//     events of a run add up, token for token, to its Result.Usage. A turn without a result line (a
//     stopped CLI) counts what the live figures saw.
//   - Per run: the turns add up (an output-schema correction resumes the session: each API call is
//     counted once). Result.Usage.CostUSD is the CLI's own price of the turns.
//
// Model names lose Claude Code's context-window suffix ("claude-opus-4-8[1m]" is "claude-opus-4-8"),
// so that the live and the reported figures of one model meet, and a price table finds the model.

// meter counts one run's usage. It is safe for concurrent use.
type meter struct {
	mu   sync.Mutex
	seen map[string]bool
	// live is the current turn's live usage per model.
	live map[string]*orchestrator.Usage
	// run is the usage of the run's turns so far (Result.Usage), nil while there is none.
	run *orchestrator.Usage
}

func newMeter() *meter {
	return &meter{seen: map[string]bool{}, live: map[string]*orchestrator.Usage{}}
}

// modelName drops Claude Code's context-window suffix ("[1m]") from a model name.
func modelName(name string) string {
	if i := strings.LastIndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		return name[:i]
	}
	return name
}

// message counts an assistant line's API message and returns its usage delta, or nil when the message was
// counted before, has no id, or used nothing (the CLI's own "<synthetic>" error messages).
func (m *meter) message(msg *streamMessage) *orchestrator.Usage {
	if m == nil || msg == nil || msg.ID == "" || msg.Usage == nil {
		return nil
	}
	u := msg.Usage
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadInputTokens == 0 && u.CacheCreationInputTokens == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[msg.ID] {
		return nil
	}
	m.seen[msg.ID] = true
	d := &orchestrator.Usage{Model: modelName(msg.Model), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
	l := m.live[d.Model]
	if l == nil {
		l = &orchestrator.Usage{Model: d.Model}
		m.live[d.Model] = l
	}
	addTokens(l, d)
	return d
}

// endTurn closes a turn: its figures are the result line's (nil: the live ones), per model at least what
// the live events counted. It adds them to the run's usage and returns the turn's usage and the deltas
// that bring the live events up to it, one per model that needs one.
func (m *meter) endTurn(res *streamLine) (turn *orchestrator.Usage, deltas []*orchestrator.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	reported, cost, ok := turnFigures(res)
	if !ok && len(m.live) == 0 {
		m.live = map[string]*orchestrator.Usage{}
		return nil, nil
	}
	if r, totalsOnly := reported[""]; totalsOnly && len(reported) == 1 && len(m.live) > 0 {
		// Totals without models: they are the live models' when there is one, else what the live
		// figures did not count goes unnamed.
		if len(m.live) == 1 {
			for name := range m.live {
				reported = map[string]*orchestrator.ModelUsage{name: r}
			}
		} else {
			rest := *r
			for _, l := range m.live {
				rest.InputTokens -= l.InputTokens
				rest.OutputTokens -= l.OutputTokens
				rest.CacheReadInputTokens -= l.CacheReadInputTokens
				rest.CacheCreationInputTokens -= l.CacheCreationInputTokens
			}
			rest.InputTokens, rest.OutputTokens = max(rest.InputTokens, 0), max(rest.OutputTokens, 0)
			rest.CacheReadInputTokens, rest.CacheCreationInputTokens = max(rest.CacheReadInputTokens, 0), max(rest.CacheCreationInputTokens, 0)
			reported = map[string]*orchestrator.ModelUsage{"": &rest}
		}
	}
	models := map[string]*orchestrator.ModelUsage{}
	for name, l := range m.live {
		models[name] = &orchestrator.ModelUsage{InputTokens: l.InputTokens, OutputTokens: l.OutputTokens,
			CacheReadInputTokens: l.CacheReadInputTokens, CacheCreationInputTokens: l.CacheCreationInputTokens}
	}
	for name, r := range reported {
		f := models[name]
		if f == nil {
			f = &orchestrator.ModelUsage{}
			models[name] = f
		}
		f.InputTokens = max(f.InputTokens, r.InputTokens)
		f.OutputTokens = max(f.OutputTokens, r.OutputTokens)
		f.CacheReadInputTokens = max(f.CacheReadInputTokens, r.CacheReadInputTokens)
		f.CacheCreationInputTokens = max(f.CacheCreationInputTokens, r.CacheCreationInputTokens)
		f.CostUSD = r.CostUSD
	}
	turn = &orchestrator.Usage{CostUSD: cost}
	names := make([]string, 0, len(models))
	for name := range models {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f := models[name]
		if name != "" || len(models) > 1 {
			if turn.Models == nil {
				turn.Models = map[string]*orchestrator.ModelUsage{}
			}
			turn.Models[name] = f
		}
		turn.InputTokens += f.InputTokens
		turn.OutputTokens += f.OutputTokens
		turn.CacheReadInputTokens += f.CacheReadInputTokens
		turn.CacheCreationInputTokens += f.CacheCreationInputTokens
		l := m.live[name]
		if l == nil {
			l = &orchestrator.Usage{}
		}
		d := &orchestrator.Usage{Model: name, InputTokens: f.InputTokens - l.InputTokens, OutputTokens: f.OutputTokens - l.OutputTokens,
			CacheReadInputTokens: f.CacheReadInputTokens - l.CacheReadInputTokens, CacheCreationInputTokens: f.CacheCreationInputTokens - l.CacheCreationInputTokens}
		if d.InputTokens != 0 || d.OutputTokens != 0 || d.CacheReadInputTokens != 0 || d.CacheCreationInputTokens != 0 {
			deltas = append(deltas, d)
		}
	}
	m.live = map[string]*orchestrator.Usage{}
	m.run = addUsage(m.run, turn)
	return turn, deltas
}

// total returns the run's usage so far (nil when there is none).
func (m *meter) total() *orchestrator.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run
}

// turnFigures returns what a result line reports of its turn, per model, and the turn's cost; ok is
// false when the line reports no usage (or there is no line).
func turnFigures(l *streamLine) (models map[string]*orchestrator.ModelUsage, cost float64, ok bool) {
	if l == nil {
		return nil, 0, false
	}
	per, cost := l.ModelUsage, l.CostUSD
	if l.ModelUsageSince != nil {
		// total_cost_usd is the Claude session's: the turn's cost is its models'.
		per, cost = l.ModelUsageSince, 0
		for _, mu := range per {
			if mu != nil {
				cost += mu.CostUSD
			}
		}
	}
	models = map[string]*orchestrator.ModelUsage{}
	for name, mu := range per {
		if mu == nil {
			continue
		}
		name = modelName(name)
		f := models[name]
		if f == nil {
			f = &orchestrator.ModelUsage{}
			models[name] = f
		}
		f.InputTokens += mu.InputTokens
		f.OutputTokens += mu.OutputTokens
		f.CacheReadInputTokens += mu.CacheReadInputTokens
		f.CacheCreationInputTokens += mu.CacheCreationInputTokens
		f.CostUSD += mu.CostUSD
	}
	if len(models) == 0 && l.Usage != nil {
		// No figures per model: the line's totals, under no model name.
		models[""] = &orchestrator.ModelUsage{InputTokens: l.Usage.InputTokens, OutputTokens: l.Usage.OutputTokens,
			CacheReadInputTokens: l.Usage.CacheReadInputTokens, CacheCreationInputTokens: l.Usage.CacheCreationInputTokens, CostUSD: cost}
	}
	return models, cost, len(models) > 0 || cost != 0
}

// addTokens adds b's token counts to a.
func addTokens(a, b *orchestrator.Usage) {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CacheReadInputTokens += b.CacheReadInputTokens
	a.CacheCreationInputTokens += b.CacheCreationInputTokens
}

// addUsage adds b to a (the turns of one run); either may be nil.
func addUsage(a, b *orchestrator.Usage) *orchestrator.Usage {
	if b == nil {
		return a
	}
	if a == nil {
		a = &orchestrator.Usage{}
	}
	addTokens(a, b)
	a.CostUSD += b.CostUSD
	for name, m := range b.Models {
		if a.Models == nil {
			a.Models = map[string]*orchestrator.ModelUsage{}
		}
		am := a.Models[name]
		if am == nil {
			am = &orchestrator.ModelUsage{}
			a.Models[name] = am
		}
		am.InputTokens += m.InputTokens
		am.OutputTokens += m.OutputTokens
		am.CacheReadInputTokens += m.CacheReadInputTokens
		am.CacheCreationInputTokens += m.CacheCreationInputTokens
		am.CostUSD += m.CostUSD
	}
	return a
}
