package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
	"github.com/agentorchestrator/orchestrator/internal/traces"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// execute performs one run, from its started report to its final one: it builds the invocation, opens the
// gateway, executes through the executor with a sink that records the run's events, fits the result to the
// coordinator's limit and reports the outcome.
func (r *Runner) execute(ctx context.Context, ar *activeRun) {
	asg, run := ar.asg, ar.asg.Run
	log := r.log.With("run_id", run.ID, "session_id", run.SessionID, "agent", run.AgentName)
	rid := r.ID()
	if run.TraceParent != "" {
		var span trace.Span
		ctx, span = r.tracer.Start(traces.Parent(ctx, run.TraceParent), "orchestrator.execute", trace.WithAttributes(
			attribute.String("orchestrator.agent", run.AgentName), attribute.String("orchestrator.run_id", run.ID),
			attribute.String("orchestrator.session_id", run.SessionID), attribute.String("orchestrator.runner_id", rid)))
		defer span.End()
	}
	begun := time.Now()
	r.log.Info("run started", "agent", run.AgentName, "session_id", run.SessionID, "run_id", run.ID, "runner_id", rid, "type", run.Type)
	// Reports and events outlive a stopped run's context: they must still reach the coordinator.
	bg := context.WithoutCancel(ctx)
	// The started report travels while the execution begins, so dispatch latency does not include a round
	// trip to the coordinator. The final report waits for it (so the coordinator sees started before
	// ended); a refusal — the run was stopped or is no longer this runner's — ends the execution unreported.
	// The started report goes out after StartedDelay, or as soon as the run shows activity (its first
	// events), whichever comes first; a run over before either is recorded by its final report alone.
	started, execDone, active := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(started)
		if d := r.cfg.StartedDelay; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-execDone:
				return
			case <-active:
			case <-t.C:
			}
		}
		err := r.co.ReportRun(bg, orchestrator.RunReport{RunnerID: rid, RunID: run.ID, Status: orchestrator.RunRunning})
		switch {
		case err == nil:
		case errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound):
			log.Info("run is no longer ours; ending its execution", "err", err)
			r.mu.Lock()
			ar.abandoned = true
			r.mu.Unlock()
			ar.cancel()
		default:
			log.Warn("could not report the run started; executing anyway", "err", err)
		}
	}()
	inv, err := r.invocation(asg)
	var res *orchestrator.Result
	if err == nil {
		// Set here, after the run's metadata.env: no client can name the trace a process reports to.
		if tp := traces.Format(ctx); tp != "" {
			inv.Env[traces.Env] = tp
		}
		var closeGW func()
		if r.cfg.Gateway != nil {
			var env map[string]string
			env, closeGW = r.cfg.Gateway.Open(asg)
			for k, v := range env {
				inv.Env[k] = v
			}
		}
		var activeOnce sync.Once
		events := &runEvents{r: r, sessionID: run.SessionID, log: log}
		sink := orchestrator.EventSinkFunc(func(_ context.Context, evs ...orchestrator.Event) error {
			// The session shows running before its first events are visible.
			activeOnce.Do(func() { close(active); <-started })
			return events.Emit(bg, evs...)
		})
		res, err = r.cfg.Executor.Execute(ctx, inv, sink)
		if closeGW != nil {
			closeGW()
		}
		events.reportDropped(bg) // what the coordinator did not store, if it has not been said yet
	}
	close(execDone)
	r.executed(ar)
	<-started
	r.mu.Lock()
	why, abandoned := ar.why, ar.abandoned
	r.mu.Unlock()
	if abandoned {
		logRunEnded(log, rid, begun, "abandoned", "the coordinator ended it or gave it to another runner")
		return
	}
	// A result the coordinator would refuse for its size is cut to fit, and the session says so.
	if fitted, info := fitResult(res, r.resultLimit()); info != nil {
		res = fitted
		log.Warn("result cut to the coordinator's limit", "limit_bytes", info["limit_bytes"], "result_bytes", info["result_bytes"], "kept_bytes", info["kept_bytes"])
		if _, err := r.co.AppendEvents(bg, run.SessionID, []orchestrator.Event{orchestrator.NewEvent(orchestrator.EventOutputTruncated, info)}); err != nil {
			log.Warn("could not record the output_truncated event", "err", err)
		}
	}
	rep := orchestrator.RunReport{RunnerID: rid, RunID: run.ID, Result: res}
	switch {
	case why != "":
		rep.Status, rep.Error = orchestrator.RunStopped, why
	case err != nil:
		rep.Status, rep.Error = orchestrator.RunFailed, err.Error()
	case res.Failed():
		rep.Status, rep.Error = orchestrator.RunFailed, res.Error
		if rep.Error == "" {
			rep.Error = fmt.Sprintf("exit code %d", *res.ExitCode)
		}
	default:
		rep.Status = orchestrator.RunCompleted
	}
	if len(rep.Error) > maxReportError {
		rep.Error = jsonsize.CutString(rep.Error, maxReportError) // the coordinator keeps no more
	}
	logRunEnded(log, rid, begun, string(rep.Status), rep.Error)
	r.report(bg, log, rep)
}

func (r *Runner) invocation(asg *orchestrator.Assignment) (*orchestrator.Invocation, error) {
	run := asg.Run
	b := asg.Blueprint
	if run.AgentType == orchestrator.AgentTypeDeterministic {
		// Execute only what this runner announced, whatever the coordinator sent.
		b = r.blue[asg.BlueprintName]
		if b == nil {
			return nil, fmt.Errorf("this runner has no blueprint %q", asg.BlueprintName)
		}
	}
	if b == nil {
		return nil, fmt.Errorf("the coordinator sent no blueprint for agent %q", run.AgentName)
	}
	// The coordinator checked the run's environment; a runner checks again, against the blueprint it
	// executes (its own, for a deterministic agent), so that a coordinator that does not check cannot
	// decide what its host runs.
	env, err := orchestrator.MetadataEnv(run.Metadata)
	if err != nil {
		return nil, err
	}
	if err := b.CheckRunEnv(env); err != nil {
		return nil, err
	}
	dir := run.ProjectDir
	if dir == "" {
		dir = r.cfg.ProjectDir
	}
	if run.TimeoutSeconds > 0 && run.TimeoutSeconds != b.TimeoutSeconds {
		// The session's timeout (its request's, else the blueprint's when the run was created) bounds the
		// execution, as the coordinator will.
		cp := *b
		cp.TimeoutSeconds = run.TimeoutSeconds
		b = &cp
	}
	return &orchestrator.Invocation{
		Mode:              run.Type,
		RunID:             run.ID,
		SessionID:         run.SessionID,
		AgentName:         run.AgentName,
		Blueprint:         b,
		Parameters:        run.Parameters,
		ProjectDir:        dir,
		OutputSchema:      run.OutputSchema,
		Metadata:          run.Metadata,
		ExecutorSessionID: asg.ExecutorSessionID,
		Attempt:           max(run.Attempt, 1),
		MaxBudgetUSD:      asg.MaxBudgetUSD,
		Env:               map[string]string{orchestrator.EnvSessionID: run.SessionID, orchestrator.EnvRunID: run.ID},
	}, nil
}
