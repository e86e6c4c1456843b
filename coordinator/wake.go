package coordinator

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Wake-up keys. A poll for runs waits on its runner's key and anyRunnerKey; a full runner's poll on its
// stops key; WaitSession on the session's key; ListEvents on the session's events key.
func runnerKey(id string) string  { return "r:" + id }
func sessionKey(id string) string { return "s:" + id }
func eventsKey(id string) string  { return "e:" + id }

// runnerStopsKey wakes a full runner's poll, which takes stop requests alone. A stop wakes runnerKey
// too, the key a poll for runs waits on.
func runnerStopsKey(id string) string { return "x:" + id }

const anyRunnerKey = "r:*"

// effects collects what a transaction did that parked goroutines must hear about. They are notified after
// the commit, never before: a waiter woken early would read the old state and park again.
type effects struct {
	ended        []string // sessions whose run ended
	changed      []string // sessions with new events or status
	wakeRunners  []string // runners that have new work pinned to them
	wakeAll      bool     // unpinned work that any runner may take
	stopRunners  []string // runners holding runs a tree's stop asked to stop
	webhooks     bool     // webhook deliveries were queued
	runsEnded    []runEnd // logged and counted once the change is committed
	inputsClosed []string // input requests closed: their long polls wake

	// What the metrics count (see count).
	created                               []string // agents of the runs queued
	callbacksRecorded, callbacksDelivered int
	usage                                 []usageCount // usage deltas added to sessions' totals
	retries                               []retryCount // retries scheduled
	due                                   []time.Time  // when the retries scheduled are due
}

// runEnd is a run that ended, for its log line and its metrics.
type runEnd struct {
	run    *store.RunBrief
	status orchestrator.RunStatus
	err    string
	took   time.Duration // from the run's creation to its end
}

func (fx *effects) wakeFor(r *orchestrator.Run) {
	fx.created = append(fx.created, r.AgentName)
	if r.Demands.RunnerID != "" {
		fx.wakeRunners = append(fx.wakeRunners, r.Demands.RunnerID)
	} else {
		fx.wakeAll = true
	}
}

func (c *Coordinator) apply(fx *effects) {
	if fx == nil {
		return
	}
	for _, id := range fx.ended {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	for _, id := range fx.changed {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	for _, id := range fx.wakeRunners {
		c.wake(runnerKey(id))
	}
	for _, id := range fx.stopRunners {
		c.wake(runnerKey(id))
		c.wake(runnerStopsKey(id))
	}
	if fx.wakeAll {
		c.wake(anyRunnerKey)
	}
	if fx.webhooks {
		c.kickWebhooks()
	}
	for _, id := range fx.inputsClosed {
		c.wake(inputKey(id))
	}
	for _, e := range fx.runsEnded {
		c.logRunEnded(e)
	}
	for _, at := range fx.due {
		c.armDue(at, true)
	}
	c.count(fx)
	c.countUsage(fx.usage)
}

// deliverRemote wakes the waiters of a key another replica published. The empty key means that
// wake-ups may have been missed (the Notifier has just started listening, after a start or a lost
// connection): every waiter is woken to look again, and the agent cache is cleared. agentsKey (another
// replica wrote an agent) clears the agent cache and wakes nobody.
func (c *Coordinator) deliverRemote(key string) {
	switch key {
	case "":
		c.agents.Clear() // an agent write's wake-up may have been missed too
		c.wakeups.NotifyAll()
	case agentsKey:
		c.agents.Clear()
	default:
		if c.deliverDue(key) {
			return
		}
		c.wakeups.Notify(key)
	}
}

// wake tells goroutines parked on key — here, and on other replicas when a Notifier is configured — that
// what they wait for may have happened.
func (c *Coordinator) wake(key string) {
	c.wakeups.Notify(key)
	if c.cfg.Notifier != nil {
		c.cfg.Notifier.Notify(key)
	}
}

// await calls look until it reports done, parking between looks until key (or key2, when not empty) is
// woken, wait elapses or ctx ends; a wait of zero looks once (see [wakeup.Hub.Await]).
func (c *Coordinator) await(ctx context.Context, wait time.Duration, key, key2 string, look func() (bool, error)) (bool, error) {
	return c.wakeups.Await(ctx, wait, key, key2, look)
}
