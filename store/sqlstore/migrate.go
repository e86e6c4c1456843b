package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

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
