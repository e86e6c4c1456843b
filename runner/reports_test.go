package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// batchCoordinator is the part of a Coordinator a Runner calls, recording the reports. Its first report
// call, single or batch, blocks until release is closed.
type batchCoordinator struct {
	orchestrator.Coordinator // nil: the runner calls nothing else
	work                     chan *orchestrator.Work
	release                  chan struct{}

	mu      sync.Mutex
	calls   int
	first   int // reports in the first call
	singles []orchestrator.RunReport
	batches [][]orchestrator.RunReport
}

// called records a call of n reports and blocks if it is the first.
func (c *batchCoordinator) called(n int) {
	c.mu.Lock()
	c.calls++
	first := c.calls == 1
	if first {
		c.first = n
	}
	c.mu.Unlock()
	if first {
		<-c.release
	}
}

func (c *batchCoordinator) RegisterRunner(context.Context, *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	return &orchestrator.Registration{RunnerID: "lnch_test", HeartbeatIntervalSeconds: 60, PollTimeoutSeconds: 1}, nil
}

func (c *batchCoordinator) Heartbeat(context.Context, string) error        { return nil }
func (c *batchCoordinator) DeregisterRunner(context.Context, string) error { return nil }

func (c *batchCoordinator) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	select {
	case w := <-c.work:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(p.Wait):
		return &orchestrator.Work{}, nil
	}
}

func (c *batchCoordinator) ReportRun(ctx context.Context, rep orchestrator.RunReport) error {
	c.mu.Lock()
	c.singles = append(c.singles, rep)
	c.mu.Unlock()
	c.called(1)
	return nil
}

func (c *batchCoordinator) ReportRuns(ctx context.Context, reps []orchestrator.RunReport) []error {
	c.mu.Lock()
	c.batches = append(c.batches, reps)
	c.mu.Unlock()
	c.called(len(reps))
	errs := make([]error, len(reps))
	for i, rep := range reps {
		if rep.RunID == "run_refused" {
			errs[i] = orchestrator.Errorf(orchestrator.ErrConflict, "run_not_held", "not held")
		}
	}
	return errs
}

type instantExecutor struct{}

func (instantExecutor) Execute(context.Context, *orchestrator.Invocation, orchestrator.EventSink) (*orchestrator.Result, error) {
	return &orchestrator.Result{ResultType: "deterministic", ResultText: "{}"}, nil
}

// noopWork is an answer to a poll with n runs of the blueprint "noop"; the last one's id is lastID when
// that is set.
func noopWork(n int, lastID string) *orchestrator.Work {
	var w orchestrator.Work
	for i := range n {
		id := fmt.Sprintf("run_%d", i)
		if i == n-1 && lastID != "" {
			id = lastID
		}
		w.Runs = append(w.Runs, &orchestrator.Assignment{BlueprintName: "noop",
			Run: &orchestrator.Run{ID: id, SessionID: "ses_" + id, AgentName: "noop", AgentType: orchestrator.AgentTypeDeterministic}})
	}
	return &w
}

// runNoopRunner runs a runner of the blueprint "noop", executed at once, with cfg (its Coordinator, limits
// and Metrics) until the test ends.
func runNoopRunner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	bp := &orchestrator.Blueprint{Name: "noop", Type: orchestrator.AgentTypeDeterministic, Command: "true"}
	cfg.Executor, cfg.Blueprints, cfg.Hostname, cfg.ProjectDir = instantExecutor{}, []*orchestrator.Blueprint{bp}, "h", t.TempDir()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// TestRunnerBatchesReports: final reports that become ready while a report call is under way go together
// in the next calls, at most MaxReportBatch at a time, and each run's report is delivered exactly once.
// The runner runs in a synctest bubble: synctest.Wait says when everything that can happen has.
func TestRunnerBatchesReports(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		co := &batchCoordinator{work: make(chan *orchestrator.Work, 1), release: make(chan struct{})}
		var releaseOnce sync.Once
		release := func() { releaseOnce.Do(func() { close(co.release) }) }
		r := runNoopRunner(t, Config{Coordinator: co, MaxConcurrent: 8, MaxReportBatch: 3})
		// Cleanups run last first: this one before the runner's, whose shutdown a blocked report would hold.
		t.Cleanup(release)

		const runs = 8
		work := noopWork(runs, "run_refused")
		co.work <- work

		// The first call is under way (blocked); every other report waits in the queue.
		synctest.Wait()
		co.mu.Lock()
		first := co.first
		co.mu.Unlock()
		queued := r.reports.Len()
		if first == 0 || first+queued != runs {
			t.Fatalf("%d reports in the first call and %d queued, want %d in all", first, queued, runs)
		}
		release()
		synctest.Wait()
		r.mu.Lock()
		active := len(r.active)
		r.mu.Unlock()
		if active != 0 {
			t.Fatalf("%d runs still active after their reports went out", active)
		}

		co.mu.Lock()
		defer co.mu.Unlock()
		// The queued reports went in full batches of 3, the last one holding the rest.
		if want := 1 + (queued+2)/3; co.calls != want {
			t.Errorf("%d report calls, want %d (the first of %d, then %d queued reports by 3)", co.calls, want, first, queued)
		}
		seen := map[string]int{}
		for _, rep := range co.singles {
			seen[rep.RunID]++
		}
		for _, b := range co.batches {
			if len(b) < 2 || len(b) > 3 {
				t.Errorf("a batch of %d reports, want 2 or 3", len(b))
			}
			for _, rep := range b {
				seen[rep.RunID]++
				if rep.Status != orchestrator.RunCompleted || rep.RunnerID != "lnch_test" {
					t.Errorf("report %+v, want completed by lnch_test", rep)
				}
			}
		}
		for _, a := range work.Runs {
			if seen[a.Run.ID] != 1 {
				t.Errorf("run %s reported %d times, want once", a.Run.ID, seen[a.Run.ID])
			}
		}
	})
}

// TestRunnerReportsAloneWithoutBatching: MaxReportBatch 1 sends every report on its own.
func TestRunnerReportsAloneWithoutBatching(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		co := &batchCoordinator{work: make(chan *orchestrator.Work, 1), release: make(chan struct{})}
		close(co.release)
		runNoopRunner(t, Config{Coordinator: co, MaxConcurrent: 8, MaxReportBatch: 1})
		co.work <- noopWork(4, "")
		synctest.Wait()
		co.mu.Lock()
		defer co.mu.Unlock()
		if len(co.singles) != 4 {
			t.Errorf("%d reports, want 4", len(co.singles))
		}
		if len(co.batches) != 0 {
			t.Errorf("batches %v, want none", co.batches)
		}
	})
}
