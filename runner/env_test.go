package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// envSpoofer hands the runner its work with a metadata.env the blueprint does not allow, as a coordinator
// that does not check (or was bypassed) would.
type envSpoofer struct{ *coordinator.Coordinator }

func (s envSpoofer) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	w, err := s.Coordinator.PollWork(ctx, p)
	if w != nil {
		for _, a := range w.Runs {
			a.Run.Metadata = json.RawMessage(`{"env":{"LD_PRELOAD":"/tmp/evil.so"}}`)
		}
	}
	return w, err
}

// The runner checks a run's environment again against its own blueprint: the executor never sees a run
// that breaks the rule, and the run fails saying why.
func TestRunnerRefusesEnvItsBlueprintDoesNotAllow(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	ex := &echoExecutor{}
	startRunner(t, envSpoofer{c}, ex, 1)
	res, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"n":1}`), Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != orchestrator.SessionFailed || !strings.Contains(res.Error, "LD_PRELOAD may not be set") {
		t.Fatalf("run = %s %q, want failed naming LD_PRELOAD", res.Status, res.Error)
	}
	if p := ex.peak.Load(); p != 0 {
		t.Errorf("the executor ran %d time(s), want never", p)
	}
}
