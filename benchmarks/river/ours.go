package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/internal/testkit/endcount"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// oursRun measures the orchestrator's embedded path as e2e/scaleout's BenchmarkEmbeddedPath does: a
// coordinator on a sqlstore, a runner in the same process executing a Go function that does nothing (in
// the spawn shape, the deterministic executor running /bin/true),
// n runs created by the shape's producers (StartRun per run, or StartRuns of shape.batch runs), timed
// from the first creation to the last run recorded as completed.
//
// Ends are counted as River's side counts its jobs: in memory, from a notification sent after the store
// committed them (the coordinator's Metrics hook, as River's job_completed subscription), rather than by
// reading each session back, which would add a query per run to one side only. The count of completed
// runs in the store is checked once the clock has stopped.
func oursRun(ctx context.Context, backend backend, shape shape, n int, dir string) (float64, error) {
	dsn := filepath.Join(dir, "ours.db")
	if backend.name == "PostgreSQL" {
		var drop func()
		var err error
		dsn, drop, err = freshSchema(ctx, backend.dsn, "ours")
		if err != nil {
			return 0, err
		}
		defer drop()
	}
	store, err := sqlstore.New(ctx, dsn, nil)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	ended := &endcount.Counter{}
	allEnded := ended.Arm(n)
	coord, err := coordinator.New(coordinator.Config{Store: store, Notifier: store.Notifier(), Metrics: ended})
	if err != nil {
		return 0, err
	}
	if err := coord.Start(ctx); err != nil {
		return 0, err
	}
	defer coord.Stop()

	funcs := gofunc.New(gofunc.NewRawTask("noop", "does nothing",
		json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`), nil,
		func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }))
	rcfg := runner.Config{Coordinator: coord, Executor: funcs, Blueprints: funcs.Blueprints(), MaxConcurrent: shape.workers}
	agent := "noop"
	if shape.spawn {
		agent = "true"
		rcfg.Executor = deterministic.New(deterministic.Config{})
		rcfg.Blueprints = []*orchestrator.Blueprint{{Name: agent, Type: orchestrator.AgentTypeDeterministic, Command: "/bin/true",
			ParametersSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`)}}
		rcfg.ProjectDir = dir
	}
	worker, err := runner.New(rcfg)
	if err != nil {
		return 0, err
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- worker.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	<-worker.Registered()

	params := func(i int) orchestrator.StartRunParams {
		return orchestrator.StartRunParams{AgentName: agent, Parameters: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	ids := make([]string, n)
	began := time.Now()
	errs := make(chan error, shape.producers)
	var wg sync.WaitGroup
	for p := range shape.producers {
		wg.Go(func() {
			if shape.batch <= 1 {
				for i := p; i < n; i += shape.producers {
					res, err := coord.StartRun(ctx, params(i))
					if err != nil {
						errs <- err
						return
					}
					ids[i] = res.SessionID
				}
				return
			}
			batch := make([]orchestrator.StartRunParams, 0, shape.batch)
			for start := p * shape.batch; start < n; start += shape.producers * shape.batch {
				batch = batch[:0]
				for i := start; i < min(start+shape.batch, n); i++ {
					batch = append(batch, params(i))
				}
				res, err := startBatch(ctx, coord, batch)
				if err != nil {
					errs <- err
					return
				}
				for k, r := range res {
					ids[start+k] = r.SessionID
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	select {
	case <-allEnded:
	case <-time.After(10 * time.Minute):
		count, _ := ended.Counted()
		return 0, fmt.Errorf("ours: %d of %d runs ended after 10 minutes", count, n)
	}
	took := time.Since(began)
	if _, failed := ended.Counted(); failed > 0 {
		return 0, fmt.Errorf("ours: %d runs did not complete", failed)
	}
	completed, err := store.CountRuns(ctx, orchestrator.RunCompleted)
	if err != nil {
		return 0, err
	}
	if completed != n {
		return 0, fmt.Errorf("ours: %d of %d runs completed in the store", completed, n)
	}
	for _, id := range ids {
		if id == "" {
			return 0, fmt.Errorf("ours: a creation returned no session id")
		}
	}
	return float64(n) / took.Seconds(), nil
}
