package runner

import (
	"context"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/batch"
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
