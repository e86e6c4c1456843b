package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// sweepLoop runs the periodic work until ctx ends. Every action it takes is a guarded store update, so
// several coordinator replicas may sweep the same store: for each runner or run exactly one of them wins
// the transition and does the follow-up work in the same transaction; the others see ErrConflict and move
// on.
func (c *Coordinator) sweepLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.SweepInterval)
	defer t.Stop()
	for n := 0; ; n++ {
		c.Sweep(ctx, n%10 == 0)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep runs the periodic checks once: runner liveness (online → stale → offline), pending runs that no
// live runner can take, runs past their timeout or start deadline, and — when full is set — callbacks
// that are due but were not delivered, retention, and the deletion of artifacts' objects no record names
// any more. Errors are
// logged; the next sweep tries again. Start calls it periodically; tests may call it directly.
func (c *Coordinator) Sweep(ctx context.Context, full bool) {
	if err := c.sweepRunners(ctx); err != nil && ctx.Err() == nil {
		c.log.Error("liveness sweep", "err", err)
	}
	if err := c.sweepUnmatched(ctx, full); err != nil && ctx.Err() == nil {
		c.log.Error("no-match sweep", "err", err)
	}
	if err := c.sweepTimeouts(ctx); err != nil && ctx.Err() == nil {
		c.log.Error("timeout sweep", "err", err)
	}
	if err := c.sweepStartDeadlines(ctx); err != nil && ctx.Err() == nil {
		c.log.Error("start-deadline sweep", "err", err)
	}
	if err := c.sweepInputRequests(ctx, full); err != nil && ctx.Err() == nil {
		c.log.Error("input request sweep", "err", err)
	}
	if full {
		if err := c.sweepCallbacks(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("callback sweep", "err", err)
		}
		if err := c.sweepRetention(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("retention sweep", "err", err)
		}
		c.collectArtifactGarbage(ctx)
	}
}

func (c *Coordinator) sweepRunners(ctx context.Context) error {
	now := c.now()
	staleBefore := now.Add(-c.cfg.StaleAfter)
	offlineBefore := now.Add(-c.cfg.OfflineAfter)
	dead, err := c.store.ListRunners(ctx, store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale}, HeartbeatBefore: offlineBefore})
	if err != nil {
		return err
	}
	for _, r := range dead {
		err := c.retireRunner(ctx, r.ID, []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale}, "Runner disconnected during execution", offlineBefore)
		if err != nil && !errors.Is(err, orchestrator.ErrConflict) && !errors.Is(err, orchestrator.ErrNotFound) {
			return err
		}
	}
	quiet, err := c.store.ListRunners(ctx, store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline}, HeartbeatBefore: staleBefore})
	if err != nil {
		return err
	}
	for _, r := range quiet {
		_, err := c.store.UpdateRunnerStatus(ctx, r.ID, []orchestrator.RunnerStatus{orchestrator.RunnerOnline}, orchestrator.RunnerStale, staleBefore)
		if err != nil && !errors.Is(err, orchestrator.ErrConflict) && !errors.Is(err, orchestrator.ErrNotFound) {
			return err
		}
		if err == nil {
			c.log.Warn("runner stale", "runner_id", r.ID, "last_heartbeat_at", r.LastHeartbeatAt)
		}
	}
	return nil
}

// sweepUnmatched deals with pending runs that no live runner matches. After ParkAfter such a run is
// parked — claims skip it, so a backlog of runs nobody can take costs them nothing — until a runner that
// matches it registers (RegisterRunner unparks it). After NoMatchTimeout it fails with an error that says
// what it demanded. A run that some live runner could take keeps waiting: that runner is only busy.
// Parking happens in full sweeps, which also unpark runs that a live runner matches after all (a
// registration raced the parking).
func (c *Coordinator) sweepUnmatched(ctx context.Context, full bool) error {
	now := c.now()
	live, err := c.store.ListRunners(ctx, store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale}})
	if err != nil {
		return err
	}
	matched := func(run *orchestrator.Run) bool {
		for _, r := range live {
			if run.Demands.Matches(run.AgentType, r) {
				return true
			}
		}
		return false
	}
	old, err := c.noMatchPages.next(ctx, c.store, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, CreatedBefore: now.Add(-c.cfg.NoMatchTimeout)})
	if err != nil {
		return err
	}
	for _, run := range old {
		if run.Held || matched(run) || (run.RunAt != nil && run.RunAt.After(now.Add(-c.cfg.NoMatchTimeout))) {
			continue // a delayed run's wait for a runner starts when it is due, a held run's when it is approved
		}
		msg := fmt.Sprintf("no runner can take this run: none matched its demands (%s) within %s", run.Demands, c.cfg.NoMatchTimeout)
		if run.AgentType == orchestrator.AgentTypeAgent && run.Demands.RunnerID == "" {
			msg = fmt.Sprintf("no runner can take this run: no runner that executes AI agents matched its demands (%s) within %s", run.Demands, c.cfg.NoMatchTimeout)
		}
		if err := c.failPending(ctx, run, msg); err != nil {
			return err
		}
	}
	if !full {
		return nil
	}
	// Parking is not urgent, and a backlog of runs that busy runners will take is read here: only the full
	// sweeps (every tenth) look. Runs pinned to a runner sit under their own key of the claim index
	// already: only unpinned runs are worth parking.
	waiting, err := c.parkPages.next(ctx, c.store, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, Parked: new(false), CreatedBefore: now.Add(-c.cfg.ParkAfter)})
	if err != nil {
		return err
	}
	var park []string
	for _, run := range waiting {
		if run.Demands.RunnerID == "" && !matched(run) {
			park = append(park, run.ID)
		}
	}
	if len(park) > 0 {
		if _, err := c.store.SetRunsParked(ctx, park, true); err != nil {
			return err
		}
	}
	return c.unpark(ctx, live)
}

// sweepPage is how many pending runs one sweep examines for each of its checks.
const sweepPage = 1000

// sweepPages pages a sweep's check through the pending runs it examines, sweepPage at a time, each sweep
// going on where the previous one stopped and starting over after the last page. Reading the oldest page
// every time would never reach the runs behind a backlog of more than a page that live runners will take
// (a busy runner's queue): a run nobody can take that waited behind them would never fail or be parked.
// Each coordinator replica keeps its own place; what a sweep does to a run is a guarded update either way.
type sweepPages struct {
	mu    sync.Mutex
	after string // the last run of the previous page; "" to start from the oldest
}

// next returns the page of runs matching f after the previous one.
func (p *sweepPages) next(ctx context.Context, st store.Store, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	p.mu.Lock()
	f.AfterID = p.after
	p.mu.Unlock()
	f.Limit = sweepPage
	runs, err := st.ListRuns(ctx, f)
	if errors.Is(err, orchestrator.ErrNotFound) && f.AfterID != "" {
		// The run the previous page ended with is gone (retention, a deleted session): start over.
		f.AfterID = ""
		runs, err = st.ListRuns(ctx, f)
	}
	if err != nil {
		return nil, err
	}
	after := ""
	if len(runs) == sweepPage {
		after = runs[len(runs)-1].ID
	}
	p.mu.Lock()
	p.after = after
	p.mu.Unlock()
	return runs, nil
}

// unpark unparks the parked runs that one of runners matches, and wakes the runners.
func (c *Coordinator) unpark(ctx context.Context, runners []*orchestrator.RunnerInfo) error {
	parked, err := c.store.ListRuns(ctx, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, Parked: new(true)})
	if err != nil || len(parked) == 0 {
		return err
	}
	var ids []string
	for _, run := range parked {
		if run.CacheRole == cacheWait {
			continue // it waits for an identical start's result, not for a runner
		}
		for _, r := range runners {
			if run.Demands.Matches(run.AgentType, r) {
				ids = append(ids, run.ID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	n, err := c.store.SetRunsParked(ctx, ids, false)
	if n > 0 {
		c.wake(anyRunnerKey)
	}
	return err
}

// sweepCallbacks delivers pending callbacks whose parent is idle. Delivery normally happens in the
// transaction that ends the child or the parent's run; this catches anything those could not deliver.
func (c *Coordinator) sweepCallbacks(ctx context.Context) error {
	pending, err := c.store.ListCallbacks(ctx, store.CallbackFilter{Pending: true})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, cb := range pending {
		if seen[cb.ParentSessionID] {
			continue
		}
		seen[cb.ParentSessionID] = true
		fx := &effects{}
		err := c.inTx(ctx, opCallbacks, func(ctx context.Context, tx store.Store) error {
			*fx = effects{}
			return c.deliverCallbacks(ctx, tx, fx, cb.ParentSessionID)
		})
		if err != nil && !errors.Is(err, orchestrator.ErrConflict) {
			return err
		}
		c.apply(fx)
	}
	return nil
}

// retentionBatch is how many sessions one retention delete removes; small batches keep each transaction
// short, so runs and reports are never held up behind a large delete.
const retentionBatch = 500

// sweepRetention deletes idempotency keys older than IdempotencyRetention, and sessions that ended
// longer ago than Retention, batch by batch.
func (c *Coordinator) sweepRetention(ctx context.Context) error {
	if err := c.pruneCache(ctx); err != nil {
		return err
	}
	if err := c.pruneIdempotencyKeys(ctx); err != nil {
		return err
	}
	if c.cfg.Retention <= 0 {
		return nil
	}
	before := c.now().Add(-c.cfg.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := c.store.DeleteEndedSessions(ctx, before, retentionBatch)
		total += n
		if err != nil {
			return err
		}
		if n < retentionBatch {
			break
		}
	}
	if total > 0 {
		c.log.Info("retention deleted ended sessions", "sessions", total, "ended_before", before)
	}
	return nil
}
