// Command river measures River (github.com/riverqueue/river) and the orchestrator's embedded path side by
// side, in one process run, on the same databases and with the same load shapes, and prints each pair as
// a ratio. It is a module of its own so that River never enters the orchestrator's dependencies.
//
//	cd benchmarks/river && go run . -pg 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// Shapes: "single" inserts one job (or run) per call from 64 producers, executed by 128 workers (the
// runner's MaxConcurrent); "batch" inserts 1,000 per call (InsertMany, StartRuns) from 4 producers,
// executed by 1,000 workers; "spawn" inserts one per call from 64 producers, executed by 8 workers that
// each start /bin/true and wait for it (River's worker through os/exec, the orchestrator's runner through
// its deterministic executor), beside the rate at which 8 goroutines spawn /bin/true with nothing else,
// measured in the same round: each side is also given as a fraction of that rate. Each measurement
// starts on a new database (a new PostgreSQL schema, a new SQLite file), counts from the first insert to
// the last job recorded as completed, and the two sides alternate which goes first from one round to
// the next. Without -pg (or ORCHESTRATOR_TEST_POSTGRES_URL)
// only SQLite is measured.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

type backend struct {
	name string
	dsn  string // PostgreSQL's base DSN; each measurement gets a schema of its own
}

type shape struct {
	name      string
	producers int
	workers   int
	batch     int  // jobs per insert call; 1 for single inserts
	n         int  // jobs per measurement
	spawn     bool // each job starts /bin/true and waits for it, rather than doing nothing
}

var (
	pgURL   = flag.String("pg", os.Getenv("ORCHESTRATOR_TEST_POSTGRES_URL"), "PostgreSQL DSN (empty: SQLite only)")
	rounds  = flag.Int("rounds", 3, "measurements of each pair; the sides alternate which goes first")
	single  = flag.Int("single", 10000, "jobs per measurement, single inserts")
	batched = flag.Int("batch", 40000, "jobs per measurement, batch inserts")
	spawns  = flag.Int("spawn", 5000, "jobs per measurement, /bin/true spawned by each")
	only    = flag.String("only", "", "comma-separated filter on backend or shape names (e.g. PostgreSQL,single)")
	pgConns = flag.Int("pg-conns", 20, "River's pgx pool size on PostgreSQL (the orchestrator's store opens 20)")
)

// errNoBatch is what the orchestrator's side returns for a batch shape it cannot run.
var errNoBatch = errors.New("no batch API")

func main() {
	flag.Parse()
	ctx := context.Background()
	backends := []backend{}
	if *pgURL != "" {
		backends = append(backends, backend{name: "PostgreSQL", dsn: *pgURL})
	}
	backends = append(backends, backend{name: "SQLite"})
	shapes := []shape{
		{name: "single", producers: 64, workers: 128, batch: 1, n: *single},
		{name: "batch", producers: 4, workers: 1000, batch: 1000, n: *batched},
		{name: "spawn", producers: 64, workers: 8, batch: 1, n: *spawns, spawn: true},
	}
	type result struct{ river, ours, raw []float64 }
	results := map[string]*result{}
	var order []string
	for round := range *rounds {
		for _, be := range backends {
			for _, sh := range shapes {
				key := be.name + ", " + sh.name
				if !selected(be.name, sh.name) {
					continue
				}
				r := results[key]
				if r == nil {
					r = &result{}
					results[key] = r
					order = append(order, key)
				}
				if sh.spawn {
					rate, err := rawSpawn(sh.workers, sh.n)
					if err != nil {
						fatal(err)
					}
					fmt.Printf("round %d  %-18s %-5s  %8.0f /s\n", round+1, key, "raw", rate)
					r.raw = append(r.raw, rate)
				}
				sides := []string{"river", "ours"}
				if round%2 == 1 {
					slices.Reverse(sides)
				}
				for _, side := range sides {
					dir, err := os.MkdirTemp("", "river-bench-")
					if err != nil {
						fatal(err)
					}
					var rate float64
					if side == "river" {
						rate, err = riverRun(ctx, be, sh, sh.n, dir)
					} else {
						rate, err = oursRun(ctx, be, sh, sh.n, dir)
					}
					os.RemoveAll(dir)
					switch {
					case errors.Is(err, errNoBatch):
						fmt.Printf("round %d  %-18s %-5s  %s\n", round+1, key, side, err)
						continue
					case err != nil:
						fatal(fmt.Errorf("%s, %s: %w", key, side, err))
					}
					fmt.Printf("round %d  %-18s %-5s  %8.0f /s\n", round+1, key, side, rate)
					if side == "river" {
						r.river = append(r.river, rate)
					} else {
						r.ours = append(r.ours, rate)
					}
				}
			}
		}
	}
	fmt.Println()
	fmt.Println("| backend, shape | River v0.51.2 (jobs/s) | orchestrator (runs/s) | ratio, per round |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, key := range order {
		r := results[key]
		var ratios []float64
		for i := range min(len(r.river), len(r.ours)) {
			ratios = append(ratios, r.ours[i]/r.river[i])
		}
		fmt.Printf("| %s | %s | %s | %s |\n", key, span(r.river, "%.0f"), span(r.ours, "%.0f"), span(ratios, "%.2f×"))
	}
	header := true
	for _, key := range order {
		r := results[key]
		if len(r.raw) == 0 {
			continue
		}
		if header {
			fmt.Println()
			fmt.Println("| backend, shape | raw spawn (spawns/s) | River, fraction of raw | orchestrator, fraction of raw |")
			fmt.Println("| --- | --- | --- | --- |")
			header = false
		}
		var riverX, oursX []float64
		for i := range min(len(r.raw), len(r.river), len(r.ours)) {
			riverX, oursX = append(riverX, r.river[i]/r.raw[i]), append(oursX, r.ours[i]/r.raw[i])
		}
		fmt.Printf("| %s | %s | %s | %s |\n", key, span(r.raw, "%.0f"), span(riverX, "%.2f×"), span(oursX, "%.2f×"))
	}
}

// rawSpawn is the rate at which workers goroutines start /bin/true and wait for it, n times in all, with
// nothing else running.
func rawSpawn(workers, n int) (float64, error) {
	began := time.Now()
	next := make(chan struct{})
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range next {
				if err := exec.Command("/bin/true").Run(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

func selected(names ...string) bool {
	if *only == "" {
		return true
	}
	for _, f := range strings.Split(*only, ",") {
		if !slices.Contains(names, f) && !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, f) }) {
			return false
		}
	}
	return true
}

// span formats the lowest and highest of xs.
func span(xs []float64, format string) string {
	if len(xs) == 0 {
		return "—"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if fmt.Sprintf(format, lo) == fmt.Sprintf(format, hi) {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+" – "+format, lo, hi)
}

// freshSchema creates a schema on the PostgreSQL server of base and returns a DSN whose search_path
// selects it, and a function that drops it.
func freshSchema(ctx context.Context, base, prefix string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "bench_" + prefix + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	}, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "river benchmark:", err)
	os.Exit(1)
}
