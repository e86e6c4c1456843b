package prommetrics

import "sync"

// Label bounds: every label value a run or an agent can choose (an agent's name, which runners announce,
// and a model's name, which usage events carry) is admitted up to a number of distinct values, after
// which new values are counted under OtherLabel. A fleet that announces ever new agent names (or a
// misbehaving agent that posts usage for ever new models) then costs a bounded number of series, and the
// totals stay right: only the breakdown of the excess is lost.
const (
	MaxAgentLabels = 500
	MaxModelLabels = 100
	OtherLabel     = "other"
)

// boundedLabel admits the first max distinct values of a label and folds the rest into OtherLabel.
type boundedLabel struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func newBoundedLabel(max int) *boundedLabel {
	return &boundedLabel{max: max, seen: make(map[string]struct{})}
}

// value returns v when it is admitted, else OtherLabel.
func (b *boundedLabel) value(v string) string {
	b.mu.RLock()
	_, ok := b.seen[v]
	full := len(b.seen) >= b.max
	b.mu.RUnlock()
	switch {
	case ok:
		return v
	case full:
		return OtherLabel
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return OtherLabel
	}
	b.seen[v] = struct{}{}
	return v
}
