package orchestrator

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// RegisterRunner registers a runner and binds the blueprints it announces to it. The runner id is stable
// for the same hostname, project directory and executor profile ([RunnerRegistration.RunnerID]).
//
// Name collisions are resolved as seed 000 §3 says: the first owner keeps "web-crawler", a later runner's
// copy is registered as "web-crawler@<runner_id>" and the response tells it so.
//
// Registering an id that is already registered replaces the previous incarnation: runs it still held fail
// ("Runner restarted during execution"), since the new process cannot know them.
//
// The answer carries the runner's secret ([Registration].RunnerSecret), its credential over HTTP; the
// coordinator keeps only its hash. Since the id follows from the hostname, project directory and profile,
// anyone may name it, so the secret guards the identity: registering under the id of a runner that is
// online (a heartbeat within StaleAfter) is refused — ErrConflict, code runner_identity_in_use, nothing
// changes — unless the registration presents that runner's secret (RunnerRegistration.RunnerSecret). An
// unknown id, an offline runner and a stale one may be taken without it: a runner that has not
// heartbeated for StaleAfter is most likely the crashed previous process of the one registering, and a
// live runner, which heartbeats, never becomes stale for someone else's asking. A registration that
// presents the valid secret keeps it; any other gets a new one, and the previous one stops working.
func (c *LocalCoordinator) RegisterRunner(ctx context.Context, reg *RunnerRegistration) (*Registration, error) {
	if err := c.checkRegistration(reg); err != nil {
		return nil, err
	}
	id := reg.RunnerID()
	now := Now()
	accepts := len(reg.Blueprints) == 0
	if reg.AcceptsAgents != nil {
		accepts = *reg.AcceptsAgents
	}
	maxConc := reg.MaxConcurrent
	if maxConc <= 0 {
		maxConc = 1
	}
	info := &RunnerInfo{
		ID:                  id,
		Hostname:            reg.Hostname,
		ProjectDir:          reg.ProjectDir,
		ExecutorType:        reg.ExecutorType,
		ExecutorProfile:     reg.ExecutorProfile,
		Executor:            reg.Executor,
		Tags:                slices.Sorted(slices.Values(reg.Tags)),
		RequireMatchingTags: reg.RequireMatchingTags,
		MaxConcurrent:       maxConc,
		AcceptsAgents:       accepts,
		Status:              RunnerOnline,
		RegisteredAt:        now,
		LastHeartbeatAt:     now,
	}
	var (
		names  []RegisteredBlueprint
		fx     *effects
		secret string
	)
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		names, fx = nil, &effects{}
		var err error
		if secret, err = c.checkIdentity(ctx, tx, reg, id, now); err != nil {
			return err
		}
		held, err := tx.ListRuns(ctx, RunFilter{RunnerID: id, Statuses: []RunStatus{RunClaimed, RunRunning}})
		if err != nil {
			return err
		}
		for _, r := range held {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", RunFailed, nil, "Runner restarted during execution"); err != nil {
				return err
			}
		}
		if _, err := tx.DeleteRunnerAgents(ctx, id); err != nil {
			return err
		}
		for _, b := range reg.Blueprints {
			name := b.Name
			if _, err := tx.GetAgent(ctx, name); err == nil {
				name = b.Name + "@" + id
			} else if !errors.Is(err, ErrNotFound) {
				return err
			}
			a := &Agent{Name: name, Blueprint: b, RunnerID: id, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateAgent(ctx, a); err != nil {
				return fmt.Errorf("register blueprint %q as %q: %w", b.Name, name, err)
			}
			names = append(names, RegisteredBlueprint{Name: b.Name, RegisteredName: name})
		}
		if err := tx.PutRunner(ctx, info); err != nil {
			return err
		}
		h := sha256.Sum256([]byte(secret))
		return tx.SetRunnerSecretHash(ctx, id, h[:])
	})
	if err != nil {
		return nil, err
	}
	c.secrets.forget(id)
	c.agentsChanged()
	c.apply(fx)
	c.log.Info("runner registered", "runner_id", id, "hostname", reg.Hostname, "project_dir", reg.ProjectDir,
		"blueprints", len(names), "failed_runs", len(fx.ended))
	// Runs parked because no runner matched them may match this one.
	if err := c.unpark(ctx, []*RunnerInfo{info}); err != nil {
		c.log.Warn("unpark runs for a new runner", "runner_id", id, "err", err)
	}
	// Runs may have been waiting for exactly this runner.
	c.wake(anyRunnerKey)
	return &Registration{
		RunnerID:                 id,
		Blueprints:               names,
		HeartbeatIntervalSeconds: c.cfg.HeartbeatInterval.Seconds(),
		PollTimeoutSeconds:       c.cfg.PollTimeout.Seconds(),
		MaxResultBytes:           int64(c.limits.MaxResultBytes),
		RunnerSecret:             secret,
	}, nil
}

// checkIdentity decides whether reg may take runner id (see RegisterRunner) and returns the secret the
// registration gets: the one it presented when that is the runner's, else a new one.
func (c *LocalCoordinator) checkIdentity(ctx context.Context, tx Store, reg *RunnerRegistration, id string, now time.Time) (string, error) {
	prev, err := tx.GetRunner(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return newRunnerSecret(), nil
	}
	if err != nil {
		return "", err
	}
	stored, err := tx.GetRunnerSecretHash(ctx, id)
	if err != nil {
		return "", err
	}
	if secretMatches(stored, reg.RunnerSecret) {
		return reg.RunnerSecret, nil
	}
	if prev.Status == RunnerOnline && prev.LastHeartbeatAt.After(now.Add(-c.cfg.StaleAfter)) {
		return "", Errorf(ErrConflict, "runner_identity_in_use",
			"runner %s (hostname %q, project_dir %q, executor_profile %q) is online, last heartbeat %s ago, and this "+
				"registration does not present its runner_secret: another process is running as this runner. "+
				"If that process is gone, this one can register once the old one is stale (no heartbeat for %s), "+
				"or as soon as an admin removes it (DELETE /runners/%s)",
			id, reg.Hostname, reg.ProjectDir, reg.ExecutorProfile, now.Sub(prev.LastHeartbeatAt).Round(time.Millisecond),
			c.cfg.StaleAfter, id).With("runner_id", id)
	}
	return newRunnerSecret(), nil
}

func (c *LocalCoordinator) checkRegistration(reg *RunnerRegistration) error {
	bad := func(format string, args ...any) error {
		return Errorf(ErrInvalid, "invalid_registration", format, args...)
	}
	if reg == nil {
		return bad("registration is required")
	}
	if strings.TrimSpace(reg.Hostname) == "" || len(reg.Hostname) > 255 || strings.ContainsRune(reg.Hostname, 0) {
		return bad("hostname is required (at most 255 characters)")
	}
	if len(reg.ProjectDir) > 4096 || strings.ContainsRune(reg.ProjectDir, 0) {
		return bad("project_dir is not valid")
	}
	if len(reg.ExecutorType) > 128 || len(reg.ExecutorProfile) > 128 {
		return bad("executor_type and executor_profile must be at most 128 characters")
	}
	if reg.MaxConcurrent < 0 || reg.MaxConcurrent > 10000 {
		return bad("max_concurrent must be between 0 and 10000")
	}
	if len(reg.Executor) > 64<<10 {
		return bad("executor description exceeds 64 KiB")
	}
	for _, t := range reg.Tags {
		if err := validateTag(t); err != nil {
			return bad("%v", err)
		}
	}
	if len(reg.Blueprints) > c.limits.MaxBlueprints {
		return Errorf(ErrTooLarge, "too_many_blueprints", "a runner may announce at most %d blueprints", c.limits.MaxBlueprints)
	}
	seen := map[string]bool{}
	for i, b := range reg.Blueprints {
		if b == nil {
			return bad("blueprints[%d] is null", i)
		}
		if b.Type == "" {
			b.Type = AgentTypeDeterministic
		}
		if b.Type != AgentTypeDeterministic {
			return bad("blueprints[%d] %q: runners announce deterministic agents only; AI agents belong in the coordinator's registry", i, b.Name)
		}
		if strings.Contains(b.Name, "@") {
			return bad("blueprints[%d]: name %q must not contain '@'", i, b.Name)
		}
		if err := c.checkSchemaSizes(b); err != nil {
			return err
		}
		if err := b.Validate(); err != nil {
			return err
		}
		if seen[b.Name] {
			return bad("blueprint %q is announced twice", b.Name)
		}
		seen[b.Name] = true
	}
	return nil
}

// Heartbeat records that the runner is alive. An unknown or offline runner must register again.
func (c *LocalCoordinator) Heartbeat(ctx context.Context, runnerID string) error {
	r, err := lookup(c.store.TouchRunner(ctx, runnerID, Now())).as("runner", runnerID)
	if err != nil {
		return err
	}
	_ = r
	return nil
}

// ListRunners lists every known runner, offline ones included.
func (c *LocalCoordinator) ListRunners(ctx context.Context) ([]*RunnerInfo, error) {
	return c.store.ListRunners(ctx, RunnerFilter{})
}

// PollWork hands the runner stop requests for runs it holds and up to p.Max runs it can execute. With
// nothing to hand out it parks until a matching run or a stop arrives — it is woken at once, there is no
// interval polling — or until p.Wait (capped at PollTimeout) elapses; with p.Max 0 (a full runner) it
// waits for stops alone. A stale runner gets stops but no new runs.
func (c *LocalCoordinator) PollWork(ctx context.Context, p PollParams) (*Work, error) {
	if p.Max < 0 {
		return nil, Errorf(ErrInvalid, "invalid_request", "max must not be negative")
	}
	wait := min(max(p.Wait, 0), c.cfg.PollTimeout)
	// A poll for runs wakes for work pinned to its runner, for unpinned work and for stops. A full
	// runner's poll (Max 0) takes stops only: waking it for every new run, as each creation would while
	// the runner is busy, would cost a look at the store for nothing.
	key, key2 := runnerKey(p.RunnerID), anyRunnerKey
	if p.Max == 0 {
		key, key2 = runnerStopsKey(p.RunnerID), ""
	}
	var work *Work
	done, err := c.await(ctx, wait, key, key2, func() (bool, error) {
		var err error
		work, err = c.pollOnce(ctx, p)
		return err == nil && !work.Empty(), err
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return &Work{}, nil
	}
	return work, nil
}

func (c *LocalCoordinator) pollOnce(ctx context.Context, p PollParams) (*Work, error) {
	runner, err := lookup(c.store.GetRunner(ctx, p.RunnerID)).as("runner", p.RunnerID)
	if err != nil {
		return nil, err
	}
	if runner.Status == RunnerOffline {
		return nil, Errorf(ErrNotFound, "runner_not_found", "runner %q is offline; register again", p.RunnerID)
	}
	now := Now()
	work := &Work{}
	stops, err := c.store.TakeStopRequests(ctx, p.RunnerID, now, now.Add(-c.cfg.StopResend))
	if err != nil {
		return nil, err
	}
	for _, r := range stops {
		work.Stop = append(work.Stop, r.SessionID)
	}
	if runner.Status != RunnerOnline {
		return work, nil
	}
	// One claim takes as many runs as the runner has free slots. A run that cannot be executed (its agent
	// was deleted meanwhile) is failed, and another claim looks for a replacement; a claim that took fewer
	// than it asked for took all there was.
	for len(work.Runs) < p.Max {
		want := p.Max - len(work.Runs)
		runs, err := c.store.ClaimRuns(ctx, ClaimParams{Runner: runner, Now: now, Max: want})
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			asg, err := c.assignment(ctx, run)
			if err != nil {
				c.log.Warn("claimed run cannot be assigned", "run_id", run.ID, "err", err)
				if ferr := c.failRun(ctx, run, err.Error()); ferr != nil {
					return nil, ferr
				}
				continue
			}
			work.Runs = append(work.Runs, asg)
		}
		if len(runs) < want {
			break
		}
	}
	if len(work.Runs) == 0 && p.Max > 0 {
		// A run stays claimed until its runner reports it started. One claimed long ago was most likely
		// lost with a poll response that never arrived: hand it to the same runner again (a runner ignores
		// a run it already executes).
		held, err := c.store.ListRuns(ctx, RunFilter{RunnerID: p.RunnerID, Statuses: []RunStatus{RunClaimed}, Limit: p.Max})
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
func (c *LocalCoordinator) assignment(ctx context.Context, run *Run) (*Assignment, error) {
	asg := &Assignment{Run: run}
	asg.BlueprintName, _, _ = strings.Cut(run.AgentName, "@")
	if run.AgentType == AgentTypeAgent {
		a, err := c.store.GetAgent(ctx, run.AgentName)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("agent %q was deleted before the run started", run.AgentName)
			}
			return nil, err
		}
		asg.Blueprint = a.Blueprint
	}
	if run.Type == RunTypeResume {
		s, err := c.store.GetSession(ctx, run.SessionID)
		if err != nil {
			return nil, err
		}
		asg.ExecutorSessionID = s.ExecutorSessionID
	}
	return asg, nil
}

// failRun ends a run that never reached a runner, or whose runner is gone, as failed.
func (c *LocalCoordinator) failRun(ctx context.Context, run *Run, msg string) error {
	fx := &effects{}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		*fx = effects{}
		return c.finishRun(ctx, tx, fx, run.ID, "", RunFailed, nil, msg)
	})
	if errors.Is(err, ErrConflict) {
		return nil // it ended some other way meanwhile
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

// failPending fails a run that is still pending (the no-match sweep). A guarded update that changes
// nothing takes the run first: a run claimed since the sweep read it is left alone, and on PostgreSQL a
// concurrent claim skips the row until this transaction has ended it.
func (c *LocalCoordinator) failPending(ctx context.Context, run *Run, msg string) error {
	fx := &effects{}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		*fx = effects{}
		if _, err := tx.UpdateRun(ctx, run.ID, []RunStatus{RunPending}, "", RunUpdate{}); err != nil {
			return err
		}
		return c.finishRun(ctx, tx, fx, run.ID, "", RunFailed, nil, msg)
	})
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return nil // claimed, ended or deleted meanwhile
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

// ReportRun records a runner's report on a run it holds. Reports are fenced — a runner that does not hold
// the run gets ErrConflict ("run_not_held") — and idempotent: repeating a report that was already applied
// succeeds without changing anything, so a retried HTTP call is harmless.
func (c *LocalCoordinator) ReportRun(ctx context.Context, rep RunReport) error {
	if err := c.checkReport(&rep); err != nil {
		return err
	}
	if rep.Status == RunRunning {
		return c.reportStarted(ctx, rep)
	}
	return c.reportEnded(ctx, rep)
}

// checkReport refuses a malformed report and shortens an overlong error message.
func (c *LocalCoordinator) checkReport(rep *RunReport) error {
	if rep.RunnerID == "" || rep.RunID == "" {
		return Errorf(ErrInvalid, "invalid_request", "runner_id and run_id are required")
	}
	if rep.Result != nil && len(rep.Result.ResultText)+len(rep.Result.ResultData) > c.limits.MaxResultBytes {
		return Errorf(ErrTooLarge, "result_too_large", "result exceeds %d bytes", c.limits.MaxResultBytes)
	}
	if len(rep.Error) > 64<<10 {
		rep.Error = rep.Error[:64<<10]
	}
	switch rep.Status {
	case RunRunning, RunCompleted, RunFailed, RunStopped:
		return nil
	}
	return Errorf(ErrInvalid, "invalid_request", "status must be running, completed, failed or stopped, not %q", rep.Status)
}

// ReportRuns implements [BatchReporter]: the final reports among reps (completed, failed, stopped) are
// recorded in one store transaction — one commit for all of them — and the rest one by one, as ReportRun
// records them. When one of the batched reports does not apply as it stands (a repeat, a runner that no
// longer holds its run, a run stopped meanwhile) or the transaction fails, nothing of it is kept and each
// of those reports is recorded on its own instead, so that each gets the answer ReportRun would give and
// the others still land.
func (c *LocalCoordinator) ReportRuns(ctx context.Context, reps []RunReport) []error {
	reps = slices.Clone(reps) // checkReport may shorten an error message
	errs := make([]error, len(reps))
	var ended []int
	for i := range reps {
		if errs[i] = c.checkReport(&reps[i]); errs[i] != nil {
			continue
		}
		if reps[i].Status == RunRunning {
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
	fx := &effects{}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		*fx = effects{}
		for _, i := range ended {
			rep := reps[i]
			if err := c.finishRun(ctx, tx, fx, rep.RunID, rep.RunnerID, rep.Status, rep.Result, rep.Error); err != nil {
				return err
			}
		}
		return nil
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

func (c *LocalCoordinator) reportStarted(ctx context.Context, rep RunReport) error {
	var sessionID string
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		now := Now()
		run, err := updateRunBrief(ctx, tx, rep.RunID, []RunStatus{RunClaimed}, rep.RunnerID,
			RunUpdate{Status: Ptr(RunRunning), StartedAt: &now})
		if err != nil {
			return err
		}
		sessionID = run.SessionID
		if _, err := updateSessionBrief(ctx, tx, run.SessionID, []SessionStatus{SessionPending}, SessionUpdate{
			Status: Ptr(SessionRunning), RunnerID: &rep.RunnerID, UpdatedAt: now,
		}); err != nil {
			return err
		}
		return tx.AppendEvents(ctx, run.SessionID, []*Event{eventOf(EventRunStarted, now, map[string]any{
			"run_id": run.ID, "runner_id": rep.RunnerID,
		})})
	})
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return c.explainReport(ctx, rep, err)
	}
	if err == nil {
		c.wake(eventsKey(sessionID))
		c.wake(sessionKey(sessionID))
	}
	return err
}

func (c *LocalCoordinator) reportEnded(ctx context.Context, rep RunReport) error {
	fx := &effects{}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		*fx = effects{}
		return c.finishRun(ctx, tx, fx, rep.RunID, rep.RunnerID, rep.Status, rep.Result, rep.Error)
	})
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return c.explainReport(ctx, rep, err)
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

// explainReport turns a report that lost its guard into nil (it was already applied) or a clear error.
func (c *LocalCoordinator) explainReport(ctx context.Context, rep RunReport, cause error) error {
	run, err := c.store.GetRun(ctx, rep.RunID)
	if errors.Is(err, ErrNotFound) {
		return notFound("run", rep.RunID)
	}
	if err != nil {
		return err
	}
	if run.RunnerID != rep.RunnerID {
		return Errorf(ErrConflict, "run_not_held", "run %s is not held by runner %s", rep.RunID, rep.RunnerID)
	}
	switch {
	case run.Status == rep.Status:
		return nil // a repeated report
	case run.Status.Terminal():
		return Errorf(ErrConflict, "run_ended", "run %s already ended as %s", rep.RunID, run.Status)
	}
	return Errorf(ErrConflict, "run_conflict", "run %s is %s: %v", rep.RunID, run.Status, cause)
}

// DeregisterRunner removes the runner's blueprints at once and marks it offline. Runs it still holds fail
// ("Runner deregistered during execution") and pending runs pinned to it fail; a runner shutting down
// gracefully reports its runs before it deregisters, so normally there are none.
func (c *LocalCoordinator) DeregisterRunner(ctx context.Context, runnerID string) error {
	if _, err := lookup(c.store.GetRunner(ctx, runnerID)).as("runner", runnerID); err != nil {
		return err
	}
	return c.retireRunner(ctx, runnerID, nil, "Runner deregistered during execution", time.Time{})
}

// retireRunner makes a runner offline (when its status is one of from, or any status when from is nil,
// and — for the liveness sweep — its last heartbeat is older than heartbeatBefore), removes its blueprints
// and fails its runs with msg. Only one caller can win the guarded status change, so with several
// coordinator replicas the runner's runs are failed exactly once.
func (c *LocalCoordinator) retireRunner(ctx context.Context, runnerID string, from []RunnerStatus, msg string, heartbeatBefore time.Time) error {
	if from == nil {
		from = []RunnerStatus{RunnerOnline, RunnerStale, RunnerOffline}
	}
	fx := &effects{}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		*fx = effects{}
		if _, err := tx.UpdateRunnerStatus(ctx, runnerID, from, RunnerOffline, heartbeatBefore); err != nil {
			return err
		}
		// Its secret goes with it: a runner that comes back registers again and gets a new one.
		if err := tx.SetRunnerSecretHash(ctx, runnerID, nil); err != nil {
			return err
		}
		if _, err := tx.DeleteRunnerAgents(ctx, runnerID); err != nil {
			return err
		}
		held, err := tx.ListRuns(ctx, RunFilter{RunnerID: runnerID, Statuses: []RunStatus{RunClaimed, RunRunning}})
		if err != nil {
			return err
		}
		pinned, err := tx.ListRuns(ctx, RunFilter{DemandRunnerID: runnerID, Statuses: []RunStatus{RunPending}})
		if err != nil {
			return err
		}
		for _, r := range held {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", RunFailed, nil, msg); err != nil {
				return err
			}
		}
		for _, r := range pinned {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", RunFailed, nil,
				fmt.Sprintf("runner %s, which owns agent %q, went offline before the run started", runnerID, r.AgentName)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.secrets.forget(runnerID)
	c.agentsChanged()
	c.apply(fx)
	c.log.Info("runner offline", "runner_id", runnerID, "reason", msg, "failed_runs", len(fx.ended))
	return nil
}
