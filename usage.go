package orchestrator

// Add adds d's tokens and cost to u's totals. The per-model breakdown (Models) and Model are left as
// they are: a session's running totals are totals only.
func (u *Usage) Add(d Usage) {
	u.InputTokens += d.InputTokens
	u.OutputTokens += d.OutputTokens
	u.CacheReadInputTokens += d.CacheReadInputTokens
	u.CacheCreationInputTokens += d.CacheCreationInputTokens
	u.CostUSD += d.CostUSD
}

// IsZero reports whether u counts no tokens and no cost.
func (u Usage) IsZero() bool {
	return u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadInputTokens == 0 &&
		u.CacheCreationInputTokens == 0 && u.CostUSD == 0
}

// Tokens is the input plus output tokens: what a token budget counts. Cache reads and writes are
// counted apart (a model API's input_tokens leaves them out) and are not part of it.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }
