package coordinator

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Metrics receives the coordinator's measurements ([Config].Metrics). Package
// [github.com/agentorchestrator/orchestrator/prommetrics] implements it for Prometheus; without one the
// coordinator measures nothing and calls nothing. Each count is made after the store committed what it
// counts — never for a transaction that rolled back — and from the goroutine that committed it, so the
// methods must be safe for concurrent use and must not block.
type Metrics interface {
	// RunCreated counts a run queued for agent: a session's first run, a resume, or a resume that
	// delivers callbacks to a parent.
	RunCreated(agent string)
	// RunClaimed observes how long a run waited from its creation until a runner claimed it.
	RunClaimed(agent string, latency time.Duration)
	// RunEnded counts a run's end with its outcome (completed, failed or stopped) and its duration, from
	// its creation to its end: what its caller waited.
	RunEnded(agent string, outcome orchestrator.RunStatus, duration time.Duration)
	// WebhookDelivery counts an attempt to deliver a run's outcome to its callback_url: "delivered",
	// "retry" (it failed and will be tried again) or "failed" (given up).
	WebhookDelivery(outcome string)
	// Callback counts callbacks to parent sessions: "recorded" when a child started in async_callback
	// mode ended, "delivered" when its parent was resumed with it.
	Callback(outcome string)
	// StoreTx observes how long one store operation took, by what it did (op): start_run, resume,
	// claim, report_started, run_end, append_events, and others.
	StoreTx(op string, d time.Duration)
}

// RetryMetrics is an optional capability of [Metrics]: counting the retries the coordinator schedules, by
// agent and reason (exit_code, error, timeout, runner_lost, api_overloaded, api_rate_limited, api_error,
// usage_limit). Package prommetrics has it.
type RetryMetrics interface {
	RunRetried(agent, reason string)
}

// Store operations measured by [Metrics.StoreTx].
const (
	opStartRun      = "start_run"
	opResume        = "resume"
	opClaim         = "claim"
	opReportStarted = "report_started"
	opRunEnd        = "run_end"
	opReportBatch   = "report_batch"
	opAppendEvents  = "append_events"
	opCallbacks     = "deliver_callbacks"
	opRunner        = "runner"
	opAgents        = "agents"
	opDeleteSession = "delete_session"
	opSchedule      = "schedule"
)

// inTx is c.store.InTx, timed as op when metrics are on.
func (c *Coordinator) inTx(ctx context.Context, op string, fn func(ctx context.Context, tx store.Store) error) error {
	if c.metrics == nil {
		return c.store.InTx(ctx, fn)
	}
	defer c.timeStore(op, time.Now())
	return c.store.InTx(ctx, fn)
}

// claimRuns is c.store.ClaimRuns, timed when metrics are on; each run it claims is observed by
// [Metrics.RunClaimed] and traced (see claimed).
func (c *Coordinator) claimRuns(ctx context.Context, p store.ClaimParams) ([]*orchestrator.Run, error) {
	start := time.Now()
	runs, err := c.store.ClaimRuns(ctx, p)
	c.timeStore(opClaim, start)
	c.claimed(ctx, p.Runner.ID, p.Now, runs)
	return runs, err
}

// claimed observes each run of a committed claim by runnerID at now by [Metrics.RunClaimed], and traces
// it (traceClaim).
func (c *Coordinator) claimed(ctx context.Context, runnerID string, now time.Time, runs []*orchestrator.Run) {
	if c.metrics != nil {
		for _, r := range runs {
			c.metrics.RunClaimed(r.AgentName, now.Sub(r.CreatedAt))
		}
	}
	for _, r := range runs {
		c.traceClaim(ctx, r, runnerID)
		if r.RateLimit > 0 && r.ClaimedAt != nil {
			// The bucket's window slides past this claim then: wake the polls, so that a run the limit
			// holds starts as soon as the window allows, not at the next poll timeout.
			c.armDue(r.ClaimedAt.Add(r.RatePeriod+time.Millisecond), true)
		}
	}
}

// timeStore observes the store operation op that began at start: defer c.timeStore(op, time.Now()).
func (c *Coordinator) timeStore(op string, start time.Time) {
	if c.metrics != nil {
		c.metrics.StoreTx(op, time.Since(start))
	}
}

// count reports what fx counted to the metrics; apply calls it after the commit.
func (c *Coordinator) count(fx *effects) {
	m := c.metrics
	if m == nil {
		return
	}
	for _, agent := range fx.created {
		m.RunCreated(agent)
	}
	for _, e := range fx.runsEnded {
		m.RunEnded(e.run.AgentName, e.status, e.took)
	}
	if rm, ok := m.(RetryMetrics); ok {
		for _, r := range fx.retries {
			rm.RunRetried(r.agent, r.reason)
		}
	}
	for range fx.callbacksRecorded {
		m.Callback("recorded")
	}
	for range fx.callbacksDelivered {
		m.Callback("delivered")
	}
}

// Gauges are counts of the coordinator's state at one moment, read from the store: what a metrics
// scrape shows beside the counts [Metrics] receives. Every replica sharing a store reads the same.
type Gauges struct {
	// RunnersOnline is how many runners are online (not stale, not offline).
	RunnersOnline int
	// RunsPending is how many runs wait for a runner.
	RunsPending int
	// RunsRateLimited is, per agent, how many pending runs its rate limit holds now.
	RunsRateLimited map[string]int
}

// runCounter is an optional capability of a store: counting the runs of one status without reading
// them (package sqlstore has it).
type runCounter interface {
	CountRuns(ctx context.Context, status orchestrator.RunStatus) (int, error)
}

// Gauges reads the current [Gauges] from the store. A store without a CountRuns method has its pending
// runs listed page by page instead.
func (c *Coordinator) Gauges(ctx context.Context) (Gauges, error) {
	var g Gauges
	online, err := c.store.ListRunners(ctx, store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline}})
	if err != nil {
		return g, err
	}
	g.RunnersOnline = len(online)
	if g.RunsRateLimited, err = c.store.RateLimitedRuns(ctx, c.now()); err != nil {
		return g, err
	}
	if rc, ok := c.store.(runCounter); ok {
		g.RunsPending, err = rc.CountRuns(ctx, orchestrator.RunPending)
		return g, err
	}
	f := orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, Limit: 1000}
	for {
		runs, err := c.store.ListRuns(ctx, f)
		if err != nil {
			return g, err
		}
		g.RunsPending += len(runs)
		if len(runs) < f.Limit {
			return g, nil
		}
		f.AfterID = runs[len(runs)-1].ID
	}
}
