// Package endcount tells a benchmark when its runs have ended by counting their ends through the
// coordinator's Metrics hook, as a job queue's benchmark counts completion events: reading every session
// back to learn it ended costs the process and the database a query per run that the path under
// measurement does not make.
package endcount

import (
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// Metrics is the coordinator's metrics hook (coordinator.Metrics), declared here by its methods so that
// a kit that measures the coordinator does not import it; a test checks that the two stay the same.
type Metrics interface {
	RunCreated(agent string)
	RunClaimed(agent string, latency time.Duration)
	RunEnded(agent string, outcome orchestrator.RunStatus, duration time.Duration)
	WebhookDelivery(outcome string)
	Callback(outcome string)
	StoreTx(op string, d time.Duration)
}

// Counter is a [Metrics] that counts run ends, and passes every observation on to Inner when it is set.
type Counter struct {
	Inner Metrics

	mu      sync.Mutex
	n, want int
	failed  int
	done    chan struct{}
}

// Arm starts a count of want ends and returns a channel closed at the want-th. Ends counted before Arm
// are forgotten.
func (c *Counter) Arm(want int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.want, c.failed, c.done = 0, want, 0, make(chan struct{})
	if want <= 0 {
		close(c.done)
	}
	return c.done
}

// Counted returns the ends counted since Arm, and how many of them were not completions.
func (c *Counter) Counted() (ended, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.failed
}

// RunEnded counts an end.
func (c *Counter) RunEnded(agent string, outcome orchestrator.RunStatus, d time.Duration) {
	c.mu.Lock()
	if c.done != nil {
		c.n++
		if outcome != orchestrator.RunCompleted {
			c.failed++
		}
		if c.n == c.want {
			close(c.done)
		}
	}
	c.mu.Unlock()
	if c.Inner != nil {
		c.Inner.RunEnded(agent, outcome, d)
	}
}

func (c *Counter) RunCreated(agent string) {
	if c.Inner != nil {
		c.Inner.RunCreated(agent)
	}
}

func (c *Counter) RunClaimed(agent string, latency time.Duration) {
	if c.Inner != nil {
		c.Inner.RunClaimed(agent, latency)
	}
}

func (c *Counter) WebhookDelivery(outcome string) {
	if c.Inner != nil {
		c.Inner.WebhookDelivery(outcome)
	}
}

func (c *Counter) Callback(outcome string) {
	if c.Inner != nil {
		c.Inner.Callback(outcome)
	}
}

func (c *Counter) StoreTx(op string, d time.Duration) {
	if c.Inner != nil {
		c.Inner.StoreTx(op, d)
	}
}
