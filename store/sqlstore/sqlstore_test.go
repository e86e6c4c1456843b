package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
	"github.com/agentorchestrator/orchestrator/store"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/store/storetest"
)

// postgresEnv names the PostgreSQL server the tests use, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Each test gets a schema of its own there.
const postgresEnv = "ORCHESTRATOR_TEST_POSTGRES_URL"

func TestSQLite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newSQLite(t) })
}

func TestSQLiteMemory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, ":memory:") })
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newPostgres(t) })
}

func BenchmarkSQLite(b *testing.B) {
	storetest.Bench(b, newSQLite)
}

func BenchmarkPostgres(b *testing.B) {
	requirePostgres(b)
	storetest.Bench(b, newPostgres)
}

// newSQLite opens a store on a WAL file of its own.
func newSQLite(tb testing.TB) store.Store {
	return open(tb, filepath.Join(tb.TempDir(), "orchestrator.db"))
}

func open(tb testing.TB, dsn string) *sqlstore.Store {
	tb.Helper()
	s, err := sqlstore.New(context.Background(), dsn, nil)
	if err != nil {
		tb.Fatalf("sqlstore.New(%q): %v", dsn, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// newPostgres opens a store in a fresh schema, dropped when the test ends; it skips the test when
// ORCHESTRATOR_TEST_POSTGRES_URL is not set.
func newPostgres(tb testing.TB) store.Store {
	tb.Helper()
	return open(tb, postgresSchema(tb))
}

// postgresSchema creates a schema for the test and returns a DSN whose search_path selects it.
func postgresSchema(tb testing.TB) string {
	tb.Helper()
	requirePostgres(tb)
	return pgtest.Schema(tb, os.Getenv(postgresEnv), "storetest")
}

func requirePostgres(tb testing.TB) {
	tb.Helper()
	if os.Getenv(postgresEnv) == "" {
		tb.Skipf("PostgreSQL tests skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them", postgresEnv)
	}
}

// Replicas starting at once migrate one after the other (advisory lock), and all of them come up.
func TestPostgresConcurrentMigrations(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			s, err := sqlstore.New(t.Context(), dsn, nil)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent New: %v", err)
		}
	}
	// And they agree on the schema: each migration recorded once.
	s := open(t, dsn)
	var n int
	if err := s.DB().NewRaw("SELECT count(*) FROM orchestrator_migrations").Scan(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if want := len(files) + 5; n != want { // the SQL files and the Go migrations parkedRuns, runnerSecretHash, submissionControl, resultCache and rateLimits
		t.Fatalf("%d migrations recorded, want %d (one per migration)", n, want)
	}
}

// Opening an existing database again applies nothing and keeps the data.
func TestReopen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"SQLite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "o.db") }},
		{"Postgres", postgresSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := tc.dsn(t)
			s, err := sqlstore.New(t.Context(), dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			se := &orchestrator.Session{ID: "ses_a", AgentName: "a", AgentType: orchestrator.AgentTypeAgent,
				Status: orchestrator.SessionPending, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), UpdatedAt: time.Now().UTC().Truncate(time.Microsecond)}
			if err := s.CreateSession(t.Context(), se); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := open(t, dsn)
			if _, err := s2.GetSession(t.Context(), "ses_a"); err != nil {
				t.Fatalf("GetSession after reopening: %v", err)
			}
		})
	}
}

// A retry written before a crash is handed out once, at its time, by the store opened again.
func TestRetryAcrossReopen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"SQLite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "o.db") }},
		{"Postgres", postgresSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := tc.dsn(t)
			storetest.RetryAcrossReopen(t, func(t *testing.T) store.Store {
				s, err := sqlstore.New(t.Context(), dsn, nil)
				if err != nil {
					t.Fatalf("sqlstore.New: %v", err)
				}
				return s
			})
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"",
		filepath.Join(t.TempDir(), "missing-dir", "o.db"),
		"postgres://postgres@127.0.0.1:1/none?sslmode=disable&dial_timeout=1s",
		"postgres://postgres@127.0.0.1:5432/test?sslmode=bogus",
	} {
		if s, err := sqlstore.New(t.Context(), dsn, nil); err == nil {
			s.Close()
			t.Errorf("New(%q) succeeded, want an error", dsn)
		}
	}
}

// Two stores on one PostgreSQL database are two coordinator replicas: of starts of one cache key on
// both at once, one leads.
func TestPostgresCacheReplicas(t *testing.T) {
	dsn := postgresSchema(t)
	storetest.CacheSingleFlight(t, open(t, dsn), open(t, dsn), true)
}

// Claims from two coordinator replicas on one PostgreSQL database keep every rate-limit window.
func TestPostgresRateLimitReplicas(t *testing.T) {
	dsn := postgresSchema(t)
	storetest.RateLimitConcurrent(t, open(t, dsn), open(t, dsn))
}
