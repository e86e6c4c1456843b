package orchestrator

import (
	"context"
	"sync"
	"time"
)

// agentsKey is the wake-up key published after an agent write, so that other replicas drop their
// cached agents (see agentCache).
const agentsKey = "agents"

// agentCacheMax bounds the agents cached at once; past it the cache starts over.
const agentCacheMax = 4096

// agentCache keeps the agents that StartRun looked up, each for at most ttl, so that starting a run does
// not read the agents table every time (a read per run was about 5% of a run's CPU over HTTP).
//
// It never serves an agent that a write through this coordinator has changed or removed: every such
// write clears it once committed. A write through another replica clears it when that replica's
// wake-up arrives through the Notifier (milliseconds later; the same race as a lookup made just before
// the write). ttl bounds what a lost wake-up, or a write straight to the store, can leave behind. Only
// agents that exist are cached, so a new agent is found at once.
type agentCache struct {
	ttl time.Duration
	mu  sync.Mutex
	// gen counts clears. A lookup that missed fills the cache only if no clear came since its miss: its
	// store read may have preceded the write the clear was for.
	gen     uint64
	entries map[string]cachedAgent
}

type cachedAgent struct {
	agent   *Agent
	expires time.Time
}

func newAgentCache(ttl time.Duration) *agentCache {
	return &agentCache{ttl: ttl, entries: map[string]cachedAgent{}}
}

// get returns the cached agent, or the generation a fill of name must present.
func (c *agentCache) get(name string, now time.Time) (*Agent, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[name]; ok && now.Before(e.expires) {
		return e.agent, c.gen
	}
	return nil, c.gen
}

// put caches a (read from the store after get returned gen) unless the cache was cleared meanwhile.
func (c *agentCache) put(a *Agent, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) >= agentCacheMax {
		clear(c.entries)
	}
	c.entries[a.Name] = cachedAgent{agent: a, expires: now.Add(c.ttl)}
}

// clear empties the cache; on a nil cache (caching off) it does nothing.
func (c *agentCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// startAgent returns the agent a run is started for, from the cache when it holds it. The agent is
// shared: callers must not change it.
func (c *LocalCoordinator) startAgent(ctx context.Context, name string) (*Agent, error) {
	if c.agents == nil {
		return lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	}
	now := time.Now()
	a, gen := c.agents.get(name, now)
	if a != nil {
		return a, nil
	}
	a, err := lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	if err == nil {
		c.agents.put(a, gen, now)
	}
	return a, err
}

// agentsChanged is called after an agent write committed: it clears this coordinator's cache and, through
// the Notifier, the other replicas' — also when this one caches nothing, since they may.
func (c *LocalCoordinator) agentsChanged() {
	c.agents.clear()
	if c.cfg.Notifier != nil {
		c.cfg.Notifier.Notify(agentsKey)
	}
}
