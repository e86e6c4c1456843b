package coordinator_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// BenchmarkEmbeddedPath measures the embedded path end to end on SQLite (a WAL file, as in production):
// StartRun (validate, create session and run) → the runner's claim → a no-op Go function → the completion
// report (result, events, session end). Runs are created asynchronously by several goroutines while one
// runner executes them; the benchmark ends when every session has completed. runs/s is the figure that
// BENCHMARKS.md records. The load saturates the path, so the figure is its capacity: 64 producers, each
// waiting for its run's creation before the next, and 128 slots, each held until its run's end is
// recorded. Fewer of either bound the rate by those round trips instead (4 producers and 16 slots, the
// figures until 2026-11-25, gave about half).
func BenchmarkEmbeddedPath(b *testing.B) { embeddedPath(b, nil) }

// BenchmarkEmbeddedRetryPolicy measures what a retry policy costs a run that does not fail: the embedded
// path plain and with a policy on every start, in the same invocation (BENCHMARKS.md compares the two).
// A run's end reads nothing more for it: its brief carries the attempt and the allowance.
func BenchmarkEmbeddedRetryPolicy(b *testing.B) {
	b.Run("plain", func(b *testing.B) { embeddedPath(b, nil) })
	b.Run("retry", func(b *testing.B) {
		embeddedPath(b, &orchestrator.RetryPolicy{MaxAttempts: 3, InitialIntervalSeconds: 1, BackoffCoefficient: 2})
	})
}

// embeddedPath is BenchmarkEmbeddedPath with retry, when set, as every start's policy.
func embeddedPath(b *testing.B, retry *orchestrator.RetryPolicy) {
	ctx := context.Background()
	st, err := sqlstore.New(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	noop := gofunc.NewRawTask("noop", "does nothing", json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`), nil,
		func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		})
	funcs := gofunc.New(noop)
	worker, err := runner.New(runner.Config{
		Coordinator: coord, Executor: funcs, Blueprints: funcs.Blueprints(), MaxConcurrent: 128,
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stop(); <-done }()
	<-worker.Registered()

	const producers = 64
	ids := make([]string, b.N)
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < b.N; i += producers {
				res, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "noop", Parameters: json.RawMessage(`{"i":1}`), Retry: retry})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = res.SessionID
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		s, err := coord.WaitSession(ctx, id, time.Minute)
		if err != nil || s.Status != orchestrator.SessionCompleted {
			b.Fatalf("session %s: %v %v", id, s, err)
		}
	}
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
}
