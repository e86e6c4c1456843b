package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/backoff"
	"github.com/agentorchestrator/orchestrator/internal/batch"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// sendReport delivers one final report. When the coordinator is a [orchestrator.BatchReporter], the
// reports that become ready together reach it in one ReportRuns call (see [Config].MaxReportBatch): a
// runner with many short runs then sends one report request per round trip instead of one per run, and
// its coordinator commits them in one transaction.
func (r *Runner) sendReport(ctx context.Context, rep orchestrator.RunReport) error {
	if r.reports == nil {
		return r.co.ReportRun(ctx, rep)
	}
	return r.reports.Do(ctx, rep)
}

// newReportQueue returns the queue of final reports, or nil when reports go one by one. The goroutine
// that sends is counted in r.wg, so Run's shutdown, waiting on r.wg, also waits for the reports queued;
// reports come from runs' goroutines, which r.wg counts too, so its count is never zero when the sender
// is added.
func (r *Runner) newReportQueue() *batch.Queue[orchestrator.RunReport] {
	br, ok := r.co.(orchestrator.BatchReporter)
	if !ok || r.cfg.MaxReportBatch <= 1 {
		return nil
	}
	return batch.New(r.cfg.MaxReportBatch, &r.wg, func(reps []orchestrator.RunReport) []error {
		// Each caller bounds its own wait; a call bounds itself too (the HTTP client's timeout), and this
		// bound keeps a hung in-process store from holding the sender for ever.
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReportTimeout)
		defer cancel()
		if len(reps) == 1 {
			return []error{r.co.ReportRun(ctx, reps[0])}
		}
		return br.ReportRuns(ctx, reps)
	})
}

// report delivers a run's final report, retrying transient failures for up to ReportTimeout: a
// coordinator that restarts meanwhile still gets the result. A report the coordinator refuses as too
// large or invalid is replaced by a small one without the result, whose error says why: the run then ends
// at once, failed (or stopped), instead of staying running with its result lost.
func (r *Runner) report(ctx context.Context, log *slog.Logger, rep orchestrator.RunReport) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReportTimeout)
	defer cancel()
	retry := backoff.New(100*time.Millisecond, 5*time.Second)
	replaced := false
	for {
		err := r.sendReport(ctx, rep)
		switch {
		case err == nil:
			log.Debug("run reported", "status", rep.Status)
			return
		case (errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge)) && !replaced:
			log.Error("the coordinator refused the run's report; reporting the run without its result", "status", rep.Status, "err", err)
			replaced = true
			status := orchestrator.RunFailed
			if rep.Status == orchestrator.RunStopped {
				status = orchestrator.RunStopped
			}
			rep = orchestrator.RunReport{RunnerID: rep.RunnerID, RunID: rep.RunID, Status: status,
				Error: jsonsize.CutString(fmt.Sprintf("the coordinator refused the run's %s report (%v); its result is lost", rep.Status, err), maxReportError)}
			continue
		case errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) || errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge):
			log.Warn("run report refused", "status", rep.Status, "err", err)
			return
		case ctx.Err() != nil:
			log.Error("gave up reporting the run", "status", rep.Status, "err", err)
			return
		}
		if !r.link.result("report", err) {
			log.Warn("run report failed; retrying", "err", err)
		}
		retry.Sleep(ctx)
	}
}
