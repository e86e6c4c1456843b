package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit/endcount"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// The benchmarks of BENCHMARKS.md's "SQLite and PostgreSQL side by side". Each runs b.N runs of a no-op Go
// function through one path and reports runs/s (wall clock, from the first StartRun to the last run's end,
// counted through the coordinator's Metrics hook); run them with a fixed count:
//
//	ORCHESTRATOR_TEST_POSTGRES_URL=… go test -run '^$' -bench . -benchtime 5000x ./e2e/scaleout/
//
// BENCH_PRODUCERS (default 64) sets the client goroutines creating runs, BENCH_CONCURRENCY (default 128)
// the runner's MaxConcurrent (BenchmarkEmbeddedBatch has its own defaults); BENCH_NOTIFIER=0 leaves the PostgreSQL coordinator without its Notifier (a
// lone coordinator needs none); BENCH_TOKENS=1 turns authentication on for BenchmarkHTTPPath. The
// PostgreSQL variants are skipped without ORCHESTRATOR_TEST_POSTGRES_URL.
//
// The defaults offer enough load to saturate the path, so runs/s is its capacity. With fewer producers
// (each waits for its run's creation before it creates the next) or fewer slots (each is held until its
// run's report is recorded) the figure is bound by those round trips instead: 8 producers and 32 slots,
// the defaults until 2026-11-25, gave about a third less on SQLite (BENCHMARKS.md has the sweep).

// benchStores are the stores compared: a SQLite WAL file, and a fresh PostgreSQL schema.
func benchStores() []struct {
	name string
	open func(b *testing.B) *sqlstore.Store
} {
	return []struct {
		name string
		open func(b *testing.B) *sqlstore.Store
	}{
		{"SQLite", func(b *testing.B) *sqlstore.Store {
			return openStore(b, filepath.Join(b.TempDir(), "bench.db"))
		}},
		{"Postgres", func(b *testing.B) *sqlstore.Store {
			return openStore(b, postgresSchema(b))
		}},
	}
}

func openStore(b *testing.B, dsn string) *sqlstore.Store {
	b.Helper()
	s, err := sqlstore.New(context.Background(), dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func perRun(ops map[string]int, n int) map[string]float64 {
	out := map[string]float64{}
	for op, c := range ops {
		out[op] = float64(int(float64(c)/float64(n)*100)) / 100
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func noopExecutor() *gofunc.Executor {
	return gofunc.New(gofunc.NewRawTask("noop", "does nothing",
		json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`), nil,
		func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}))
}

// BenchmarkEmbeddedPath is the root package's BenchmarkEmbeddedPath on both stores: StartRun → claim → a
// no-op Go function → completion report, all in-process (the runner calls the coordinator.Coordinator).
func BenchmarkEmbeddedPath(b *testing.B) {
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			coord := newBenchCoordinator(b, store)
			benchPath(b, false, coord, coord)
		})
	}
}

// BenchmarkEmbeddedPathIdempotent is BenchmarkEmbeddedPath with an idempotency key on every StartRun:
// what remembering the keys costs a run, to compare with BenchmarkEmbeddedPath in the same run.
func BenchmarkEmbeddedPathIdempotent(b *testing.B) {
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			coord := newBenchCoordinator(b, store)
			benchPath(b, true, coord, coord)
		})
	}
}

// BenchmarkEmbeddedBatch is BenchmarkEmbeddedPath with the runs created in batches: each producer calls
// StartRuns with BENCH_BATCH runs (default 1,000), and the runner takes BENCH_CONCURRENCY runs at once
// (default 1,000 here). BENCH_PRODUCERS defaults to 4.
func BenchmarkEmbeddedBatch(b *testing.B) {
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			coord := newBenchCoordinator(b, store)
			benchRuns(b, coord, coord, coord, benchShape{
				producers: envInt("BENCH_PRODUCERS", 4), concurrency: envInt("BENCH_CONCURRENCY", 1000), batch: envInt("BENCH_BATCH", 1000),
			})
		})
	}
}

// BenchmarkHTTPPath is the same work over HTTP on loopback: the coordinator's handler on a listener, a
// runner on an httpapi.Client (long polls, reports), and producers creating async runs through another
// httpapi.Client.
func BenchmarkHTTPPath(b *testing.B) {
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			coord := newBenchCoordinator(b, store)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			// BENCH_TOKENS=1 serves the API with authentication: every request is checked, the runner's
			// (after its registration) with its own credential.
			var hcfg httpapi.Config
			var runnerTok, clientTok string
			if os.Getenv("BENCH_TOKENS") == "1" {
				runnerTok, clientTok = "bench-runner-token", "bench-client-token"
				hcfg.Tokens = map[string]httpapi.Role{runnerTok: httpapi.RoleRunner, clientTok: httpapi.RoleClient}
			}
			served := make(chan error, 1)
			go func() {
				served <- httpapi.Serve(ctx, ln, httpapi.NewHandler(coord, hcfg), time.Second, nil)
			}()
			b.Cleanup(func() { cancel(); <-served })
			url := "http://" + ln.Addr().String()
			runnerClient, err := httpapi.NewClient(url, httpapi.ClientConfig{Token: runnerTok})
			if err != nil {
				b.Fatal(err)
			}
			producerClient, err := httpapi.NewClient(url, httpapi.ClientConfig{Token: clientTok})
			if err != nil {
				b.Fatal(err)
			}
			benchPath(b, false, runnerClient, producerClient, coord)
		})
	}
}

// queryCounter counts the statements that go through bun (the prepared ones — the claim, the inserts,
// the guarded updates and the event sequence update — bypass bun's hooks and are not counted).
type queryCounter struct {
	mu   sync.Mutex
	byOp map[string]int
}

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (q *queryCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q.mu.Lock()
	q.byOp[e.Operation()]++
	q.mu.Unlock()
}

func (q *queryCounter) reset() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.byOp
	q.byOp = map[string]int{}
	return out
}

var counters sync.Map // *bun.DB → *queryCounter

func newBenchCoordinator(b *testing.B, store *sqlstore.Store) *coordinator.Coordinator {
	b.Helper()
	if store.Notifier() != nil { // PostgreSQL only, as before: the hot statements bypass bun on both dialects
		qc := &queryCounter{byOp: map[string]int{}}
		// The store keeps and queries its own *bun.DB: WithQueryHook would return a copy it never uses.
		//lint:ignore SA1019 the hook must reach the store's own handle
		store.DB().AddQueryHook(qc)
		counters.Store(store.DB(), qc)
	}
	ends := &endcount.Counter{}
	cfg := coordinator.Config{Store: store, Metrics: ends}
	if os.Getenv("BENCH_NOTIFIER") != "0" {
		cfg.Notifier = store.Notifier() // nil on SQLite; on PostgreSQL what a replica runs with
	}
	coord, err := coordinator.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	watchEnds(coord, ends)
	if err := coord.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(coord.Stop)
	return coord
}

// endCounters holds the end counter of each benchmark coordinator (its Metrics), by coordinator.
var endCounters sync.Map // *coordinator.Coordinator → *endcount.Counter

// watchEnds records ends as coord's Metrics, so that benchRuns learns from it when its runs have ended.
func watchEnds(coord *coordinator.Coordinator, ends *endcount.Counter) {
	endCounters.Store(coord, ends)
}

// benchPath runs b.N runs: a runner on runnerSide executes them, producers create them through
// producerSide, and completion is watched on local (the in-process coordinator; default: producerSide).
// keyed gives each StartRun an idempotency key of its own.
func benchPath(b *testing.B, keyed bool, runnerSide, producerSide orchestrator.Coordinator, local ...*coordinator.Coordinator) {
	watch, _ := producerSide.(*coordinator.Coordinator)
	if len(local) > 0 {
		watch = local[0]
	}
	benchRuns(b, runnerSide, producerSide, watch, benchShape{
		producers: envInt("BENCH_PRODUCERS", 64), concurrency: envInt("BENCH_CONCURRENCY", 128), batch: 1, keyed: keyed,
	})
}

// benchShape is the load of a benchmark: producers creating runs, batch at a time (1: StartRun), and the
// runner's MaxConcurrent.
type benchShape struct {
	producers, concurrency, batch int
	keyed                         bool // each StartRun carries an idempotency key of its own
}

// benchRuns runs b.N runs in the given shape; completion is watched on watch.
func benchRuns(b *testing.B, runnerSide, producerSide orchestrator.Coordinator, watch *coordinator.Coordinator, shape benchShape) {
	ctx := context.Background()
	funcs := noopExecutor()
	worker, err := runner.New(runner.Config{
		Coordinator: runnerSide, Executor: funcs, Blueprints: funcs.Blueprints(),
		MaxConcurrent: shape.concurrency, TracerProvider: benchRunnerTracer,
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stop(); <-done }()
	<-worker.Registered()

	producers := shape.producers
	ids := make([]string, b.N)
	var qc *queryCounter
	if st, ok := watch.Store().(*sqlstore.Store); ok {
		if v, ok := counters.Load(st.DB()); ok {
			qc = v.(*queryCounter)
			qc.reset()
		}
	}
	v, ok := endCounters.Load(watch)
	if !ok {
		b.Fatal("the watched coordinator has no end counter (newBenchCoordinator, or watchEnds)")
	}
	ends := v.(*endcount.Counter)
	allEnded := ends.Arm(b.N)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	params := orchestrator.StartRunParams{AgentName: "noop", Parameters: json.RawMessage(`{"i":1}`)}
	for p := range producers {
		wg.Go(func() {
			if shape.batch > 1 {
				bs := producerSide.(orchestrator.BatchStarter)
				for start := p * shape.batch; start < b.N; start += producers * shape.batch {
					res, err := bs.StartRuns(ctx, slices.Repeat([]orchestrator.StartRunParams{params}, min(shape.batch, b.N-start)))
					if err != nil {
						b.Error(err)
						return
					}
					for k, r := range res {
						ids[start+k] = r.SessionID
					}
				}
				return
			}
			for i := p; i < b.N; i += producers {
				p := params
				if shape.keyed {
					p.IdempotencyKey = fmt.Sprintf("bench-%d-%d", began.UnixNano(), i)
				}
				res, err := producerSide.StartRun(ctx, p)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = res.SessionID
			}
		})
	}
	wg.Wait()
	// Done when every run has ended, as counted through the coordinator's Metrics hook (the way River's
	// benchmark counts its completion events). Waiting on each session instead read every session back
	// inside the measurement: on PostgreSQL a round trip per run, about a tenth of the process's CPU and
	// some of the database's, that the path under measurement does not make. Every session is checked
	// below, once the clock has stopped.
	select {
	case <-allEnded:
	case <-time.After(10 * time.Minute):
		n, _ := ends.Counted()
		b.Fatalf("%d of %d runs ended after 10 minutes", n, b.N)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
	if qc != nil {
		ops := qc.reset()
		total := 0
		for _, n := range ops {
			total += n
		}
		b.ReportMetric(float64(total)/float64(b.N), "bun-queries/run")
		if b.N >= 100 {
			b.Logf("bun statements per run by operation: %v (n=%d)", perRun(ops, b.N), b.N)
		}
	}
	for _, id := range ids {
		s, err := watch.Store().GetSession(ctx, id)
		if err != nil || s.Status != orchestrator.SessionCompleted {
			b.Fatalf("session %s: %+v, %v", id, s, err)
		}
	}
}

// BenchmarkRetention deletes 10,000 ended sessions (each with a run and three events) in batches of 500,
// as the coordinator's retention sweep does: Bulk is Store.DeleteEndedSessions (one DELETE per table per
// batch), PerSession the same batches deleted one DeleteSession at a time (what DeleteEndedSessions did
// first). It reports sessions deleted per second.
func BenchmarkRetention(b *testing.B) {
	const sessions, batch = 10000, 500
	for _, st := range benchStores() {
		for _, mode := range []string{"Bulk", "PerSession"} {
			b.Run(st.name+"/"+mode, func(b *testing.B) {
				db := st.open(b)
				ctx := context.Background()
				var total time.Duration
				for i := 0; i < b.N; i++ {
					fillEnded(b, db, i, sessions)
					began := time.Now()
					deleted := 0
					for {
						var n int
						var err error
						if mode == "Bulk" {
							n, err = db.DeleteEndedSessions(ctx, time.Now(), batch)
						} else {
							err = db.InTx(ctx, func(ctx context.Context, tx store.Store) error {
								n = 0
								old, err := tx.ListSessions(ctx, orchestrator.SessionFilter{EndedBefore: time.Now(), Limit: batch})
								if err != nil {
									return err
								}
								for _, s := range old {
									if err := tx.DeleteSession(ctx, s.ID); err != nil {
										return err
									}
									n++
								}
								return nil
							})
						}
						if err != nil {
							b.Fatal(err)
						}
						deleted += n
						if n < batch {
							break
						}
					}
					total += time.Since(began)
					if deleted != sessions {
						b.Fatalf("deleted %d sessions, want %d", deleted, sessions)
					}
				}
				b.ReportMetric(float64(sessions*b.N)/total.Seconds(), "sessions/s")
			})
		}
	}
}

// fillEnded creates n ended sessions, each with a completed run and three events.
func fillEnded(b *testing.B, db store.Store, round, n int) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	ended := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	for start := 0; start < n; start += 500 {
		err := db.InTx(ctx, func(ctx context.Context, tx store.Store) error {
			for i := start; i < min(start+500, n); i++ {
				id := fmt.Sprintf("%d_%06d", round, i)
				se := &orchestrator.Session{ID: "ses_" + id, AgentName: "noop", AgentType: orchestrator.AgentTypeDeterministic,
					Status: orchestrator.SessionCompleted, Parameters: json.RawMessage(`{"i":1}`), CreatedAt: ended, UpdatedAt: ended, EndedAt: &ended}
				if err := tx.CreateSession(ctx, se); err != nil {
					return err
				}
				run := &orchestrator.Run{ID: "run_" + id, SessionID: se.ID, AgentName: "noop", AgentType: orchestrator.AgentTypeDeterministic,
					Type: orchestrator.RunTypeStart, Mode: orchestrator.ModeAsyncPoll, Status: orchestrator.RunCompleted,
					Parameters: json.RawMessage(`{"i":1}`), CreatedAt: ended}
				if err := tx.CreateRun(ctx, run); err != nil {
					return err
				}
				evs := make([]*orchestrator.Event, 3)
				for k := range evs {
					e := orchestrator.NewEvent(orchestrator.EventProgress, map[string]int{"k": k})
					evs[k] = &e
				}
				if err := tx.AppendEvents(ctx, se.ID, evs); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
