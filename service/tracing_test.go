package service

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
)

// TestStartTracing: off without OTEL_EXPORTER_OTLP_ENDPOINT; with it, spans reach the endpoint over
// OTLP/HTTP (POST /v1/traces) by the time the returned function has flushed them.
func TestStartTracing(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	before := otel.GetTracerProvider()
	stop, err := StartTracing(t.Context(), "test", log)
	if err != nil || otel.GetTracerProvider() != before {
		t.Fatalf("without an endpoint: err %v, provider replaced %v", err, otel.GetTracerProvider() != before)
	}
	stop(t.Context())

	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	stop, err = StartTracing(t.Context(), "test", log)
	if err != nil {
		t.Fatal(err)
	}
	defer otel.SetTracerProvider(before)
	_, span := otel.Tracer("test").Start(context.Background(), "a span")
	span.End()
	if err := stop(t.Context()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if posts.Load() == 0 {
		t.Error("the collector received no POST /v1/traces")
	}
}
