// Package ttlcache is a small cache of store reads, each kept for at most a TTL, that never keeps a value
// read before a write that made it stale: every write the cache's owner makes clears it (or the key it
// changed) once committed, and a fill whose read may predate such a clear is refused.
package ttlcache

import (
	"sync"
	"time"
)

// Cache maps keys to values that expire. A nil *Cache caches nothing: Clear and Delete do nothing on it.
type Cache[V any] struct {
	ttl time.Duration
	max int

	mu sync.Mutex
	// gen counts clears and deletions. A lookup that missed fills the cache only if none came since its
	// miss: its store read may have preceded the write the clear was for.
	gen     uint64
	entries map[string]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache whose entries live for ttl, holding at most max of them: past it, the expired ones
// are dropped, and all if that is not enough.
func New[V any](ttl time.Duration, max int) *Cache[V] {
	return &Cache[V]{ttl: ttl, max: max, entries: map[string]entry[V]{}}
}

// Get returns the value cached under key, unless it has expired at now, and the generation that a fill
// of key after a miss must present to [Cache.Put].
func (c *Cache[V]) Get(key string, now time.Time) (v V, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, found := c.entries[key]; found && now.Before(e.expires) {
		return e.v, true, c.gen
	}
	return v, false, c.gen
}

// Put caches v, read after [Cache.Get] returned gen, under key until now plus the TTL — unless the cache
// was cleared or a key deleted meanwhile.
func (c *Cache[V]) Put(key string, v V, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[key] = entry[V]{v: v, expires: now.Add(c.ttl)}
}

// Delete drops the value of key; fills that missed before it are refused.
func (c *Cache[V]) Delete(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, key)
}

// Clear empties the cache; fills that missed before it are refused.
func (c *Cache[V]) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// Len returns how many entries the cache holds, expired ones included.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
