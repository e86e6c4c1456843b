package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver riversqlite runs on
)

// noopArgs is the job both sides run: it does nothing.
type noopArgs struct {
	I int `json:"i"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// spawnArgs is the job of the spawn shape: it starts /bin/true and waits for it.
type spawnArgs struct {
	I int `json:"i"`
}

func (spawnArgs) Kind() string { return "spawn" }

type spawnWorker struct {
	river.WorkerDefaults[spawnArgs]
}

func (spawnWorker) Work(ctx context.Context, _ *river.Job[spawnArgs]) error {
	return exec.CommandContext(ctx, "/bin/true").Run()
}

// riverRun measures River: n jobs inserted by the shape's producers (one Insert per job, or InsertMany
// of shape.batch jobs), executed by shape.workers workers, timed from the first insert to the last
// completion River has recorded (its job_completed event is sent after the completer's write).
func riverRun(ctx context.Context, backend backend, shape shape, n int, dir string) (float64, error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	river.AddWorker(workers, spawnWorker{})
	cfg := &river.Config{
		Logger:  slog.New(slog.DiscardHandler),
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: shape.workers}},
		Workers: workers,
	}
	if shape.spawn {
		// River fetches at most every FetchCooldown (100 ms by default), at most a free worker's worth of
		// jobs each time: with 8 workers that alone would cap it near 80 jobs/s. Its minimum gives it its
		// best rate at this shape.
		cfg.FetchCooldown, cfg.FetchPollInterval = time.Millisecond, time.Millisecond
	}
	switch backend.name {
	case "PostgreSQL":
		dsn, drop, err := freshSchema(ctx, backend.dsn, "river")
		if err != nil {
			return 0, err
		}
		defer drop()
		pcfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return 0, err
		}
		pcfg.MaxConns = int32(*pgConns)
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return 0, err
		}
		defer pool.Close()
		driver := riverpgxv5.New(pool)
		if err := migrateRiver(ctx, driver); err != nil {
			return 0, err
		}
		client, err := river.NewClient(driver, cfg)
		if err != nil {
			return 0, err
		}
		return driveRiver(ctx, client, shape, n)
	default:
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)")
		if err != nil {
			return 0, err
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // riversqlite's advice: SQLite takes one writer at a time
		driver := riversqlite.New(db)
		if err := migrateRiver(ctx, driver); err != nil {
			return 0, err
		}
		client, err := river.NewClient(driver, cfg)
		if err != nil {
			return 0, err
		}
		return driveRiver(ctx, client, shape, n)
	}
}

func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func driveRiver[TTx any](ctx context.Context, client *river.Client[TTx], shape shape, n int) (float64, error) {
	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n + 1, Kinds: []river.EventKind{river.EventKindJobCompleted},
	})
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		_ = client.Stop(stopCtx)
	}()
	began := time.Now()
	errs := make(chan error, shape.producers)
	var wg sync.WaitGroup
	for p := range shape.producers {
		wg.Go(func() {
			if shape.batch <= 1 {
				for i := p; i < n; i += shape.producers {
					var args river.JobArgs = noopArgs{I: i}
					if shape.spawn {
						args = spawnArgs{I: i}
					}
					if _, err := client.Insert(ctx, args, nil); err != nil {
						errs <- err
						return
					}
				}
				return
			}
			params := make([]river.InsertManyParams, 0, shape.batch)
			for start := p * shape.batch; start < n; start += shape.producers * shape.batch {
				params = params[:0]
				for i := start; i < min(start+shape.batch, n); i++ {
					params = append(params, river.InsertManyParams{Args: noopArgs{I: i}})
				}
				if _, err := client.InsertMany(ctx, params); err != nil {
					errs <- err
					return
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
	timeout := time.After(10 * time.Minute)
	for done := 0; done < n; {
		select {
		case ev := <-completed:
			if ev == nil {
				return 0, fmt.Errorf("river: subscription closed after %d of %d jobs", done, n)
			}
			done++
		case <-timeout:
			return 0, fmt.Errorf("river: %d of %d jobs completed after 10 minutes", done, n)
		}
	}
	return float64(n) / time.Since(began).Seconds(), nil
}
