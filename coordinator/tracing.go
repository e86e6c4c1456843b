package coordinator

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/traces"
)

// tracerName names the coordinator's spans' instrumentation scope.
const tracerName = "github.com/agentorchestrator/orchestrator/coordinator"

// Span names. A run's trace holds orchestrator.create_run (StartRun, or orchestrator.callback for a
// resume that delivers callbacks), orchestrator.claim (from its creation to its claim),
// orchestrator.execute (the runner's) and orchestrator.report (its end); the runs its process starts
// through the gateway hang below.
const (
	spanCreate   = "orchestrator.create_run"
	spanClaim    = "orchestrator.claim"
	spanReport   = "orchestrator.report"
	spanCallback = "orchestrator.callback"
)

// Span attributes.
const (
	attrAgent   = attribute.Key("orchestrator.agent")
	attrRun     = attribute.Key("orchestrator.run_id")
	attrSession = attribute.Key("orchestrator.session_id")
	attrStatus  = attribute.Key("orchestrator.status")
)

// endSpan ends span, recording err, and the run it created when there is one.
func endSpan(span trace.Span, run *orchestrator.Run, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if run != nil {
		span.SetAttributes(attrRun.String(run.ID), attrSession.String(run.SessionID))
	}
	span.End()
}

// traceClaim records a claimed run's time in the queue as its claim span, from its creation to now.
func (c *Coordinator) traceClaim(ctx context.Context, r *orchestrator.Run, runnerID string) {
	if r.TraceParent == "" {
		return // no trace to continue; the claim alone would be a trace of its own
	}
	_, span := c.tracer.Start(traces.Parent(ctx, r.TraceParent), spanClaim, trace.WithTimestamp(r.CreatedAt),
		trace.WithAttributes(attrAgent.String(r.AgentName), attrRun.String(r.ID), attrSession.String(r.SessionID),
			attribute.String("orchestrator.runner_id", runnerID)))
	span.End(trace.WithTimestamp(c.now()))
}
