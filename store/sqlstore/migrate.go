package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration bookkeeping tables, named so they cannot collide with an application's own bun migrations in
// the same database.
const (
	migrationsTable     = "orchestrator_migrations"
	migrationLocksTable = "orchestrator_migration_locks"
)

// advisoryLockClass is the first key of the PostgreSQL advisory lock that serialises migrations ("orch");
// the second is a hash of the current schema, so stores in different schemas do not wait for each other.
const advisoryLockClass = 0x6f726368

// templateData renders the dialect-specific parts of the migration files.
type templateData struct {
	JSON, Time, WithoutRowID string
}

// Migrate applies the embedded migrations that have not been applied yet. [New] calls it unless
// [Config].SkipMigrations is set. It is safe to call from several processes at once on PostgreSQL.
func (s *Store) Migrate(ctx context.Context) error {
	if s.inTx {
		return errors.New("sqlstore: Migrate inside a transaction")
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	ms.Add(migrate.Migration{Name: "20260101000004", Comment: "parked_runs", Up: parkedRuns})
	ms.Add(migrate.Migration{Name: "20260101000006", Comment: "runner_secret_hash", Up: runnerSecretHash})
	ms.Add(migrate.Migration{Name: "20260101000020", Comment: "submission_control", Up: submissionControl})
	ms.Add(migrate.Migration{Name: "20260101000080", Comment: "result_cache", Up: resultCache})
	ms.Add(migrate.Migration{Name: "20260101000081", Comment: "rate_limits", Up: rateLimits})
	data := templateData{JSON: "TEXT", Time: "TIMESTAMP", WithoutRowID: " WITHOUT ROWID"}
	if s.pg {
		data = templateData{JSON: "JSON", Time: "TIMESTAMPTZ"}
	}
	m := migrate.NewMigrator(s.dbW, ms,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTemplateData(data))

	if s.pg {
		unlock, err := s.advisoryLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	// Init is inside the lock too: concurrent CREATE TABLE IF NOT EXISTS can fail on PostgreSQL.
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	if !group.IsZero() {
		s.log.InfoContext(ctx, "sqlstore: migrations applied", "group", group.ID, "migrations", group.Migrations.String())
	}
	return nil
}

// advisoryLock takes the migration lock on a connection of its own and returns its release. The lock
// belongs to that connection's session, so a process that dies while holding it releases it.
func (s *Store) advisoryLock(ctx context.Context) (func(), error) {
	conn, err := s.dbW.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migration lock: %w", err)
	}
	const key = "$1, hashtext(coalesce(current_schema(), ''))"
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock("+key+")", advisoryLockClass); err != nil {
		discardConn(conn)
		return nil, fmt.Errorf("sqlstore: migration lock: %w", err)
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock("+key+")", advisoryLockClass); err != nil {
			discardConn(conn) // closing the session releases the lock
			return
		}
		_ = conn.Close()
	}, nil
}

// parkedRuns adds runs.parked and takes parked runs out of the claim index: pending runs that no live
// runner can take are parked, so a backlog of them costs claims nothing. It is Go rather than SQL because
// SQLite has no ADD COLUMN IF NOT EXISTS, and every migration here must be safe to run twice (a crash
// between its commit and its bookkeeping row).
func parkedRuns(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
	return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		stmts := []string{
			"DROP INDEX IF EXISTS runs_claim",
			"CREATE INDEX IF NOT EXISTS runs_claim ON runs (demand_runner_id, agent_type, created_at, id) WHERE status = 'pending' AND NOT parked",
		}
		return addColumn(ctx, m, tx, "runs", "parked", "BOOLEAN NOT NULL DEFAULT FALSE", stmts...)
	})
}

// runnerSecretHash adds runners.secret_hash: the SHA-256 hash (hex) of the secret the runner's latest
// registration returned, empty when it holds none. Go for the same reason as parkedRuns.
func runnerSecretHash(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
	return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return addColumn(ctx, m, tx, "runners", "secret_hash", "TEXT NOT NULL DEFAULT ''")
	})
}

// addColumn adds column to table unless it is there already, then runs then.
func addColumn(ctx context.Context, m *migrate.Migrator, tx bun.Tx, table, column, def string, then ...string) error {
	q := "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?"
	if m.DB().Dialect().Name() == dialect.PG {
		q = "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?"
	}
	var n int
	if err := tx.NewRaw(q, table, column).Scan(ctx, &n); err != nil {
		return err
	}
	stmts := then
	if n == 0 {
		stmts = append([]string{fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", table, column, def)}, then...)
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}
