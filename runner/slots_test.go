package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// slowReports is a coordinator with endless work whose final reports wait until the test lets them go:
// one at a time (one) or all (all, closed).
type slowReports struct {
	orchestrator.Coordinator // nil: the runner calls nothing else
	one, all                 chan struct{}

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	handed   int           // runs handed out
	blocked  int           // reports waiting
	reported int
	pollMax  int // Max of the poll in flight; -1 when none
	// stopPolls counts the polls for stops alone, cancelled those that ended cancelled.
	stopPolls, cancelled int
	busy                 int // the runner's last SlotsBusy
	peak                 int // and its highest
}

// SlotsBusy makes slowReports the runner's Metrics too.
func (c *slowReports) SlotsBusy(n int) { c.note(func() { c.busy, c.peak = n, max(c.peak, n) }) }

func (c *slowReports) note(f func()) {
	c.mu.Lock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// waitUntil waits until cond, read under the lock, holds.
func (c *slowReports) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok, changed := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("%s: still not so after 30s (handed %d, blocked %d, reported %d, poll max %d)", what, c.handed, c.blocked, c.reported, c.pollMax)
		}
	}
}

func (c *slowReports) RegisterRunner(context.Context, *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	return &orchestrator.Registration{RunnerID: "lnch_test", HeartbeatIntervalSeconds: 60, PollTimeoutSeconds: 60}, nil
}

func (c *slowReports) Heartbeat(context.Context, string) error        { return nil }
func (c *slowReports) DeregisterRunner(context.Context, string) error { return nil }

func (c *slowReports) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	if p.Max > 0 {
		var w orchestrator.Work
		c.note(func() {
			for range p.Max {
				id := fmt.Sprintf("run_%d", c.handed)
				c.handed++
				w.Runs = append(w.Runs, &orchestrator.Assignment{BlueprintName: "noop",
					Run: &orchestrator.Run{ID: id, SessionID: "ses_" + id, AgentName: "noop", AgentType: orchestrator.AgentTypeDeterministic}})
			}
		})
		return &w, nil
	}
	c.note(func() { c.pollMax = p.Max; c.stopPolls++ })
	<-ctx.Done()
	c.note(func() { c.pollMax = -1; c.cancelled++ })
	return nil, ctx.Err()
}

func (c *slowReports) ReportRun(ctx context.Context, rep orchestrator.RunReport) error {
	c.note(func() { c.blocked++ })
	select {
	case <-c.one:
	case <-c.all:
	case <-ctx.Done():
	}
	c.note(func() { c.blocked--; c.reported++ })
	return nil
}

// runSlowReports runs a runner of the given slots and MaxPendingReports against a new slowReports, which
// is its Metrics too, until the test ends; then every report is let go first.
func runSlowReports(t *testing.T, slots, pendingReports int) *slowReports {
	t.Helper()
	co := &slowReports{one: make(chan struct{}), all: make(chan struct{}), changed: make(chan struct{}), pollMax: -1}
	runNoopRunner(t, Config{Coordinator: co, MaxConcurrent: slots, MaxPendingReports: pendingReports, MaxReportBatch: 1, Metrics: co})
	t.Cleanup(func() { close(co.all) }) // cleanups run last first: before the runner is stopped
	return co
}

// TestSlotIsARunningProcess: a run whose execution ended frees its slot while its report is on its way,
// up to MaxPendingReports such runs; past them a slow coordinator holds the slots, and the runner polls
// for stops only until a report is recorded. The slots-busy gauge counts executing runs only: none, while
// every run handed out has ended and waits on its report.
func TestSlotIsARunningProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pending, wantHeld int
	}{
		{pending: 0, wantHeld: 4}, // default: MaxConcurrent reports may wait
		{pending: 1, wantHeld: 3},
		{pending: -1, wantHeld: 2}, // none: a slot is held until the report is recorded
	} {
		t.Run(fmt.Sprintf("pending=%d", tc.pending), func(t *testing.T) {
			t.Parallel()
			co := runSlowReports(t, 2, tc.pending)

			// Every run handed out ends at once and waits on its report. Once as many wait as the slots and
			// the pending reports hold, the runner asks for stops only.
			co.waitUntil(t, "runs waiting on their reports, the runner polling for stops only", func() bool {
				return co.blocked == co.handed && co.handed >= tc.wantHeld && co.pollMax == 0
			})
			co.mu.Lock()
			handed, busy, peak := co.handed, co.busy, co.peak
			co.mu.Unlock()
			if busy != 0 || peak < 1 || peak > 2 {
				t.Errorf("slots busy = %d (at most %d) while every run waits on its report, want 0 (at most 1 or 2 while they executed)", busy, peak)
			}
			if handed != tc.wantHeld {
				t.Fatalf("%d runs executed while their reports waited, want %d (2 slots, %d pending reports)", handed, tc.wantHeld, tc.pending)
			}
			// One report recorded frees one slot: one more run is taken.
			co.one <- struct{}{}
			co.waitUntil(t, "one more run taken after one report", func() bool {
				return co.handed == handed+1 && co.blocked == handed && co.pollMax == 0
			})
		})
	}
}

// TestFullRunnerKeepsItsStopPoll: a full runner waits for stops on a poll of its own, which a slot that
// frees does not cancel. Under load a runner fills and frees its slots all the time; a cancelled poll
// costs the coordinator a look at the store and, over HTTP/1.1, a connection. A slot freed while a backlog
// waits is refilled even when no other slot frees to share the claim.
func TestFullRunnerKeepsItsStopPoll(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{2, 8} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			t.Parallel()
			co := runSlowReports(t, slots, -1)

			co.waitUntil(t, "every slot held by a run waiting on its report, a poll for stops open", func() bool {
				return co.blocked == slots && co.handed == slots && co.pollMax == 0
			})
			// Each report recorded frees one slot, and one more run is taken: the runner is full again.
			for i := 1; i <= 5; i++ {
				co.one <- struct{}{}
				co.waitUntil(t, "one more run taken after one report", func() bool {
					return co.handed == slots+i && co.blocked == slots
				})
			}
			co.mu.Lock()
			defer co.mu.Unlock()
			if co.stopPolls != 1 || co.cancelled != 0 || co.pollMax != 0 {
				t.Errorf("%d polls for stops, %d of them cancelled, one open: %v; want one, open, never cancelled", co.stopPolls, co.cancelled, co.pollMax == 0)
			}
		})
	}
}
