package scaleout

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit/endcount"
	"github.com/agentorchestrator/orchestrator/prommetrics"
)

// benchRunnerTracer is the runner's tracer provider in benchPath (nil: the global one, which records
// nothing).
var benchRunnerTracer trace.TracerProvider

// discardSpans is a span exporter that drops what it is given: tracing's cost in the process — spans
// created, their context stored and passed on, batched for export — without a collector's.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkHTTPPathTelemetry is BenchmarkHTTPPath on SQLite four ways: without telemetry (off), with
// Prometheus metrics (prommetrics, scraped by nobody: the cost is the counting), with every run traced
// (an SDK tracer provider sampling every trace into a batch span processor, the coordinator's and the
// runner's), and with both. BENCHMARKS.md compares their runs/s as ratios to off, measured in the same
// invocation:
//
//	go test -run '^$' -bench HTTPPathTelemetry -benchtime 5000x -count 5 ./e2e/scaleout/
func BenchmarkHTTPPathTelemetry(b *testing.B) {
	for _, v := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"both", true, true}} {
		b.Run(v.name, func(b *testing.B) {
			store := openStore(b, filepath.Join(b.TempDir(), "bench.db"))
			ends := &endcount.Counter{}
			cfg := coordinator.Config{Store: store, Metrics: ends}
			var hcfg httpapi.Config
			var m *prommetrics.Metrics
			if v.metrics {
				m = prommetrics.New()
				ends.Inner, hcfg.Metrics = m, m.Handler()
			}
			benchRunnerTracer = nil
			if v.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
				b.Cleanup(func() { tp.Shutdown(context.Background()) })
				cfg.TracerProvider, benchRunnerTracer = tp, tp
			}
			b.Cleanup(func() { benchRunnerTracer = nil })
			coord, err := coordinator.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			watchEnds(coord, ends)
			if m != nil {
				m.WatchCoordinator(coord)
			}
			if err := coord.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(coord.Stop)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- httpapi.Serve(ctx, ln, httpapi.NewHandler(coord, hcfg), time.Second, nil) }()
			b.Cleanup(func() { cancel(); <-served })
			url := "http://" + ln.Addr().String()
			runnerClient, err := httpapi.NewClient(url, httpapi.ClientConfig{})
			if err != nil {
				b.Fatal(err)
			}
			producerClient, err := httpapi.NewClient(url, httpapi.ClientConfig{})
			if err != nil {
				b.Fatal(err)
			}
			benchPath(b, false, runnerClient, producerClient, coord)
		})
	}
}
