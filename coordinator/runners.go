package coordinator

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/tags"
	"github.com/agentorchestrator/orchestrator/store"
)

// RegisterRunner registers a runner and binds the blueprints it announces to it. The runner id is stable
// for the same hostname, project directory and executor profile ([orchestrator.RunnerRegistration.RunnerID]).
//
// Name collisions (docs/decisions.md): the first owner keeps "web-crawler", a later runner's
// copy is registered as "web-crawler@<runner_id>" and the response tells it so.
//
// Registering an id that is already registered replaces the previous incarnation: runs it still held fail
// ("Runner restarted during execution"), since the new process cannot know them.
//
// The answer carries the runner's secret ([orchestrator.Registration].RunnerSecret), its credential over
// HTTP; the coordinator keeps only its hash. Since the id follows from the hostname, project directory and
// profile, anyone may name it, so the secret guards the identity: registering under the id of a runner that
// is not offline — online or stale — is refused (ErrConflict, code runner_identity_in_use, nothing changes)
// unless the registration presents that runner's secret (RunnerRegistration.RunnerSecret). A stale runner
// is not a dead one: a runner cut off from the coordinator for a while, or paused, comes back to its runs, and
// whoever took its identity meanwhile would fail them and receive the next ones with their clients'
// parameters. An unknown id and an offline runner (status offline, or no heartbeat for OfflineAfter, which
// the liveness sweep is about to record) may be taken without the secret: by then the runner's runs have
// failed and its blueprints are gone. A runner restarted after a crash, which lost its secret with its
// memory, therefore registers once its previous incarnation is offline, or at once after an admin removes it
// (DeregisterRunner, DELETE /runners/{id}). A registration that presents the valid secret keeps it; any other
// gets a new one, and the previous one stops working.
func (c *Coordinator) RegisterRunner(ctx context.Context, reg *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	if err := c.checkRegistration(ctx, reg); err != nil {
		return nil, err
	}
	id := reg.RunnerID()
	now := c.now()
	accepts := len(reg.Blueprints) == 0
	if reg.AcceptsAgents != nil {
		accepts = *reg.AcceptsAgents
	}
	maxConc := reg.MaxConcurrent
	if maxConc <= 0 {
		maxConc = 1
	}
	info := &orchestrator.RunnerInfo{
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
		Status:              orchestrator.RunnerOnline,
		RegisteredAt:        now,
		LastHeartbeatAt:     now,
	}
	var (
		names  []orchestrator.RegisteredBlueprint
		fx     *effects
		secret string
	)
	err := c.inTx(ctx, opRunner, func(ctx context.Context, tx store.Store) error {
		names, fx = nil, &effects{}
		var err error
		if secret, err = c.checkIdentity(ctx, tx, reg, id, now); err != nil {
			return err
		}
		held, err := tx.ListRuns(ctx, orchestrator.RunFilter{RunnerID: id, Statuses: []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}})
		if err != nil {
			return err
		}
		for _, r := range held {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", orchestrator.RunFailed, lostRunner("Runner restarted during execution"), ""); err != nil {
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
			} else if !errors.Is(err, orchestrator.ErrNotFound) {
				return err
			}
			a := &store.Agent{Name: name, Blueprint: b, RunnerID: id, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateAgent(ctx, a); err != nil {
				return fmt.Errorf("register blueprint %q as %q: %w", b.Name, name, err)
			}
			names = append(names, orchestrator.RegisteredBlueprint{Name: b.Name, RegisteredName: name})
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
	c.secrets.Delete(id)
	c.agentsChanged()
	c.apply(fx)
	c.log.Info("runner registered", "runner_id", id, "hostname", reg.Hostname, "project_dir", reg.ProjectDir,
		"blueprints", len(names), "failed_runs", len(fx.ended))
	// Runs parked because no runner matched them may match this one.
	if err := c.unpark(ctx, []*orchestrator.RunnerInfo{info}); err != nil {
		c.log.Warn("unpark runs for a new runner", "runner_id", id, "err", err)
	}
	// Runs may have been waiting for exactly this runner.
	c.wake(anyRunnerKey)
	return &orchestrator.Registration{
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
func (c *Coordinator) checkIdentity(ctx context.Context, tx store.Store, reg *orchestrator.RunnerRegistration, id string, now time.Time) (string, error) {
	prev, err := tx.GetRunner(ctx, id)
	if errors.Is(err, orchestrator.ErrNotFound) {
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
	if prev.Status != orchestrator.RunnerOffline && prev.LastHeartbeatAt.After(now.Add(-c.cfg.OfflineAfter)) {
		return "", orchestrator.Errorf(orchestrator.ErrConflict, "runner_identity_in_use",
			"runner %s (hostname %q, project_dir %q, executor_profile %q) is %s, last heartbeat %s ago, and this "+
				"registration does not present its runner_secret: another process may still be running as this runner. "+
				"If that process is gone, this one can register once the old one is offline (no heartbeat for %s), "+
				"or as soon as an admin removes it (DELETE /runners/%s)",
			id, reg.Hostname, reg.ProjectDir, reg.ExecutorProfile, prev.Status, now.Sub(prev.LastHeartbeatAt).Round(time.Millisecond),
			c.cfg.OfflineAfter, id).With("runner_id", id).With("runner_status", string(prev.Status))
	}
	return newRunnerSecret(), nil
}

func (c *Coordinator) checkRegistration(ctx context.Context, reg *orchestrator.RunnerRegistration) error {
	bad := func(format string, args ...any) error {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_registration", format, args...)
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
		if err := tags.Validate(t); err != nil {
			return bad("%v", err)
		}
	}
	if len(reg.Blueprints) > c.limits.MaxBlueprints {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "too_many_blueprints", "a runner may announce at most %d blueprints", c.limits.MaxBlueprints)
	}
	seen := map[string]bool{}
	for i, b := range reg.Blueprints {
		if b == nil {
			return bad("blueprints[%d] is null", i)
		}
		if b.Type == "" {
			b.Type = orchestrator.AgentTypeDeterministic
		}
		if b.Type != orchestrator.AgentTypeDeterministic {
			return bad("blueprints[%d] %q: runners announce deterministic agents only; AI agents belong in the coordinator's registry", i, b.Name)
		}
		if strings.Contains(b.Name, "@") {
			return bad("blueprints[%d]: name %q must not contain '@'", i, b.Name)
		}
		if err := c.checkSchemaSizes(b); err != nil {
			return err
		}
		// Each schema's compile is bounded (orchestrator.CompileSchema); a runner that has gone does not
		// make the coordinator compile the rest.
		if err := ctx.Err(); err != nil {
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
func (c *Coordinator) Heartbeat(ctx context.Context, runnerID string) error {
	r, err := lookup(c.store.TouchRunner(ctx, runnerID, c.now())).as("runner", runnerID)
	if err != nil {
		return err
	}
	_ = r
	return nil
}

// ListRunners lists every known runner, offline ones included.
func (c *Coordinator) ListRunners(ctx context.Context) ([]*orchestrator.RunnerInfo, error) {
	return c.store.ListRunners(ctx, store.RunnerFilter{})
}

// DeregisterRunner removes the runner's blueprints at once and marks it offline. Runs it still holds fail
// ("Runner deregistered during execution") and pending runs pinned to it fail; a runner shutting down
// gracefully reports its runs before it deregisters, so normally there are none.
func (c *Coordinator) DeregisterRunner(ctx context.Context, runnerID string) error {
	if _, err := lookup(c.store.GetRunner(ctx, runnerID)).as("runner", runnerID); err != nil {
		return err
	}
	return c.retireRunner(ctx, runnerID, nil, "Runner deregistered during execution", time.Time{})
}

// retireRunner makes a runner offline (when its status is one of from, or any status when from is nil,
// and — for the liveness sweep — its last heartbeat is older than heartbeatBefore), removes its blueprints
// and fails its runs with msg. Only one caller can win the guarded status change, so with several
// coordinator replicas the runner's runs are failed exactly once.
func (c *Coordinator) retireRunner(ctx context.Context, runnerID string, from []orchestrator.RunnerStatus, msg string, heartbeatBefore time.Time) error {
	if from == nil {
		from = []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale, orchestrator.RunnerOffline}
	}
	fx := &effects{}
	err := c.inTx(ctx, opRunner, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		if _, err := tx.UpdateRunnerStatus(ctx, runnerID, from, orchestrator.RunnerOffline, heartbeatBefore); err != nil {
			return err
		}
		// Its secret goes with it: a runner that comes back registers again and gets a new one.
		if err := tx.SetRunnerSecretHash(ctx, runnerID, nil); err != nil {
			return err
		}
		if _, err := tx.DeleteRunnerAgents(ctx, runnerID); err != nil {
			return err
		}
		held, err := tx.ListRuns(ctx, orchestrator.RunFilter{RunnerID: runnerID, Statuses: []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}})
		if err != nil {
			return err
		}
		pinned, err := tx.ListRuns(ctx, orchestrator.RunFilter{DemandRunnerID: runnerID, Statuses: []orchestrator.RunStatus{orchestrator.RunPending}})
		if err != nil {
			return err
		}
		for _, r := range held {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", orchestrator.RunFailed, lostRunner(msg), ""); err != nil {
				return err
			}
		}
		for _, r := range pinned {
			if err := c.finishRun(ctx, tx, fx, r.ID, "", orchestrator.RunFailed, nil,
				fmt.Sprintf("runner %s, which owns agent %q, went offline before the run started", runnerID, r.AgentName)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.secrets.Delete(runnerID)
	c.agentsChanged()
	c.apply(fx)
	reason := "deregistered"
	if !heartbeatBefore.IsZero() {
		reason = "no heartbeat"
	}
	if len(fx.ended) == 0 {
		c.log.Info("runner offline", "runner_id", runnerID, "reason", reason)
	} else { // the runs' own "run ended" lines say which
		c.log.Warn("runner offline with runs in progress; they failed", "runner_id", runnerID, "reason", reason, "failed_runs", len(fx.ended))
	}
	return nil
}
