//go:build unix

package python

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/process"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// The example executor, run end to end: a coordinator on SQLite, a runner with the process executor and
// its gateway, and ao-echo-exec posting its events through the gateway.
func TestEchoExecutor(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	script, err := filepath.Abs("ao-echo-exec")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coord.Stop)
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "echo", Type: orchestrator.AgentTypeAgent, Description: "echoes its prompt"}); err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(coord, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	worker, err := runner.New(runner.Config{
		Coordinator: coord, Gateway: gw, ExecutorType: "process", ProjectDir: t.TempDir(), ShutdownGrace: time.Second,
		Executor: process.New(process.Config{Path: script, StopGrace: time.Second}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- worker.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-ran })
	select {
	case <-worker.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not register")
	}

	sync := func(p orchestrator.StartRunParams) *orchestrator.StartRunResult {
		t.Helper()
		p.AgentName, p.Mode, p.Wait = "echo", orchestrator.ModeSync, 30*time.Second
		res, err := coord.StartRun(ctx, p)
		if err != nil {
			t.Fatalf("StartRun(%+v): %v", p, err)
		}
		return res
	}

	first := sync(orchestrator.StartRunParams{Parameters: json.RawMessage(`{"prompt":"hello","lang":"en"}`)})
	sum := sha256.Sum256([]byte(first.SessionID))
	conversation := "echo-" + hex.EncodeToString(sum[:])[:16]
	if first.Status != orchestrator.SessionCompleted || first.Result == nil {
		t.Fatalf("first run = %+v, want completed with a result", first)
	}
	if want := "Echo: hello\nInputs: {\"lang\": \"en\"}"; first.Result.ResultText != want || first.Result.ResultType != "agent" {
		t.Errorf("result = %+v, want text %q", first.Result, want)
	}
	var data map[string]any
	_ = json.Unmarshal(first.Result.ResultData, &data)
	if want := map[string]any{"echo": "hello", "inputs": map[string]any{"lang": "en"}, "executor_session_id": conversation, "resumed_from": nil}; !reflect.DeepEqual(data, want) {
		t.Errorf("result_data = %v, want %v", data, want)
	}
	s, err := coord.GetSession(ctx, first.SessionID)
	if err != nil || s.ExecutorSessionID != conversation {
		t.Fatalf("session = %+v, %v; want executor_session_id %q", s, err, conversation)
	}
	evs, err := coord.ListEvents(ctx, first.SessionID, 0, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The stderr line travels through the runner, the other events through the gateway: their order is
	// not fixed.
	var types []string
	stderr := 0
	for _, ev := range evs {
		if ev.Type == orchestrator.EventStderr {
			stderr++
			continue
		}
		types = append(types, ev.Type)
	}
	if want := []string{"run_started", "executor_session", "message", "result", "run_ended"}; !reflect.DeepEqual(types, want) || stderr != 1 {
		t.Errorf("events = %q and %d stderr events, want %q and 1", types, stderr, want)
	}

	resumed := sync(orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: first.SessionID, Prompt: "again"})
	if want := "Echo (resumed " + conversation + "): again"; resumed.Status != orchestrator.SessionCompleted || resumed.Result == nil || resumed.Result.ResultText != want {
		t.Errorf("resumed run = %+v, want text %q", resumed, want)
	}

	failed := sync(orchestrator.StartRunParams{Prompt: "fail: disk full"})
	if failed.Status != orchestrator.SessionFailed || failed.Error != "ao-echo-exec: disk full" {
		t.Errorf("failing run = %+v, want failed with the stderr line as the error", failed)
	}
}
