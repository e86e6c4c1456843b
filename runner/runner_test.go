package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
)

// echoExecutor returns its parameters as result data, emits one event first, and blocks while the
// parameters ask it to ({"block": true}) until its context ends.
type echoExecutor struct {
	running atomic.Int32
	peak    atomic.Int32
}

func (e *echoExecutor) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	n := e.running.Add(1)
	defer e.running.Add(-1)
	for {
		p := e.peak.Load()
		if n <= p || e.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if err := events.Emit(ctx, orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "working"})); err != nil {
		return nil, err
	}
	var p struct {
		Block bool   `json:"block"`
		Fail  string `json:"fail"`
	}
	_ = json.Unmarshal(inv.Parameters, &p)
	if p.Block {
		<-ctx.Done()
		return &orchestrator.Result{ResultType: "deterministic", Error: "stopped"}, nil
	}
	if p.Fail != "" {
		return nil, errors.New(p.Fail)
	}
	if inv.Env[orchestrator.EnvSessionID] != inv.SessionID {
		return nil, errors.New("AGENT_SESSION_ID missing from the invocation env")
	}
	return &orchestrator.Result{ResultType: "deterministic", ResultText: string(inv.Parameters), ResultData: inv.Parameters}, nil
}

func echoBlueprint() *orchestrator.Blueprint {
	return &orchestrator.Blueprint{Name: "echo", Type: orchestrator.AgentTypeDeterministic, Command: "echo",
		ParametersSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"block":{"type":"boolean"},"fail":{"type":"string"}}}`)}
}

func startRunner(t *testing.T, c orchestrator.Coordinator, ex orchestrator.Executor, maxConc int) (*runner.Runner, context.CancelFunc, <-chan error) {
	t.Helper()
	r, err := runner.New(runner.Config{
		Coordinator: c, Executor: ex, Blueprints: []*orchestrator.Blueprint{echoBlueprint()},
		Hostname: "test-host", ProjectDir: t.TempDir(), MaxConcurrent: maxConc, ShutdownGrace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- r.Run(ctx); close(exited) }()
	select {
	case <-r.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("runner did not register")
	}
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	return r, cancel, done
}

func TestRunnerExecutesAndReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	ex := &echoExecutor{}
	startRunner(t, c, ex, 2)

	res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"n":7}`), Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != orchestrator.SessionCompleted || res.Result == nil || string(res.Result.ResultData) != `{"n":7}` {
		t.Fatalf("sync run = %+v (result %+v), want completed with result_data {\"n\":7}", res, res.Result)
	}
	res, err = c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"fail":"boom"}`), Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != orchestrator.SessionFailed || res.Error != "boom" {
		t.Fatalf("failing run = %+v, want failed with error boom", res)
	}

	// Concurrency stays within the limit.
	var ids []string
	for range 6 {
		r, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Parameters: json.RawMessage(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SessionID)
	}
	for _, id := range ids {
		s, err := c.WaitSession(ctx, id, 10*time.Second)
		if err != nil || s.Status != orchestrator.SessionCompleted {
			t.Fatalf("session %s: %+v %v", id, s, err)
		}
	}
	if p := ex.peak.Load(); p > 2 {
		t.Errorf("peak concurrency %d, limit 2", p)
	}
}

func TestRunnerStopAndShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	ex := &echoExecutor{}
	r, cancel, done := startRunner(t, c, ex, 1)

	// Stop reaches a run in progress even though the runner's only slot is taken.
	blocked, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Parameters: json.RawMessage(`{"block":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, blocked.SessionID, orchestrator.SessionRunning)
	if _, err := c.StopSession(ctx, blocked.SessionID); err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, c, blocked.SessionID, orchestrator.SessionStopped)
	if s.Error != "stopped" {
		t.Errorf("stopped session error = %q", s.Error)
	}

	// Shutdown: a run in progress past the grace period is stopped, then the runner deregisters.
	again, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo", Parameters: json.RawMessage(`{"block":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, again.SessionID, orchestrator.SessionRunning)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("runner did not shut down")
	}
	s = waitStatus(t, c, again.SessionID, orchestrator.SessionStopped)
	if s.Error != "runner shut down" {
		t.Errorf("session stopped by shutdown has error %q", s.Error)
	}
	agents, _ := c.ListAgents(ctx, orchestrator.ListAgentsParams{})
	if len(agents) != 0 {
		t.Errorf("blueprints still listed after deregistration: %+v", agents)
	}
	runners, _ := c.ListRunners(ctx)
	if len(runners) != 1 || runners[0].ID != r.ID() || runners[0].Status != orchestrator.RunnerOffline {
		t.Errorf("runners after shutdown = %+v, want %s offline", runners, r.ID())
	}
}

func waitStatus(t *testing.T, c orchestrator.Coordinator, id string, want orchestrator.SessionStatus) *orchestrator.Session {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := c.WaitSession(context.Background(), id, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == want {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s status %s, want %s", id, s.Status, want)
		}
	}
}
