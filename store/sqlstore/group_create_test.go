package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
	"github.com/agentorchestrator/orchestrator/store"
)

// TestKeyedCreationsGroup: on PostgreSQL, creations with idempotency keys (every StartRun over HTTP has
// one) that arrive while another is being written go together in one statement, as keyless ones do. The
// first creation is held on a lock so that the others queue behind it; rows written by one statement
// share its transaction id (xmin).
func TestKeyedCreationsGroup(t *testing.T) {
	dsn := pgtest.Schema(t, pgtest.Require(t), "keyed")
	ctx := context.Background()
	s, err := New(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	defer other.Close()
	lock, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, "LOCK TABLE idempotency_keys IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	const n = 10
	now := time.Now().UTC().Truncate(time.Microsecond)
	errs := make([]error, n)
	var wg sync.WaitGroup
	create := func(i int) {
		wg.Go(func() {
			id := fmt.Sprintf("%02d", i)
			se := &orchestrator.Session{ID: "ses_" + id, AgentName: "a", AgentType: orchestrator.AgentTypeDeterministic,
				Status: orchestrator.SessionPending, CurrentRunID: "run_" + id, CreatedAt: now, UpdatedAt: now}
			r := &orchestrator.Run{ID: "run_" + id, SessionID: se.ID, AgentName: "a", AgentType: orchestrator.AgentTypeDeterministic,
				Type: orchestrator.RunTypeStart, Mode: orchestrator.ModeAsyncPoll, Status: orchestrator.RunPending,
				Demands: orchestrator.Demands{RunnerID: "lnch_x"}, CreatedAt: now, RunAt: &now}
			errs[i] = s.CreateSessionWithRunOnce(ctx, se, r, &store.IdempotencyKey{Key: "key-" + id, RequestHash: "h"})
		})
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		testkit.WaitFor(t, 30*time.Second, what, done)
	}
	create(0)
	// The first creation waits on the lock, alone in its statement; only then do the others come.
	waitFor("the first creation to wait on the lock", func() bool {
		var waiting int
		err := other.QueryRowContext(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'idempotency_keys'::regclass").Scan(&waiting)
		return err == nil && waiting > 0
	})
	for i := 1; i < n; i++ {
		create(i)
	}
	waitFor("the other creations to queue", func() bool { return s.creates.Len() == n-1 })
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creation %d: %v", i, err)
		}
	}
	for _, table := range []string{"idempotency_keys", "sessions", "runs"} {
		var rows, statements int
		if err := other.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT xmin::text) FROM "+table).Scan(&rows, &statements); err != nil {
			t.Fatal(err)
		}
		if rows != n || statements != 2 {
			t.Errorf("%s: %d rows written by %d statements, want %d by 2 (the first alone, then the rest together)", table, rows, statements, n)
		}
	}
}
