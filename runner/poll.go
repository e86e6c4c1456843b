package runner

import (
	"context"
	"errors"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/backoff"
)

// Run registers the runner and works until ctx ends. Then it stops claiming, lets runs in progress finish
// within ShutdownGrace, stops the rest (reporting them stopped), deregisters — its blueprints disappear
// from the coordinator at once — and returns nil. It returns early with an error only when registration is
// rejected as invalid.
func (r *Runner) Run(ctx context.Context) error {
	reg, err := r.register(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// Runs live in their own context so that shutting down lets them finish within the grace period.
	runsCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()

	// Heartbeats go on until the runner has deregistered: during the shutdown grace it is still alive.
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeatLoop(hbCtx, time.Duration(reg.HeartbeatIntervalSeconds*float64(time.Second)))
	}()

	pollWait := time.Duration(reg.PollTimeoutSeconds * float64(time.Second))
	if pollWait <= 0 {
		pollWait = 30 * time.Second
	}
	retry := backoff.New(100*time.Millisecond, 5*time.Second)
	// When the last poll took as many runs as it asked for, more are likely waiting (backlog): a slot
	// that frees then waits a little for others (see below), up to the last such poll's round trip.
	refill := max(1, r.cfg.MaxConcurrent/4)
	backlog := false
	var lastPoll time.Duration
	var gather *time.Timer
	for ctx.Err() == nil {
		select {
		case <-r.reRegister:
			r.log.Warn("coordinator does not know this runner; registering again", "runner_id", r.ID())
			r.abandonAll()
			if _, err := r.register(ctx); err != nil {
				continue
			}
		default:
		}
		// While the coordinator is unreachable, a heartbeat probes it: a poll that reaches it is held
		// there, so its answer would say the coordinator is back only a poll's wait later.
		if r.link.isDown() {
			if err := r.co.Heartbeat(ctx, r.ID()); ctx.Err() == nil && r.link.result("heartbeat", err) {
				retry.Sleep(ctx)
				continue
			}
		}
		r.mu.Lock()
		free := r.cfg.MaxConcurrent - r.slotsInUse()
		if free > 0 && (!backlog || free >= refill) {
			gather = nil
		} else {
			// A full runner takes stops through the stop watch, and polls for runs once a slot frees.
			// While a backlog waits, one claim for a few slots costs the coordinator about what one for a
			// single slot does: the first slot to free waits for refill slots, or for the time the last
			// poll took, whichever comes first.
			var deadline <-chan time.Time
			if free > 0 {
				if gather == nil {
					gather = time.NewTimer(lastPoll)
				}
				deadline = gather.C
			}
			r.watchStops(ctx, pollWait)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-r.wake:
				continue
			case <-deadline:
			}
			r.mu.Lock()
			free = r.cfg.MaxConcurrent - r.slotsInUse()
			gather = nil
			if free == 0 || ctx.Err() != nil {
				r.mu.Unlock()
				continue
			}
		}
		pollCtx, cancel := context.WithCancel(ctx)
		r.cancelPoll = cancel
		r.pollingRuns = true
		id, gen := r.runnerID, r.gen
		r.mu.Unlock()

		began := time.Now()
		work, err := r.co.PollWork(pollCtx, orchestrator.PollParams{RunnerID: id, Wait: pollWait, Max: free})
		cancelled := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()
		r.mu.Lock()
		r.pollingRuns = false
		r.mu.Unlock()
		backlog = err == nil && work != nil && len(work.Runs) == free
		if backlog {
			lastPoll = min(time.Since(began), maxGather) // it found runs at once: a round trip
		}
		switch {
		case err == nil:
			r.link.result("poll", nil)
			retry.Reset()
		case ctx.Err() != nil:
		case cancelled:
			continue // the runner must register again: the loop's next turn does it
		case mustRegisterAgain(err):
			r.mu.Lock()
			stale := gen != r.gen
			r.mu.Unlock()
			if stale {
				continue // the runner registered again since this poll was sent
			}
			r.log.Warn("coordinator does not know this runner; registering again", "runner_id", id, "err", err)
			r.abandonAll()
			if errors.Is(err, orchestrator.ErrUnauthorized) {
				retry.Sleep(ctx) // should a fresh credential be refused too, do not spin
			}
			_, _ = r.register(ctx)
			continue
		default:
			if !r.link.result("poll", err) {
				r.log.Warn("poll failed", "err", err)
			}
			retry.Sleep(ctx)
			continue
		}
		if work == nil {
			continue
		}
		for _, sid := range work.Stop {
			r.stop(sid, "stopped")
		}
		for _, asg := range work.Runs {
			r.start(runsCtx, asg)
		}
	}
	r.watchDone.Wait()
	r.shutdown()
	stopHB()
	<-hbDone
	return nil
}

// watchStops starts the stop watch unless it runs already; r.mu is held. The stop watch long-polls for
// stops alone (Max 0) while the loop does not poll for runs (the runner is full, or waits for more slots
// to free), and ends after a poll that finds the loop polling again.
//
// It is a poll of its own rather than the loop's, so that a slot that frees does not cancel it. A runner
// under load fills and frees its slots many times a second: a cancelled poll would cost the coordinator
// a look at the store for nothing each time, and over HTTP/1.1 its connection, which the client closes to
// cancel a request in flight. A watch poll outlives the runner's next poll for runs instead: for up to a
// poll's wait both are open, and each brings the stops it finds.
func (r *Runner) watchStops(ctx context.Context, pollWait time.Duration) {
	if r.watchingStops {
		return
	}
	r.watchingStops = true
	r.watchDone.Add(1)
	go func() {
		defer r.watchDone.Done()
		retry := backoff.New(100*time.Millisecond, 5*time.Second)
		for {
			r.mu.Lock()
			if ctx.Err() != nil || r.pollingRuns {
				r.watchingStops = false
				r.mu.Unlock()
				return
			}
			id, gen := r.runnerID, r.gen
			r.mu.Unlock()
			work, err := r.co.PollWork(ctx, orchestrator.PollParams{RunnerID: id, Wait: pollWait})
			switch {
			case err == nil:
				r.link.result("poll", nil)
				retry.Reset()
				for _, sid := range work.Stop {
					r.stop(sid, "stopped")
				}
			case ctx.Err() != nil:
			case mustRegisterAgain(err):
				// The loop registers again; until then this runner's polls are refused.
				r.mu.Lock()
				r.registerAgain(gen)
				r.watchingStops = false
				r.mu.Unlock()
				return
			default:
				if !r.link.result("poll", err) {
					r.log.Warn("poll for stops failed", "err", err)
				}
				retry.Sleep(ctx)
			}
		}
	}()
}

// wakeLoop wakes the loop if it waits for a free slot; r.mu is held.
func (r *Runner) wakeLoop() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// maxGather bounds how long a free slot waits for others before the runner polls for runs.
const maxGather = 5 * time.Millisecond
