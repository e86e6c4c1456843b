package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// PollWork hands the runner stop requests for runs it holds and up to p.Max runs it can execute. With
// nothing to hand out it parks until a matching run or a stop arrives — it is woken at once, there is no
// interval polling — or until p.Wait (capped at PollTimeout) elapses; with p.Max 0 (a full runner) it
// waits for stops alone. A stale runner gets stops but no new runs.
func (c *Coordinator) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	if p.Max < 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "max must not be negative")
	}
	wait := min(max(p.Wait, 0), c.cfg.PollTimeout)
	// A poll for runs wakes for work pinned to its runner, for unpinned work and for stops. A full
	// runner's poll (Max 0) takes stops only: waking it for every new run, as each creation would while
	// the runner is busy, would cost a look at the store for nothing.
	key, key2 := runnerKey(p.RunnerID), anyRunnerKey
	if p.Max == 0 {
		key, key2 = runnerStopsKey(p.RunnerID), ""
	}
	var work *orchestrator.Work
	done, err := c.await(ctx, wait, key, key2, func() (bool, error) {
		var err error
		work, err = c.pollOnce(ctx, p)
		return err == nil && !work.Empty(), err
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return &orchestrator.Work{}, nil
	}
	return work, nil
}

func (c *Coordinator) pollOnce(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	now := c.now()
	var (
		runner *orchestrator.RunnerInfo
		stops  []*orchestrator.Run
		runs   []*orchestrator.Run
	)
	// look reads the runner, takes its stop requests and claims up to p.Max runs for it, through st.
	look := func(ctx context.Context, st store.Store, inTx bool) error {
		runner, stops, runs = nil, nil, nil // a transaction may run look again
		var err error
		runner, err = lookup(st.GetRunner(ctx, p.RunnerID)).as("runner", p.RunnerID)
		if err != nil {
			return err
		}
		if runner.Status == orchestrator.RunnerOffline {
			return orchestrator.Errorf(orchestrator.ErrNotFound, "runner_not_found", "runner %q is offline; register again", p.RunnerID)
		}
		if stops, err = st.TakeStopRequests(ctx, p.RunnerID, now, now.Add(-c.cfg.StopResend)); err != nil {
			return err
		}
		if runner.Status != orchestrator.RunnerOnline || p.Max == 0 {
			return nil // a stale runner gets stops but no new runs (nor redeliveries)
		}
		cp := store.ClaimParams{Runner: runner, Now: now, Max: p.Max}
		if inTx {
			runs, err = st.ClaimRuns(ctx, cp)
		} else {
			runs, err = c.claimRuns(ctx, cp)
		}
		return err
	}
	var err error
	if p.Max > 0 && c.warmWrites {
		// The store reads for less in a write transaction than outside one, and the claim is a write
		// transaction anyway: the runner's row and its stop requests are read in the claim's.
		err = c.inTx(ctx, opClaim, func(ctx context.Context, tx store.Store) error { return look(ctx, tx, true) })
		if err == nil {
			c.claimed(ctx, runner.ID, now, runs)
		}
	} else {
		err = look(ctx, c.store, false)
	}
	if err != nil {
		return nil, err
	}
	work := &orchestrator.Work{}
	for _, r := range stops {
		work.Stop = append(work.Stop, r.SessionID)
	}
	if runner.Status != orchestrator.RunnerOnline {
		return work, nil
	}
	// One claim takes as many runs as the runner has free slots. A run that cannot be executed (its agent
	// was deleted meanwhile) is failed, and another claim looks for a replacement; a claim that took fewer
	// than it asked for took all there was.
	for want := p.Max; len(runs) > 0; {
		for _, run := range runs {
			asg, err := c.assignment(ctx, run)
			if err != nil {
				c.log.Warn("claimed run cannot be assigned", "run_id", run.ID, "err", err)
				if ferr := c.failRun(ctx, run, err.Error()); ferr != nil {
					return nil, ferr
				}
				continue
			}
			c.logRunStarted(run, runner.ID)
			work.Runs = append(work.Runs, asg)
		}
		if len(runs) < want || len(work.Runs) == p.Max {
			break
		}
		want = p.Max - len(work.Runs)
		if runs, err = c.claimRuns(ctx, store.ClaimParams{Runner: runner, Now: now, Max: want}); err != nil {
			return nil, err
		}
	}
	if len(work.Runs) == 0 && p.Max > 0 {
		// A run stays claimed until its runner reports it started. One claimed long ago was most likely
		// lost with a poll response that never arrived: hand it to the same runner again (a runner ignores
		// a run it already executes).
		held, err := c.store.ListRuns(ctx, orchestrator.RunFilter{RunnerID: p.RunnerID, Statuses: []orchestrator.RunStatus{orchestrator.RunClaimed}, Limit: p.Max})
		if err != nil {
			return nil, err
		}
		for _, run := range held {
			if run.ClaimedAt == nil || run.ClaimedAt.After(now.Add(-c.cfg.RedeliverAfter)) {
				continue
			}
			asg, err := c.assignment(ctx, run)
			if err != nil {
				if ferr := c.failRun(ctx, run, err.Error()); ferr != nil {
					return nil, ferr
				}
				continue
			}
			c.log.Warn("redelivering a claimed run its runner never started", "run_id", run.ID, "runner_id", p.RunnerID)
			work.Runs = append(work.Runs, asg)
		}
	}
	return work, nil
}

// assignment gathers what the runner needs to execute a claimed run.
func (c *Coordinator) assignment(ctx context.Context, run *orchestrator.Run) (*orchestrator.Assignment, error) {
	asg := &orchestrator.Assignment{Run: run}
	asg.BlueprintName, _, _ = strings.Cut(run.AgentName, "@")
	if run.AgentType == orchestrator.AgentTypeAgent {
		a, err := c.store.GetAgent(ctx, run.AgentName)
		if err != nil {
			if errors.Is(err, orchestrator.ErrNotFound) {
				return nil, fmt.Errorf("agent %q was deleted before the run started", run.AgentName)
			}
			return nil, err
		}
		asg.Blueprint = a.Blueprint
	}
	if run.Type == orchestrator.RunTypeResume {
		s, err := c.store.GetSession(ctx, run.SessionID)
		if err != nil {
			return nil, err
		}
		asg.ExecutorSessionID = s.ExecutorSessionID
	}
	return asg, nil
}
