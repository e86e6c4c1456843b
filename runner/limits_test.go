package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
)

// outputExecutor returns a result with the given text, as a command printing it would.
type outputExecutor struct{ text string }

func (e outputExecutor) Execute(context.Context, *orchestrator.Invocation, orchestrator.EventSink) (*orchestrator.Result, error) {
	zero := 0
	return &orchestrator.Result{ResultType: "deterministic", ResultText: e.text, ExitCode: &zero}, nil
}

func startOutputRunner(t *testing.T, c runner.Coordinator, text string, maxResult int64) {
	t.Helper()
	startEchoRunner(t, runner.Config{Coordinator: c, Executor: outputExecutor{text}, MaxResultBytes: maxResult})
}

// startEchoRunner starts a runner announcing the echo blueprint, with cfg's coordinator, executor and
// settings, and waits until it has registered. It stops when the test ends.
func startEchoRunner(t *testing.T, cfg runner.Config) {
	t.Helper()
	cfg.Blueprints = []*orchestrator.Blueprint{echoBlueprint()}
	cfg.Hostname, cfg.ProjectDir, cfg.ShutdownGrace = "test-host", t.TempDir(), time.Second
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	go func() { _ = r.Run(ctx); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	select {
	case <-r.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("runner did not register")
	}
}

func syncEcho(t *testing.T, c orchestrator.Coordinator) *orchestrator.StartRunResult {
	t.Helper()
	res, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{}`), Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status.Ended() {
		t.Fatalf("sync run answered %s, want it ended", res.Status)
	}
	return res
}

func truncationEvent(t *testing.T, c *coordinator.Coordinator, sessionID string) map[string]any {
	t.Helper()
	events, err := c.ListEvents(context.Background(), sessionID, 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == orchestrator.EventOutputTruncated {
			var d map[string]any
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no output_truncated event among %d events", len(events))
	return nil
}

// A result over the coordinator's limit, once JSON-encoded, is cut to fit before the runner reports it:
// the run completes with what fits, says it was cut, and an event records the sizes.
func TestRunnerCutsResultToTheCoordinatorsLimit(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	c := newCoordinator(t, coordinator.Config{Limits: orchestrator.Limits{MaxResultBytes: limit}})
	// 40 KiB of control characters: under the limit as text, six times over it as JSON.
	startOutputRunner(t, c, strings.Repeat("\x01", 40<<10), 0)
	res := syncEcho(t, c)
	if res.Status != orchestrator.SessionCompleted || res.Result == nil || !res.Result.Truncated {
		t.Fatalf("run = %s %q, result %+v; want completed and truncated", res.Status, res.Error, res.Result)
	}
	b, _ := json.Marshal(res.Result)
	if len(b) > limit || len(res.Result.ResultText) < 8<<10 {
		t.Errorf("result is %d bytes as JSON with %d bytes of text; want at most %d, and most of it used", len(b), len(res.Result.ResultText), limit)
	}
	ev := truncationEvent(t, c, res.SessionID)
	if ev["by"] != "runner" || ev["limit_bytes"] != float64(limit) || ev["result_bytes"].(float64) <= limit || ev["kept_bytes"].(float64) > limit {
		t.Errorf("output_truncated event %v, want the runner's sizes", ev)
	}
}

// Config.MaxResultBytes lowers the limit below the coordinator's.
func TestRunnerMaxResultBytes(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	startOutputRunner(t, c, strings.Repeat("x", 100<<10), 10<<10)
	res := syncEcho(t, c)
	b, _ := json.Marshal(res.Result)
	if res.Status != orchestrator.SessionCompleted || !res.Result.Truncated || len(b) > 10<<10 {
		t.Fatalf("run = %s, result %d bytes as JSON, truncated %v; want completed, cut to 10 KiB", res.Status, len(b), res.Result.Truncated)
	}
}

// refusingCoordinator refuses every report that carries a result, as a coordinator whose limit the
// runner did not know would.
type refusingCoordinator struct{ *coordinator.Coordinator }

func (c refusingCoordinator) ReportRun(ctx context.Context, rep orchestrator.RunReport) error {
	if rep.Result != nil {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "body_too_large", "request body exceeds 1024 bytes")
	}
	return c.Coordinator.ReportRun(ctx, rep)
}

func (c refusingCoordinator) ReportRuns(ctx context.Context, reps []orchestrator.RunReport) []error {
	errs := make([]error, len(reps))
	for i, rep := range reps {
		errs[i] = c.ReportRun(ctx, rep)
	}
	return errs
}

// A final report the coordinator refuses anyway ends the run at once, failed, with an error that says
// the result was refused and why — not running for ever while the runner retries.
func TestRunnerReportsARefusedResultAsFailed(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	startOutputRunner(t, refusingCoordinator{c}, "some output", 0)
	res := syncEcho(t, c)
	if res.Status != orchestrator.SessionFailed || !strings.Contains(res.Error, "refused the run's completed report") ||
		!strings.Contains(res.Error, "request body exceeds 1024 bytes") || (res.Result != nil && res.Result.ResultText != "") {
		t.Fatalf("run = %s %q, result %+v; want failed, saying the result was refused and why", res.Status, res.Error, res.Result)
	}
}
