package service

import (
	"context"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// StartTracing installs a global OpenTelemetry tracer provider that exports spans over OTLP/HTTP, when
// the environment asks for it as OpenTelemetry's conventions say: OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, and OTEL_TRACES_EXPORTER not "none". The exporter reads the
// other OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS); OTEL_SERVICE_NAME names the service,
// else service is used. Otherwise it installs nothing and tracing stays off: trace context still passes
// through, no span is recorded. The coordinator and the runner record into the global provider unless
// their configurations name another. The returned function flushes the spans still buffered and stops
// the exporter.
func StartTracing(ctx context.Context, service string, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" ||
		os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return off, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return off, err
	}
	res := resource.Default()
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", service)))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	log.Info("tracing", "exporter", "otlp/http", "service", res.String())
	return tp.Shutdown, nil
}
