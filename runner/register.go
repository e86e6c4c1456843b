package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/backoff"
)

// register registers until it succeeds, the context ends, or the coordinator rejects the registration as
// invalid (a configuration error, returned). It presents the secret of its previous registration, if any.
// While another process that is not offline holds this runner's identity (runner_identity_in_use) it keeps
// trying, with one warning: the other one may be this runner's own previous process, which the coordinator
// lets go once it is offline, or at once when an admin removes it.
func (r *Runner) register(ctx context.Context) (*orchestrator.Registration, error) {
	retry := backoff.New(200*time.Millisecond, 10*time.Second)
	warned := false
	for {
		reg, err := r.co.RegisterRunner(ctx, &r.reg)
		if err == nil {
			r.link.result("register", nil)
			r.reg.RunnerSecret = reg.RunnerSecret
			r.mu.Lock()
			r.runnerID = reg.RunnerID
			r.maxResult = reg.MaxResultBytes
			r.gen++
			select {
			case <-r.reRegister: // answered by this registration
			default:
			}
			r.mu.Unlock()
			for _, b := range reg.Blueprints {
				if b.Name != b.RegisteredName {
					r.log.Warn("blueprint name taken by another runner; registered under a suffixed name",
						"blueprint", b.Name, "registered_name", b.RegisteredName)
				}
			}
			r.log.Info("registered", "runner_id", reg.RunnerID, "blueprints", len(reg.Blueprints))
			r.regOnce.Do(func() { close(r.registered) })
			return reg, nil
		}
		if errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge) || errors.Is(err, orchestrator.ErrUnauthorized) || errors.Is(err, orchestrator.ErrForbidden) {
			return nil, fmt.Errorf("register runner: %w", err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case orchestrator.ErrorCode(err) == "runner_identity_in_use" && !warned:
			r.log.Warn("another runner that is not offline holds this runner's identity; retrying until it is offline or an admin removes it", "err", err)
			warned = true
		case orchestrator.ErrorCode(err) == "runner_identity_in_use":
			r.log.Debug("runner identity still in use; retrying", "err", err)
		case r.link.result("register", err):
		default:
			r.log.Warn("registration failed; retrying", "err", err)
		}
		retry.Sleep(ctx)
	}
}

// registerAgain tells the loop to register again, after a heartbeat or a stop poll under registration gen
// was answered that the coordinator no longer knows this runner: it ends the loop's poll and wakes it.
// An answer to a call made under an older registration is stale and ignored. r.mu is held.
func (r *Runner) registerAgain(gen uint64) {
	if gen != r.gen {
		return
	}
	select {
	case r.reRegister <- struct{}{}:
	default:
	}
	if r.cancelPoll != nil {
		r.cancelPoll()
	}
	r.wakeLoop()
}

// mustRegisterAgain reports whether err, answered to a heartbeat or a poll, means the coordinator no
// longer knows this runner (unknown, offline), or no longer takes its credential (revoked when it went
// offline): it must register again.
func mustRegisterAgain(err error) bool {
	return errors.Is(err, orchestrator.ErrNotFound) || errors.Is(err, orchestrator.ErrUnauthorized)
}

func (r *Runner) heartbeatLoop(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		id, gen := r.runnerID, r.gen
		r.mu.Unlock()
		err := r.co.Heartbeat(ctx, id)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			r.link.result("heartbeat", nil)
		case mustRegisterAgain(err):
			r.mu.Lock()
			r.registerAgain(gen)
			r.mu.Unlock()
		case r.link.result("heartbeat", err):
		default:
			r.log.Warn("heartbeat failed", "err", err)
		}
	}
}
