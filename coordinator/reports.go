package coordinator

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// ReportRun records a runner's report on a run it holds. Reports are fenced — a runner that does not hold
// the run gets ErrConflict ("run_not_held") — and idempotent: repeating a report that was already applied
// succeeds without changing anything, so a retried HTTP call is harmless.
func (c *Coordinator) ReportRun(ctx context.Context, rep orchestrator.RunReport) error {
	if err := c.checkReport(&rep); err != nil {
		return err
	}
	if rep.Status == orchestrator.RunRunning {
		return c.reportStarted(ctx, rep)
	}
	return c.reportEnded(ctx, rep)
}

// checkReport refuses a malformed report and shortens an overlong error message.
func (c *Coordinator) checkReport(rep *orchestrator.RunReport) error {
	if rep.RunnerID == "" || rep.RunID == "" {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "runner_id and run_id are required")
	}
	if rep.Result != nil && len(rep.Result.ResultText)+len(rep.Result.ResultData) > c.limits.MaxResultBytes {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "result_too_large", "result exceeds %d bytes", c.limits.MaxResultBytes)
	}
	if len(rep.Error) > 64<<10 {
		rep.Error = rep.Error[:64<<10]
	}
	switch rep.Status {
	case orchestrator.RunRunning, orchestrator.RunCompleted, orchestrator.RunFailed, orchestrator.RunStopped:
		return nil
	}
	return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "status must be running, completed, failed or stopped, not %q", rep.Status)
}

// ReportRuns implements [orchestrator.BatchReporter]: the final reports among reps (completed, failed,
// stopped) are recorded in one store transaction — one commit for all of them, and with a store that has
// [store.BatchBriefUpdater] one call per table for all of them — and the rest one by one, as
// ReportRun records them. When one of the batched reports does not apply as it stands (a repeat, a runner
// that no longer holds its run, a run stopped meanwhile) or the transaction fails, nothing of it is kept and
// each of those reports is recorded on its own instead, so that each gets the answer ReportRun would give and
// the others still land.
func (c *Coordinator) ReportRuns(ctx context.Context, reps []orchestrator.RunReport) []error {
	reps = slices.Clone(reps) // checkReport may shorten an error message
	errs := make([]error, len(reps))
	var ended []int
	for i := range reps {
		if errs[i] = c.checkReport(&reps[i]); errs[i] != nil {
			continue
		}
		if reps[i].Status == orchestrator.RunRunning {
			errs[i] = c.reportStarted(ctx, reps[i])
			continue
		}
		ended = append(ended, i)
	}
	if len(ended) < 2 {
		for _, i := range ended {
			errs[i] = c.reportEnded(ctx, reps[i])
		}
		return errs
	}
	group := make([]orchestrator.RunReport, len(ended))
	for k, i := range ended {
		group[k] = reps[i]
	}
	fx := &effects{}
	err := c.inTx(ctx, opReportBatch, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		return c.finishRuns(ctx, tx, fx, group)
	})
	if err == nil {
		c.apply(fx)
		return errs
	}
	if ctx.Err() != nil {
		for _, i := range ended {
			errs[i] = err
		}
		return errs
	}
	for _, i := range ended {
		errs[i] = c.reportEnded(ctx, reps[i])
	}
	return errs
}

func (c *Coordinator) reportStarted(ctx context.Context, rep orchestrator.RunReport) error {
	var sessionID string
	err := c.inTx(ctx, opReportStarted, func(ctx context.Context, tx store.Store) error {
		now := c.now()
		run, err := markStarted(ctx, tx, rep.RunID, rep.RunnerID, now)
		if err != nil {
			return err
		}
		sessionID = run.SessionID
		return tx.AppendEvents(ctx, run.SessionID, []*orchestrator.Event{runStartedEvent(run, now)})
	})
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return c.explainReport(ctx, rep, err)
	}
	if err == nil {
		c.wake(eventsKey(sessionID))
		c.wake(sessionKey(sessionID))
	}
	return err
}

// markStarted moves a claimed run (held by runnerID, when given) and its pending session to running.
// The caller appends the run's run_started event in the same transaction.
func markStarted(ctx context.Context, tx store.Store, runID, runnerID string, now time.Time) (*store.RunBrief, error) {
	run, err := updateRunBrief(ctx, tx, runID, []orchestrator.RunStatus{orchestrator.RunClaimed}, runnerID,
		store.RunUpdate{Status: new(orchestrator.RunRunning), StartedAt: &now})
	if err != nil {
		return nil, err
	}
	if _, err := updateSessionBrief(ctx, tx, run.SessionID, []orchestrator.SessionStatus{orchestrator.SessionPending}, store.SessionUpdate{
		Status: new(orchestrator.SessionRunning), RunnerID: &run.RunnerID, UpdatedAt: now,
	}); err != nil {
		return nil, err
	}
	return run, nil
}

func runStartedEvent(run *store.RunBrief, now time.Time) *orchestrator.Event {
	return eventOf(orchestrator.EventRunStarted, now, map[string]any{"run_id": run.ID, "runner_id": run.RunnerID})
}

func (c *Coordinator) reportEnded(ctx context.Context, rep orchestrator.RunReport) error {
	fx := &effects{}
	err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		return c.finishRun(ctx, tx, fx, rep.RunID, rep.RunnerID, rep.Status, rep.Result, rep.Error)
	})
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return c.explainReport(ctx, rep, err)
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

// explainReport turns a report that lost its guard into nil (it was already applied) or a clear error.
func (c *Coordinator) explainReport(ctx context.Context, rep orchestrator.RunReport, cause error) error {
	run, err := c.store.GetRun(ctx, rep.RunID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return notFound("run", rep.RunID)
	}
	if err != nil {
		return err
	}
	if run.RunnerID != rep.RunnerID {
		return orchestrator.Errorf(orchestrator.ErrConflict, "run_not_held", "run %s is not held by runner %s", rep.RunID, rep.RunnerID)
	}
	switch {
	case run.Status == rep.Status:
		return nil // a repeated report
	case run.Status.Terminal():
		return orchestrator.Errorf(orchestrator.ErrConflict, "run_ended", "run %s already ended as %s", rep.RunID, run.Status)
	}
	return orchestrator.Errorf(orchestrator.ErrConflict, "run_conflict", "run %s is %s: %v", rep.RunID, run.Status, cause)
}
