package orchestrator

import (
	"context"
	"fmt"
	"sync"
)

// reportQueue gathers the final reports of a runner's runs so that the ones that become ready together
// reach the coordinator in one [BatchReporter.ReportRuns] call. It adds no delay: a report that finds no
// call under way is sent at once, alone, and the reports that arrive while a call is under way go together
// in the next one. A runner with many short runs thus sends one report request per round trip instead of
// one per run, and its coordinator commits them in one transaction.
type reportQueue struct {
	mu      sync.Mutex
	pending []*queuedReport
	sending bool // a flusher goroutine is running
}

type queuedReport struct {
	rep  RunReport
	done chan error // buffered: the flusher never waits for a caller that gave up
}

// sendReport delivers one report, through the queue when the coordinator takes batches.
func (r *Runner) sendReport(ctx context.Context, rep RunReport) error {
	br, ok := r.co.(BatchReporter)
	if !ok || r.cfg.MaxReportBatch <= 1 {
		return r.co.ReportRun(ctx, rep)
	}
	q := &queuedReport{rep: rep, done: make(chan error, 1)}
	rq := &r.reports
	rq.mu.Lock()
	rq.pending = append(rq.pending, q)
	if !rq.sending {
		rq.sending = true
		// The caller is a run's goroutine, counted in r.wg, so the count cannot be zero here: Run's
		// shutdown, waiting on r.wg, also waits for the flusher.
		r.wg.Add(1)
		go r.flushReports(br)
	}
	rq.mu.Unlock()
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		// The report may still go out with a later batch; reports are idempotent.
		return ctx.Err()
	}
}

// flushReports sends what is queued, batch after batch, until the queue is empty.
func (r *Runner) flushReports(br BatchReporter) {
	defer r.wg.Done()
	rq := &r.reports
	for {
		rq.mu.Lock()
		n := min(len(rq.pending), r.cfg.MaxReportBatch)
		if n == 0 {
			rq.sending = false
			rq.pending = nil // let the backing array go
			rq.mu.Unlock()
			return
		}
		batch := rq.pending[:n:n]
		rq.pending = rq.pending[n:]
		rq.mu.Unlock()

		// Each caller bounds its own wait; a call bounds itself too (the HTTP client's timeout), and this
		// bound keeps a hung in-process store from holding the flusher for ever.
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReportTimeout)
		if n == 1 {
			batch[0].done <- r.co.ReportRun(ctx, batch[0].rep)
		} else {
			reps := make([]RunReport, n)
			for i, q := range batch {
				reps[i] = q.rep
			}
			errs := br.ReportRuns(ctx, reps)
			for i, q := range batch {
				var err error
				if i < len(errs) {
					err = errs[i]
				} else {
					err = fmt.Errorf("orchestrator: the coordinator answered %d of %d reports", len(errs), n)
				}
				q.done <- err
			}
		}
		cancel()
	}
}
