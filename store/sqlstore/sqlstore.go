// Package sqlstore implements [store.Store] on SQL databases through bun: SQLite (the embedded
// default, pure Go through modernc.org/sqlite, no cgo) and PostgreSQL (for several coordinator replicas
// sharing one database).
//
// # Opening
//
// [New] takes a DSN. One that starts with postgres:// or postgresql:// opens PostgreSQL through bun's
// pgdriver (every query parameter the driver does not know, such as search_path, is sent as a run-time
// parameter). Anything else is a SQLite database: a file path, a file: URI, or ":memory:".
//
// A SQLite DSN gets the settings a coordinator needs unless it sets them itself: busy_timeout(5000),
// journal_mode(WAL), synchronous(NORMAL), foreign_keys(1), temp_store(MEMORY) and _txlock=immediate
// (without the last, a transaction that reads and then writes fails with SQLITE_BUSY instead of waiting).
// temp_store(MEMORY) keeps statement journals in memory: the group commit (batch.go) runs each
// transaction in a savepoint, and a savepoint's journal that spills to a temporary file costs a write
// system call per page it saves. Writes go through
// one connection, so the process's writers queue in Go instead of spinning on the busy timeout; reads
// use a pool of their own, which WAL lets run beside the writer. ":memory:" (and any in-memory URI) is
// one database on one connection.
//
// A goroutine checkpoints a SQLite file's WAL in the background, beside the writer. Under sustained
// writes that alone never lets the WAL start over, so once it holds more than [Config.MaxWALBytes] the
// writer itself finishes a checkpoint between two commits, which holds writers for up to a few tens of
// milliseconds (checkpoint.go): the WAL, and what a crash's recovery replays, stays about that size.
//
// # Schema
//
// The schema is created and upgraded by embedded migrations (bun/migrate) when the store opens. On
// PostgreSQL the migrations run under a session-level advisory lock, so replicas starting together
// migrate one after the other, and a replica that dies while migrating releases the lock with its
// connection (bun's own lock table is not used: a crash would leave it locked for good).
//
// # Statements
//
// The hot statements have bound parameters and are prepared once per connection, so that they are not
// parsed (and, on PostgreSQL, planned) every time: the claim, the single-row inserts, the guarded updates
// of runs and sessions, the event sequence update and, on PostgreSQL, the insert of a few events in one
// statement. Everything else goes through bun, which writes the values into the SQL text. Behind PgBouncer
// in transaction pooling mode, use a version that supports prepared statements (1.21 or later, with
// max_prepared_statements set).
//
// # Transactions
//
// [Store.InTx] hands fn a Store bound to the transaction. Inside fn use only that Store: on SQLite the
// transaction holds the only write connection, so a write through the outer Store would wait for fn to
// finish, which waits for the write.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/batch"
	"github.com/agentorchestrator/orchestrator/store"
)

// Config configures a [Store]. The zero value is ready to use.
type Config struct {
	// Logger receives the store's few messages (migrations applied). Default: discard.
	Logger *slog.Logger
	// MaxOpenConns bounds the PostgreSQL connection pool, or SQLite's pool of read connections (SQLite
	// always writes through one connection). Default: 20 for PostgreSQL, max(4, GOMAXPROCS) for SQLite.
	MaxOpenConns int
	// SkipMigrations leaves the schema alone at open, for deployments that migrate separately (see
	// [Store.Migrate]). Default: false, migrations run in [New].
	SkipMigrations bool
	// MaxWALBytes bounds a SQLite file's write-ahead log under sustained writes: past it the writer
	// pauses between two commits to finish a checkpoint, so that the log starts over (see the package
	// documentation); the store sets journal_size_limit to it too. Default: [DefaultMaxWALBytes], 64 MiB.
	MaxWALBytes int64
}

// Store is a [store.Store] on SQLite or PostgreSQL. It is safe for concurrent use.
type Store struct {
	// w takes writes and transactions, r plain reads. They are the same handle except for SQLite files,
	// where w is a one-connection pool, and inside a transaction, where both are the tx.
	w, r  bun.IDB
	inTx  bool
	pg    bool
	close func() error
	log   *slog.Logger
	// dbW is the root write database: for migrations, and for scanning rows read outside bun.
	dbW *bun.DB
	// stmts caches prepared statements (shared with the Stores of transactions).
	stmts *stmtCache
	// dbR is the root read pool of a SQLite file and readStmts the statements prepared on it
	// ([Store.preparedRead]); both nil where reads share the write database.
	dbR       *bun.DB
	readStmts *stmtCache
	// batch groups SQLite's transactions into shared commits (nil on PostgreSQL and in transactions).
	batch *batcher
	// check is the latest write check's outcome ([Store.CheckWrite]); nil in transactions.
	check *writeCheck
	// creates groups the creations of concurrent callers on PostgreSQL (group_create.go); nil on SQLite
	// and in transactions. creating counts its sender, which Close waits for.
	creates  *batch.Queue[createItem]
	creating *sync.WaitGroup
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.BriefUpdater = (*Store)(nil)
)

// New opens the database named by dsn (see the package documentation), runs the migrations unless
// cfg.SkipMigrations, and returns the store. cfg may be nil.
func New(ctx context.Context, dsn string, cfg *Config) (*Store, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if isPostgres(dsn) {
		return openPostgres(ctx, dsn, cfg)
	}
	return openSQLite(ctx, dsn, cfg)
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func openPostgres(ctx context.Context, dsn string, cfg *Config) (*Store, error) {
	if _, err := url.Parse(dsn); err != nil {
		return nil, fmt.Errorf("sqlstore: postgres dsn: %w", err)
	}
	var connector *pgdriver.Connector
	if err := func() (err error) {
		// pgdriver.WithDSN panics on a DSN it cannot parse (an unknown sslmode, an unreadable root CA).
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		connector = pgdriver.NewConnector(pgdriver.WithDSN(dsn))
		return nil
	}(); err != nil {
		return nil, fmt.Errorf("sqlstore: postgres dsn: %w", err)
	}
	sqldb := sql.OpenDB(connector)
	n := cfg.MaxOpenConns
	if n <= 0 {
		n = 20
	}
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, pgdialect.New(), bun.WithDiscardUnknownColumns())
	s := &Store{w: db, r: db, pg: true, dbW: db, log: logger(cfg), stmts: newStmtCache()}
	s.creates, s.creating = s.newCreateGroup()
	s.close = func() error { s.creating.Wait(); return errors.Join(s.stmts.close(), db.Close()) }
	return s.start(ctx, cfg)
}

func openSQLite(ctx context.Context, dsn string, cfg *Config) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("sqlstore: empty dsn")
	}
	dsn, memory, err := sqliteDSN(dsn)
	if err != nil {
		return nil, err
	}
	open := func(conns int) (*bun.DB, error) {
		sqldb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
		}
		sqldb.SetMaxOpenConns(conns)
		sqldb.SetMaxIdleConns(conns)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
		return bun.NewDB(sqldb, sqlitedialect.New(), bun.WithDiscardUnknownColumns()), nil
	}
	w, err := open(1)
	if err != nil {
		return nil, err
	}
	s := &Store{w: w, r: w, dbW: w, log: logger(cfg), stmts: newStmtCache()}
	s.batch = newBatcher(s)
	s.close = func() error { s.batch.close(); return errors.Join(s.stmts.close(), w.Close()) }
	if !memory {
		n := cfg.MaxOpenConns
		if n <= 0 {
			n = max(4, runtime.GOMAXPROCS(0))
		}
		r, err := open(n)
		if err != nil {
			w.Close()
			return nil, err
		}
		s.r, s.dbR, s.readStmts = r, r, newStmtCache()
		maxWAL := cfg.MaxWALBytes
		if maxWAL <= 0 {
			maxWAL = DefaultMaxWALBytes
		}
		stop, err := s.startCheckpointer(maxWAL)
		if err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("sqlstore: sqlite: %w", err)
		}
		s.close = func() error {
			s.batch.close()
			stop()
			// A last checkpoint on close folds the WAL into the database file.
			_, cerr := w.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
			return errors.Join(cerr, s.stmts.close(), s.readStmts.close(), r.Close(), w.Close())
		}
	}
	return s.start(ctx, cfg)
}

// sqliteDefaults are the connection settings a coordinator needs; a DSN that sets one keeps its own.
var sqliteDefaults = []struct{ key, name, value string }{
	{"_pragma", "busy_timeout", "busy_timeout(5000)"},
	{"_pragma", "journal_mode", "journal_mode(WAL)"},
	{"_pragma", "synchronous", "synchronous(NORMAL)"},
	{"_pragma", "foreign_keys", "foreign_keys(1)"},
	{"_pragma", "temp_store", "temp_store(MEMORY)"},
	{"_txlock", "", "immediate"},
}

// sqliteDSN adds the missing defaults to dsn and reports whether it names an in-memory database.
func sqliteDSN(dsn string) (string, bool, error) {
	path, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("sqlstore: sqlite dsn: %w", err)
	}
	memory := path == ":memory:" || path == "file::memory:" || q.Get("mode") == "memory"
	if path == ":memory:" {
		path = "file::memory:" // a URI, so that SQLite sees the query parameters a caller may add
	}
	have := func(key, name string) bool {
		if name == "" {
			return q.Has(key)
		}
		alias := map[string][]string{
			"busy_timeout": {"_busy_timeout", "_timeout"},
			"journal_mode": {"_journal_mode", "_journal"},
			"synchronous":  {"_synchronous", "_sync"},
			"foreign_keys": {"_foreign_keys", "_fk"},
		}[name]
		for _, a := range alias {
			if q.Has(a) {
				return true
			}
		}
		for _, v := range q[key] {
			v = strings.ToLower(strings.TrimSpace(v))
			if strings.HasPrefix(v, name) {
				return true
			}
		}
		return false
	}
	var add []string
	for _, d := range sqliteDefaults {
		if memory && d.name == "journal_mode" {
			continue // an in-memory database has no WAL
		}
		if !have(d.key, d.name) {
			add = append(add, d.key+"="+url.QueryEscape(d.value))
		}
	}
	out := path
	if query != "" || len(add) > 0 {
		out += "?" + strings.Join(append(nonEmpty(query), add...), "&")
	}
	return out, memory, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func logger(cfg *Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Store) start(ctx context.Context, cfg *Config) (*Store, error) {
	s.check = &writeCheck{}
	if err := s.dbW.PingContext(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("sqlstore: connect: %w", err)
	}
	if !cfg.SkipMigrations {
		if err := s.Migrate(ctx); err != nil {
			s.close()
			return nil, err
		}
	}
	s.warmUp(ctx)
	return s, nil
}

// Close closes the database. On a Store bound to a transaction it does nothing.
func (s *Store) Close() error {
	if s.inTx || s.close == nil {
		return nil
	}
	return s.close()
}

// DB returns the underlying bun database (the write handle), for tests and tools. Nil inside a
// transaction.
func (s *Store) DB() *bun.DB {
	if s.inTx {
		return nil
	}
	return s.dbW
}

// ReadsWarmInWrites reports whether a read costs less inside a write transaction ([Store.InTx]) than on
// its own, which is true on SQLite: a read connection's page cache is dropped whenever another connection
// committed since its last read, while the single writer's stays warm. The coordinator reads a poll's
// runner and stop requests in the claim's transaction when it is true.
func (s *Store) ReadsWarmInWrites() bool { return s.batch != nil }

// InTx runs fn in one transaction. On a Store already bound to a transaction it runs fn in that
// transaction.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	return s.tx(ctx, func(ctx context.Context, tx *Store) error { return fn(ctx, tx) })
}

// tx runs fn in a transaction, joining the current one if any.
func (s *Store) tx(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	if s.inTx {
		return fn(ctx, s)
	}
	if s.batch != nil {
		return s.batch.run(ctx, fn)
	}
	return s.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, &Store{w: tx, r: tx, inTx: true, pg: s.pg, log: s.log, dbW: s.dbW, stmts: s.stmts})
	})
}

// isConflict reports whether err is a uniqueness violation.
func isConflict(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		return pe.Field('C') == "23505"
	}
	return false
}

// wrap maps native errors to the orchestrator's sentinels, naming the record (id may be empty).
func wrap(err error, what string, id string) error {
	if err == nil {
		return nil
	}
	if id != "" {
		what = fmt.Sprintf("%s %q", what, id)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %w", what, orchestrator.ErrNotFound)
	case isConflict(err):
		return fmt.Errorf("%s: %w", what, orchestrator.ErrConflict)
	}
	return fmt.Errorf("sqlstore: %s: %w", what, err)
}

func notFound(what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, orchestrator.ErrNotFound)
}

func conflict(what, id, why string) error {
	return fmt.Errorf("%s %q %s: %w", what, id, why, orchestrator.ErrConflict)
}

// discardConn makes database/sql drop a pinned connection instead of pooling it (used when a session
// lock on it could not be released).
func discardConn(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}
