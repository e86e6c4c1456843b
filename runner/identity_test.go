package runner_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
)

// TestRunnerWaitsForItsIdentity: a Runner whose identity another process holds keeps trying, with one
// warning however many attempts, while that one is online and while it is stale, and registers once the
// other one is offline.
func TestRunnerWaitsForItsIdentity(t *testing.T) {
	t.Parallel()
	// In a synctest bubble the runner's backoff between attempts takes no time.
	synctest.Test(t, func(t *testing.T) {
		st := newStore(t)
		c := newCoordinator(t, coordinator.Config{Store: st})
		dir := t.TempDir()
		// The previous incarnation: registered, live, and not this Runner.
		prev, err := c.RegisterRunner(context.Background(), &orchestrator.RunnerRegistration{
			Hostname: "test-host", ProjectDir: dir, ExecutorType: "deterministic", ExecutorProfile: "deterministic",
			Blueprints: []*orchestrator.Blueprint{echoBlueprint()},
		})
		if err != nil {
			t.Fatal(err)
		}
		var logs lockedBuffer
		r, err := runner.New(runner.Config{
			Coordinator: c, Executor: &echoExecutor{}, Blueprints: []*orchestrator.Blueprint{echoBlueprint()},
			Hostname: "test-host", ProjectDir: dir, ShutdownGrace: time.Second,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })

		logs.waitFor(t, "runner identity still in use", 2, 30*time.Second) // it retried its registration
		select {
		case <-r.Registered():
			t.Fatal("the runner registered over a live runner")
		default:
		}
		if _, err := st.UpdateRunnerStatus(context.Background(), prev.RunnerID, nil, orchestrator.RunnerStale, time.Time{}); err != nil {
			t.Fatal(err)
		}
		// Stale is not offline: the identity is still the other one's. Two more attempts, at least one of
		// them begun after the change, are refused.
		logs.waitFor(t, "runner identity still in use", strings.Count(logs.String(), "runner identity still in use")+2, 30*time.Second)
		select {
		case <-r.Registered():
			t.Fatal("the runner registered over a stale runner")
		default:
		}
		if _, err := st.UpdateRunnerStatus(context.Background(), prev.RunnerID, nil, orchestrator.RunnerOffline, time.Time{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.Registered():
		case <-time.After(30 * time.Second):
			t.Fatalf("the runner did not register once the previous incarnation was offline; logs:\n%s", logs.String())
		}
		if n := strings.Count(logs.String(), "another runner that is not offline holds this runner's identity"); n != 1 {
			t.Errorf("%d warnings about the identity in use, want 1; logs:\n%s", n, logs.String())
		}
		if r.ID() != prev.RunnerID {
			t.Errorf("runner id %s, want %s", r.ID(), prev.RunnerID)
		}
		res, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
			Parameters: json.RawMessage(`{"n":1}`), Wait: 10 * time.Second})
		if err != nil || res.Status != orchestrator.SessionCompleted {
			t.Fatalf("a run on the runner = %+v, %v; want completed", res, err)
		}
	})
}
