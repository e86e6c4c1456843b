// Package backoff is a capped exponential delay for retry loops.
package backoff

import (
	"context"
	"time"
)

// Backoff is a delay that doubles at each [Backoff.Sleep], from its minimum up to its maximum.
type Backoff struct{ min, max, cur time.Duration }

// New returns a backoff from min to max.
func New(min, max time.Duration) *Backoff { return &Backoff{min: min, max: max, cur: min} }

// Reset starts the delay over from the minimum.
func (b *Backoff) Reset() { b.cur = b.min }

// Sleep waits the current delay, or until ctx ends, and doubles the delay.
func (b *Backoff) Sleep(ctx context.Context) {
	t := time.NewTimer(b.cur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	b.cur = min(b.cur*2, b.max)
}
