package coordinator

import (
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// maxLoggedError bounds the error a run's log line quotes; the session keeps all of it.
const maxLoggedError = 300

// logRunStarted writes the one INFO line of a run handed to a runner.
func (c *Coordinator) logRunStarted(run *orchestrator.Run, runnerID string) {
	c.log.Info("run started", "agent", run.AgentName, "session_id", run.SessionID, "run_id", run.ID,
		"runner_id", runnerID, "type", run.Type)
}

// logRunEnded writes the one INFO line of a run that ended, however it ended (its runner's report, a stop,
// its runner gone, no runner for it). The duration runs from the run's creation, queueing included.
func (c *Coordinator) logRunEnded(e runEnd) {
	attrs := []any{"agent", e.run.AgentName, "session_id", e.run.SessionID, "run_id", e.run.ID,
		"runner_id", e.run.RunnerID, "outcome", e.status}
	if created, ok := ids.Time(e.run.ID); ok {
		attrs = append(attrs, "duration", time.Since(created).Round(time.Millisecond))
	}
	if e.err != "" {
		attrs = append(attrs, "error", jsonsize.CutString(e.err, maxLoggedError))
	}
	c.log.Info("run ended", attrs...)
}
