package orchestrator

import (
	"fmt"
	"testing"
	"time"
)

func TestAgentCache(t *testing.T) {
	t.Parallel()
	c := newAgentCache(time.Minute)
	now := time.Now()
	a := &Agent{Name: "helper"}

	got, gen := c.get("helper", now)
	if got != nil {
		t.Fatalf("empty cache returned %v", got)
	}
	c.put(a, gen, now)
	if got, _ := c.get("helper", now); got != a {
		t.Fatalf("get after put = %v, want the agent", got)
	}
	if got, _ := c.get("helper", now.Add(time.Minute)); got != nil {
		t.Errorf("an entry as old as the TTL was served")
	}

	// A lookup that missed before a clear must not fill the cache after it: its read may predate the
	// write the clear was for.
	c.clear()
	_, stale := c.get("helper", now)
	c.clear()
	c.put(a, stale, now)
	if got, _ := c.get("helper", now); got != nil {
		t.Errorf("a fill from before the last clear was kept")
	}
	_, fresh := c.get("helper", now)
	c.put(a, fresh, now)
	if got, _ := c.get("helper", now); got != a {
		t.Errorf("a fill after the last clear was dropped")
	}

	// The cache starts over rather than grow past its bound.
	for i := range agentCacheMax + 10 {
		_, g := c.get("x", now)
		c.put(&Agent{Name: fmt.Sprintf("agent-%d", i)}, g, now)
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n > agentCacheMax {
		t.Errorf("%d entries, more than %d", n, agentCacheMax)
	}

	(*agentCache)(nil).clear() // caching off: clearing is a no-op
}
