package benchmarks

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// system is a coordinator serving HTTP on loopback over a SQLite file, as examples/coordinator runs it,
// or over a PostgreSQL schema of its own with BENCH_STORE=postgres (and ORCHESTRATOR_TEST_POSTGRES_URL).
type system struct {
	coord *coordinator.Coordinator
	store *sqlstore.Store
	url   string
}

func startCoordinator(tb testing.TB, cfg coordinator.Config) *system {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dsn := filepath.Join(tb.TempDir(), "bench.db")
	if os.Getenv("BENCH_STORE") == "postgres" {
		dsn = pgtest.Schema(tb, pgtest.Require(tb), "bench")
	}
	st, err := sqlstore.New(ctx, dsn, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Store = st
	coord, err := coordinator.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- httpapi.Serve(ctx, ln, httpapi.NewHandler(coord, httpapi.Config{}), time.Second, nil)
	}()
	tb.Cleanup(func() {
		cancel()
		<-served
		coord.Stop()
		st.Close()
	})
	return &system{coord: coord, store: st, url: "http://" + ln.Addr().String()}
}

func client(tb testing.TB, url string) *httpapi.Client {
	tb.Helper()
	c, err := httpapi.NewClient(url, httpapi.ClientConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// startRunner runs an in-process runner that talks to the coordinator over HTTP, with the deterministic
// executor and a gateway, as examples/runner does.
func startRunner(tb testing.TB, url string, maxConc int, blueprints ...*orchestrator.Blueprint) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := client(tb, url)
	gw := gateway.New(c, gateway.Config{})
	r, err := runner.New(runner.Config{
		Coordinator: c, Executor: deterministic.New(deterministic.Config{StopGrace: time.Second}), Gateway: gw,
		Blueprints: blueprints, MaxConcurrent: maxConc, MaxPendingReports: envInt("BENCH_PENDING_REPORTS", 0), Hostname: "bench", ProjectDir: tb.TempDir(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
	})
	select {
	case <-r.Registered():
	case <-time.After(10 * time.Second):
		tb.Fatal("runner did not register")
	}
}

func blueprint(name, command string) *orchestrator.Blueprint {
	return &orchestrator.Blueprint{Name: name, Type: orchestrator.AgentTypeDeterministic, Command: command,
		ParametersSchema: json.RawMessage(`{"type":"object"}`)}
}

// percentile returns the p-th percentile (0..100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// envInt reads a positive integer from the environment, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cpuMeter measures the CPU the benchmark process and its reaped children use from its start.
type cpuMeter struct{ self, children syscall.Rusage }

func startCPU() *cpuMeter {
	var m cpuMeter
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &m.children)
	return &m
}

// report adds cpu-µs/run and child-cpu-µs/run to b's metrics, and returns them.
func (m *cpuMeter) report(b *testing.B) (selfPerRun, childrenPerRun float64) {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	used := func(a, b syscall.Rusage) float64 {
		return float64(b.Utime.Nano()+b.Stime.Nano()-a.Utime.Nano()-a.Stime.Nano()) / 1e3
	}
	n := float64(b.N)
	selfPerRun, childrenPerRun = used(m.self, self)/n, used(m.children, children)/n
	b.ReportMetric(selfPerRun, "cpu-µs/run")
	b.ReportMetric(childrenPerRun, "child-cpu-µs/run")
	return selfPerRun, childrenPerRun
}
