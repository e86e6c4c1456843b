package runner

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// start begins executing asg unless this runner already executes it (a redelivered run).
func (r *Runner) start(runsCtx context.Context, asg *orchestrator.Assignment) {
	ctx, cancel := context.WithCancel(runsCtx)
	ar := &activeRun{asg: asg, cancel: cancel}
	r.mu.Lock()
	_, dup := r.active[asg.Run.ID]
	_, done := r.recent[asg.Run.ID]
	if dup || done {
		r.mu.Unlock()
		cancel()
		return
	}
	r.active[asg.Run.ID] = ar
	r.slotsBusy()
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer r.finished(asg.Run.ID)
		r.execute(ctx, ar)
	}()
}

// slotsInUse is how many slots the active runs hold: those executing, and those waiting on their report
// beyond MaxPendingReports. r.mu is held.
func (r *Runner) slotsInUse() int {
	return len(r.active) - min(r.reporting, r.cfg.MaxPendingReports)
}

// slotsBusy reports to the metrics, if any, how many runs execute now: those claimed and not yet ended,
// less those whose execution ended and whose report is on its way (they hold no process). r.mu is held.
func (r *Runner) slotsBusy() {
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.SlotsBusy(len(r.active) - r.reporting)
	}
}

// executed records that a run's executor returned: the run waits on its final report, and its slot is
// free unless MaxPendingReports runs wait already.
func (r *Runner) executed(ar *activeRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ar.reporting = true
	r.reporting++
	r.slotsBusy()
	if r.reporting <= r.cfg.MaxPendingReports {
		r.wakeLoop() // a slot is free: poll for runs
	}
}

func (r *Runner) finished(runID string) {
	r.mu.Lock()
	if ar := r.active[runID]; ar != nil && ar.reporting {
		r.reporting--
	}
	delete(r.active, runID)
	r.slotsBusy()
	now := time.Now()
	r.recent[runID] = now
	r.recentOrder = append(r.recentOrder, runID)
	for len(r.recentOrder) > 0 && now.Sub(r.recent[r.recentOrder[0]]) > recentFor {
		delete(r.recent, r.recentOrder[0])
		r.recentOrder = r.recentOrder[1:]
	}
	r.wakeLoop() // a slot is free: poll for runs
	r.mu.Unlock()
}

// recentFor is how long a finished run is remembered. A stale redelivery is a poll answer built before the
// run's end was committed, so it arrives within a poll's round trip; a minute is ample.
const recentFor = time.Minute

// stop ends the execution of a session's run; why becomes the reported reason.
func (r *Runner) stop(sessionID, why string) {
	r.mu.Lock()
	var list []*activeRun
	for _, ar := range r.active {
		if ar.asg.Run.SessionID == sessionID {
			if ar.why == "" {
				ar.why = why
			}
			list = append(list, ar)
		}
	}
	r.mu.Unlock()
	for _, ar := range list {
		ar.cancel()
	}
}

// abandonAll stops every execution without reporting it: a coordinator that forgot this runner has
// already failed its runs ("Runner disconnected during execution").
func (r *Runner) abandonAll() {
	r.mu.Lock()
	list := make([]*activeRun, 0, len(r.active))
	for _, ar := range r.active {
		ar.abandoned = true
		list = append(list, ar)
	}
	r.mu.Unlock()
	for _, ar := range list {
		ar.cancel()
	}
}

func (r *Runner) shutdown() {
	r.mu.Lock()
	n := len(r.active)
	r.mu.Unlock()
	if n > 0 {
		r.log.Info("shutting down; waiting for runs in progress", "runs", n, "grace", r.cfg.ShutdownGrace)
		done := make(chan struct{})
		go func() { r.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(r.cfg.ShutdownGrace):
			r.mu.Lock()
			for _, ar := range r.active {
				if ar.why == "" {
					ar.why = "runner shut down"
				}
				ar.cancel()
			}
			r.mu.Unlock()
			<-done
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.co.DeregisterRunner(ctx, r.ID()); err != nil {
		r.log.Warn("deregistration failed", "err", err)
		return
	}
	r.log.Info("deregistered", "runner_id", r.ID())
}
