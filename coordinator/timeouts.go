package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Timeouts. A run's timeout (the request's timeout_seconds, else its blueprint's) is enforced by the
// coordinator, whatever the executor: once a run has been held past it, the sweep asks its runner to stop
// it (the stop reaches the runner through its poll, as any stop does) and marks it timed out, so that the
// runner's stopped report fails it with error code "timeout"; a run still held TimeoutGrace later — a
// runner that only heartbeats, or that lost the run — is failed by the coordinator itself. Either way the
// session's retry policy applies. A start deadline (start_timeout_seconds) fails a session whose first run
// no runner took in time, with error code "start_timeout", and is never retried.

// Error codes of the coordinator's timeouts.
const (
	codeTimeout      = "timeout"
	codeStartTimeout = "start_timeout"
)

// maxTimeoutSeconds bounds timeout_seconds and start_timeout_seconds at 7 days, as a blueprint's.
const maxTimeoutSeconds = 7 * 24 * 3600

// checkTimeouts checks a request's timeouts.
func checkTimeouts(p *orchestrator.StartRunParams) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"timeout_seconds", p.TimeoutSeconds}, {"start_timeout_seconds", p.StartTimeoutSeconds}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > maxTimeoutSeconds {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_timeout", "%s must be between 0 and %d (7 days), not %v", f.name, maxTimeoutSeconds, f.v)
		}
	}
	return nil
}

// runTimeouts returns a new run's timeout — the request's, else the blueprint's — and its start deadline:
// start_timeout_seconds after the run is due (created, or delayed until due).
func runTimeouts(p *orchestrator.StartRunParams, b *orchestrator.Blueprint, created, due time.Time) (float64, *time.Time) {
	timeout := p.TimeoutSeconds
	if timeout == 0 && b != nil {
		timeout = b.TimeoutSeconds
	}
	if p.StartTimeoutSeconds <= 0 {
		return timeout, nil
	}
	from := created
	if due.After(from) {
		from = due
	}
	deadline := from.Add(seconds(p.StartTimeoutSeconds)).UTC().Truncate(time.Microsecond)
	return timeout, &deadline
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// timeoutMessage is the error of a run that outlived its timeout.
func timeoutMessage(timeoutSeconds float64) string {
	return "timed out after " + seconds(timeoutSeconds).String()
}

// sweepTimeouts asks the runners of runs past their timeout to stop them, and fails those still held
// TimeoutGrace after that.
func (c *Coordinator) sweepTimeouts(ctx context.Context) error {
	now := c.now()
	runs, err := c.store.ListRuns(ctx, orchestrator.RunFilter{Timed: true, Limit: sweepPage})
	if err != nil {
		return err
	}
	for _, run := range runs {
		held := run.StartedAt
		if held == nil {
			held = run.ClaimedAt
		}
		if held == nil || now.Before(held.Add(seconds(run.TimeoutSeconds))) {
			continue
		}
		if run.TimedOutAt == nil {
			if err := c.requestTimeoutStop(ctx, run, now); err != nil {
				return err
			}
			continue
		}
		if now.Before(run.TimedOutAt.Add(c.cfg.TimeoutGrace)) {
			continue
		}
		msg := fmt.Sprintf("%s; its runner did not stop it within %s", timeoutMessage(run.TimeoutSeconds), c.cfg.TimeoutGrace)
		if err := c.failRunWith(ctx, run, &orchestrator.Result{Error: msg, ErrorCode: codeTimeout}, ""); err != nil {
			return err
		}
	}
	return nil
}

// requestTimeoutStop marks run timed out and asks its runner to stop it.
func (c *Coordinator) requestTimeoutStop(ctx context.Context, run *orchestrator.Run, now time.Time) error {
	u := store.RunUpdate{TimedOutAt: &now}
	if run.StopRequestedAt == nil {
		u.StopRequestedAt = &now
	}
	_, err := c.store.UpdateRun(ctx, run.ID, []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}, "", u)
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	c.log.Warn("run timed out; its runner is told to stop it", "run_id", run.ID, "session_id", run.SessionID, "runner_id", run.RunnerID, "timeout", seconds(run.TimeoutSeconds))
	c.wake(runnerKey(run.RunnerID))
	c.wake(runnerStopsKey(run.RunnerID))
	return nil
}

// sweepStartDeadlines fails the pending runs whose start deadline has passed.
func (c *Coordinator) sweepStartDeadlines(ctx context.Context) error {
	now := c.now()
	runs, err := c.store.ListRuns(ctx, orchestrator.RunFilter{StartDeadlineBefore: now, Limit: sweepPage})
	if err != nil {
		return err
	}
	for _, run := range runs {
		msg := fmt.Sprintf("no runner took the run within its start deadline (%s)", run.StartDeadline.Format(time.RFC3339))
		if err := c.failPendingWith(ctx, run, &orchestrator.Result{Error: msg, ErrorCode: codeStartTimeout}, ""); err != nil {
			return err
		}
	}
	return nil
}

// settleTimedOut makes the end of a run the coordinator timed out a failure with error code "timeout":
// its runner's stopped report (the stop was the timeout's), or a failure it reported without a code. A
// run that completed all the same keeps its success. The run's own record, already ended, is corrected
// in the same transaction.
func (c *Coordinator) settleTimedOut(ctx context.Context, tx store.Store, e *ending) error {
	if !e.run.TimedOut || e.status == orchestrator.RunCompleted || (e.res != nil && e.res.ErrorCode != "") {
		return nil
	}
	msg := "timed out after " + e.run.Timeout.String()
	if e.status == orchestrator.RunStopped {
		failed := orchestrator.RunFailed
		if _, err := tx.UpdateRun(ctx, e.run.ID, []orchestrator.RunStatus{orchestrator.RunStopped}, "", store.RunUpdate{Status: &failed, Error: &msg}); err != nil {
			return err
		}
		e.status, e.errMsg, e.run.Status = failed, msg, failed
	}
	res := orchestrator.Result{}
	if e.res != nil {
		res = *e.res
	}
	res.ErrorCode = codeTimeout
	if res.Error == "" || e.status == orchestrator.RunFailed {
		res.Error = e.errMsg
	}
	e.res = &res
	return nil
}
