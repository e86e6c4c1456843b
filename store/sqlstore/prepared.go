package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Parsing (and, on PostgreSQL, planning) costs more than running a simple statement, and bun writes every
// value into the SQL text, so no two of its statements are alike. The hot statements are therefore
// prepared once with bound parameters: the claim on both dialects (a long statement: most of its cost
// was planning), the inserts and the event sequence update on SQLite (whose parser is slow next to its
// executor). PostgreSQL keeps bun's statements otherwise.

// stmtCache holds statements prepared on the root write database.
type stmtCache struct {
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	pending map[string]bool // being prepared in the background
	closed  bool
}

func newStmtCache() *stmtCache { return &stmtCache{m: map[string]*sql.Stmt{}} }

// prepared returns the statement for query, prepared once on the write database, and bound to the
// transaction when s is in one. A statement first needed inside a transaction is prepared on it for the
// transaction alone (preparing on the database would wait for the connection the transaction holds, on
// SQLite the only one); [Store.warmUp] prepares the hot statements when the store opens.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	tx, inTx := s.w.(bun.Tx)
	s.stmts.mu.Lock()
	st, ok := s.stmts.m[query]
	s.stmts.mu.Unlock()
	switch {
	case ok && inTx:
		return tx.StmtContext(ctx, st), nil // closed with the transaction
	case ok:
		return st, nil
	case inTx:
		// Prepare it on the database too, once the transaction has let go of the connection, so that
		// the next transaction finds it cached.
		s.prepareLater(query)
		return tx.PrepareContext(ctx, query)
	}
	// Prepared on a context of its own: the statement outlives this call.
	st, err := s.dbW.DB.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, err
	}
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if s.stmts.closed {
		st.Close()
		return nil, errors.New("sqlstore: store closed")
	}
	if prev, ok := s.stmts.m[query]; ok { // prepared concurrently
		st.Close()
		return prev, nil
	}
	s.stmts.m[query] = st
	return st, nil
}

// prepareLater prepares query on the write database in the background, once; it waits for the
// connection that the calling transaction holds.
func (s *Store) prepareLater(query string) {
	s.stmts.mu.Lock()
	if s.stmts.pending == nil {
		s.stmts.pending = map[string]bool{}
	}
	if s.stmts.pending[query] || s.stmts.closed {
		s.stmts.mu.Unlock()
		return
	}
	s.stmts.pending[query] = true
	s.stmts.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		root := *s
		root.w, root.inTx = s.dbW, false
		if _, err := root.prepared(ctx, query); err != nil {
			s.log.Debug("sqlstore: prepare", "err", err)
		}
		s.stmts.mu.Lock()
		delete(s.stmts.pending, query)
		s.stmts.mu.Unlock()
	}()
}

// warmUp prepares SQLite's hot statements. A failure is not an error here (the schema may be missing
// when migrations are skipped): the statement is prepared again when first used.
func (s *Store) warmUp(ctx context.Context) {
	if s.pg {
		return
	}
	queries := []string{claimSQL[false].claim, appendSeqSQL}
	for _, row := range []any{&runRow{}, &runTagRow{}, &sessionRow{}, &eventRow{}, &callbackRow{}, &agentRow{}} {
		queries = append(queries, s.insertQuery(reflect.TypeOf(row).Elem()))
	}
	for _, q := range queries {
		if _, err := s.prepared(ctx, q); err != nil {
			s.log.DebugContext(ctx, "sqlstore: prepare", "query", q, "err", err)
		}
	}
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// insertSQL caches, per row type, the INSERT statement with one parameter per column.
var insertSQL sync.Map // reflect.Type → string

// insert inserts one row: through a prepared statement on SQLite, through bun on PostgreSQL.
func (s *Store) insert(ctx context.Context, row any) error {
	if s.pg {
		_, err := s.w.NewInsert().Model(row).Exec(ctx)
		return err
	}
	v := reflect.ValueOf(row).Elem()
	table := s.dbW.Table(v.Type())
	query := s.insertQuery(v.Type())
	args := make([]any, len(table.Fields))
	for i, f := range table.Fields {
		a, err := driverValue(f.Value(v).Interface())
		if err != nil {
			return fmt.Errorf("%s.%s: %w", table.Name, f.Name, err)
		}
		args[i] = a
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, args...)
	return err
}

// queryRow runs a query that returns one row of scalar columns, scanning them into dest: prepared on
// SQLite, interpolated by bun on PostgreSQL. The query must be valid in both dialects, with ? for each
// parameter. No row is sql.ErrNoRows.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if s.pg {
		return s.w.NewRaw(query, args...).Scan(ctx, dest...)
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return err
	}
	return stmt.QueryRowContext(ctx, args...).Scan(dest...)
}

// insertQuery returns the INSERT of a row type with one parameter per column.
func (s *Store) insertQuery(typ reflect.Type) string {
	if q, ok := insertSQL.Load(typ); ok {
		return q.(string)
	}
	table := s.dbW.Table(typ)
	cols := make([]string, len(table.Fields))
	marks := make([]string, len(table.Fields))
	for i, f := range table.Fields {
		cols[i], marks[i] = string(f.SQLName), "?"
	}
	q := "INSERT INTO " + string(table.SQLName) + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
	insertSQL.Store(typ, q)
	return q
}

// driverValue converts a row field to the parameter that stores what bun would have written.
func driverValue(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64:
		return v, nil
	case time.Time:
		return formatTime(v), nil
	case *time.Time:
		if v == nil {
			return nil, nil
		}
		return formatTime(*v), nil
	case json.RawMessage:
		if v == nil {
			return nil, nil
		}
		return string(v), nil
	}
	return nil, fmt.Errorf("sqlstore: no parameter conversion for %T", v)
}

// formatTime renders t as bun renders a time literal: statements whose parameters bypass bun must store
// the same text, or SQLite's textual time comparisons and ordering would break.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}
