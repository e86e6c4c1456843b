// Package traces carries W3C trace context (traceparent) through the coordinator, the runner, the HTTP
// API and the executed processes. It uses OpenTelemetry's API only, which does nothing until a program
// installs a tracer provider: without one, trace context still passes through — a traceparent a client
// sent reaches the runs it causes — but no span is recorded.
package traces

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Env is the environment variable an executed process finds its run's trace context in (the W3C
// traceparent of the run's execute span), as OpenTelemetry's environment-carrier convention names it.
const Env = "TRACEPARENT"

// Header is the W3C trace context header.
const Header = "traceparent"

// prop is W3C trace context whatever the global propagator is: the wire contract names traceparent.
var prop = propagation.TraceContext{}

// Tracer returns the tracer named name from tp, or from the global provider when tp is nil.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(name)
}

// FromHeader returns ctx with the remote span context of h's traceparent, if it has a valid one.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if h.Get(Header) == "" {
		return ctx
	}
	return prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// ToHeader sets h's traceparent (and tracestate) to ctx's span context, if it has a valid one.
func ToHeader(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Parent returns ctx with the remote span context traceparent names; ctx itself when it names none.
func Parent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return prop.Extract(ctx, propagation.MapCarrier{Header: traceparent})
}

// Format returns the traceparent of ctx's span context, "" when it has none.
func Format(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	prop.Inject(ctx, c)
	return c[Header]
}

// TraceID returns the trace id of ctx's span context as 32 hex digits, "" when it has none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
