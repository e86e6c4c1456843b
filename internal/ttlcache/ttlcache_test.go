package ttlcache

import (
	"fmt"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	t.Parallel()
	c := New[*string](time.Minute, 100)
	now := time.Now()
	a := new(string)

	got, ok, gen := c.Get("helper", now)
	if ok || got != nil {
		t.Fatalf("empty cache returned %v", got)
	}
	c.Put("helper", a, gen, now)
	if got, ok, _ := c.Get("helper", now); !ok || got != a {
		t.Fatalf("get after put = %v, want the value", got)
	}
	if _, ok, _ := c.Get("helper", now.Add(time.Minute)); ok {
		t.Errorf("an entry as old as the TTL was served")
	}

	// A lookup that missed before a clear must not fill the cache after it: its read may predate the
	// write the clear was for.
	c.Clear()
	_, _, stale := c.Get("helper", now)
	c.Clear()
	c.Put("helper", a, stale, now)
	if _, ok, _ := c.Get("helper", now); ok {
		t.Errorf("a fill from before the last clear was kept")
	}
	_, _, fresh := c.Get("helper", now)
	c.Put("helper", a, fresh, now)
	if got, ok, _ := c.Get("helper", now); !ok || got != a {
		t.Errorf("a fill after the last clear was dropped")
	}

	// Deleting a key drops it, and refuses fills that missed before, of any key.
	_, _, before := c.Get("other", now)
	c.Delete("helper")
	if _, ok, _ := c.Get("helper", now); ok {
		t.Errorf("a deleted key was served")
	}
	c.Put("other", a, before, now)
	if _, ok, _ := c.Get("other", now); ok {
		t.Errorf("a fill from before a deletion was kept")
	}

	(*Cache[int])(nil).Clear() // caching off: clearing is a no-op
	(*Cache[int])(nil).Delete("x")
}

func TestCacheBound(t *testing.T) {
	t.Parallel()
	const max = 50
	c := New[int](time.Minute, max)
	now := time.Now()
	// Expired entries go first: a full cache of them makes room without dropping the live ones.
	for i := range max - 1 {
		_, _, g := c.Get("x", now)
		c.Put(fmt.Sprintf("old-%d", i), i, g, now.Add(-2*time.Minute))
	}
	_, _, g := c.Get("x", now)
	c.Put("live", 1, g, now)
	_, _, g = c.Get("x", now)
	c.Put("next", 2, g, now)
	if _, ok, _ := c.Get("live", now); !ok {
		t.Errorf("a live entry was dropped while expired ones made room")
	}
	if n := c.Len(); n != 2 {
		t.Errorf("%d entries after the expired ones were dropped, want 2", n)
	}
	// The cache starts over rather than grow past its bound.
	for i := range max + 10 {
		_, _, g := c.Get("x", now)
		c.Put(fmt.Sprintf("k-%d", i), i, g, now)
	}
	if n := c.Len(); n > max {
		t.Errorf("%d entries, more than %d", n, max)
	}
}
