package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// Parsing (and, on PostgreSQL, planning) costs more than running a simple statement, and bun writes every
// value into the SQL text, so no two of its statements are alike. The hot statements are therefore
// prepared once with bound parameters, on both dialects: the claim (a long statement: most of its cost
// was planning), the single-row inserts, the guarded updates of runs and sessions (update.go), the event
// sequence update and, on PostgreSQL, the multi-row insert of a few events. Their text is written with ?
// for each parameter, as SQLite takes it; PostgreSQL gets it rewritten to $1, $2, … ([pgPlaceholders]) when
// it is prepared.
//
// On PostgreSQL every parameter is sent as text of unspecified type, so the server infers its type from
// where it is used (the column it is compared with or stored into): times go as formatTime's text into
// TIMESTAMPTZ, JSON as text into JSON, bools and integers as their literals. Result rows come back as text,
// as they do for bun's own statements, and are scanned by bun, so both paths read the same values.

// stmtCache holds statements prepared on the root write database.
type stmtCache struct {
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	pending map[string]bool // being prepared in the background
	closed  bool
}

func newStmtCache() *stmtCache { return &stmtCache{m: map[string]*sql.Stmt{}} }

// prepared returns the statement for query (written with ? parameters), prepared once on the write
// database, and bound to the transaction when s is in one. A statement first needed inside a transaction
// is prepared on it for the transaction alone (preparing on the database would wait for a connection the
// transaction holds: on SQLite the only one; on PostgreSQL, with every connection of the pool held by a
// transaction, it would wait for good); [Store.warmUp] prepares the hot statements when the store opens.
//
// On PostgreSQL database/sql prepares a cached statement again on each connection of the pool that runs
// it (also through Tx.StmtContext), once per connection: the server keeps prepared statements per session.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	tx, inTx := s.w.(bun.Tx)
	st, ok := s.stmts.get(query)
	switch {
	case ok && inTx:
		return tx.StmtContext(ctx, st), nil // closed with the transaction
	case ok:
		return st, nil
	case inTx:
		// Prepare it on the database too, once the transaction has let go of the connection, so that
		// the next transaction finds it cached.
		s.prepareLater(query)
		return tx.PrepareContext(ctx, s.dialectSQL(query))
	}
	return s.stmts.prepare(ctx, s.dbW, query, s.dialectSQL(query))
}

// preparedRead is [Store.prepared] for a statement that only reads: outside a transaction on a SQLite
// file it is prepared on the pool of read connections, so that reads do not queue for the writer.
func (s *Store) preparedRead(ctx context.Context, query string) (*sql.Stmt, error) {
	if s.inTx || s.readStmts == nil {
		return s.prepared(ctx, query)
	}
	if st, ok := s.readStmts.get(query); ok {
		return st, nil
	}
	return s.readStmts.prepare(ctx, s.dbR, query, s.dialectSQL(query))
}

// get returns the cached statement for query.
func (c *stmtCache) get(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[query]
	return st, ok
}

// prepare prepares text on db and caches it under query (a concurrent preparation of the same query
// wins). The statement is prepared on a context of its own: it outlives the call.
func (c *stmtCache) prepare(ctx context.Context, db *bun.DB, query, text string) (*sql.Stmt, error) {
	st, err := db.DB.PrepareContext(context.WithoutCancel(ctx), text)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		st.Close()
		return nil, errors.New("sqlstore: store closed")
	}
	if prev, ok := c.m[query]; ok { // prepared concurrently
		st.Close()
		return prev, nil
	}
	c.m[query] = st
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

// warmUp prepares the hot statements whose text is fixed, so that the first transactions find them
// cached instead of preparing them for themselves. On PostgreSQL this prepares them on one connection;
// database/sql prepares them on the others as they run them. A failure is not an error here (the schema may
// be missing when migrations are skipped): the statement is prepared again when first used.
func (s *Store) warmUp(ctx context.Context) {
	queries := []string{claimSQL[s.pg].claim, appendSeqSQL}
	for _, row := range []any{&runRow{}, &runTagRow{}, &sessionRow{}, &eventRow{}, &callbackRow{}, &agentRow{}} {
		queries = append(queries, s.insertQuery(reflect.TypeOf(row).Elem(), 1))
	}
	if s.pg {
		// A run's completion appends two events (AppendEvents inserts several in one statement).
		queries = append(queries, s.insertQuery(reflect.TypeOf(eventRow{}), 2))
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

// insertSQL caches the INSERT statements, per row type and number of rows.
var insertSQL sync.Map // insertKey → string

type insertKey struct {
	typ  reflect.Type
	rows int
}

// insert inserts one row through a prepared statement.
func (s *Store) insert(ctx context.Context, row any) error {
	v := reflect.ValueOf(row).Elem()
	return s.insertValues(ctx, v.Type(), 1, func(int) reflect.Value { return v })
}

// maxInsertRows bounds the rows of a prepared multi-row INSERT ([Store.insertRows]): one statement is
// prepared per row count, so the bound keeps them few, and a larger batch is rare.
const maxInsertRows = 8

// insertArgs returns the parameters of insertQuery(T, 1) for row, a pointer to a row struct.
func (s *Store) insertArgs(row any) ([]any, error) {
	v := reflect.ValueOf(row).Elem()
	table := s.dbW.Table(v.Type())
	return s.appendInsertArgs(make([]any, 0, len(table.Fields)), table, v)
}

// appendInsertArgs appends the parameters that insert the row v of table to args, checked for what the
// dialect cannot store.
func (s *Store) appendInsertArgs(args []any, table *schema.Table, v reflect.Value) ([]any, error) {
	n := len(args)
	for _, f := range table.Fields {
		a, err := driverValue(f.Value(v).Interface())
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", table.Name, f.Name, err)
		}
		args = append(args, a)
	}
	if err := s.checkArgs(args[n:]); err != nil {
		return nil, err
	}
	return args, nil
}

// insertRows inserts the rows (a pointer to a slice of a row type) in one statement: prepared for up to
// maxInsertRows rows, through bun for more.
func (s *Store) insertRows(ctx context.Context, rows any) error {
	v := reflect.ValueOf(rows).Elem()
	if v.Len() == 0 {
		return nil
	}
	if v.Len() > maxInsertRows {
		_, err := s.w.NewInsert().Model(rows).Exec(ctx)
		return err
	}
	return s.insertValues(ctx, v.Type().Elem(), v.Len(), v.Index)
}

// insertValues inserts n rows of type typ, row(i) being the i-th, through a prepared statement.
func (s *Store) insertValues(ctx context.Context, typ reflect.Type, n int, row func(int) reflect.Value) error {
	table := s.dbW.Table(typ)
	query := s.insertQuery(typ, n)
	args := make([]any, 0, n*len(table.Fields))
	for i := range n {
		var err error
		if args, err = s.appendInsertArgs(args, table, row(i)); err != nil {
			return err
		}
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, args...)
	return err
}

// queryRow runs a query that returns one row of scalar columns as a prepared statement, scanning them
// into dest. The query must be valid in both dialects, with ? for each parameter. No row is
// sql.ErrNoRows.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if err := s.checkArgs(args); err != nil {
		return err
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return err
	}
	return stmt.QueryRowContext(ctx, args...).Scan(dest...)
}

// getRow reads into dest (a pointer to a row struct) the row whose key column equals key, through a
// prepared statement: bun would write the key into the SQL text, so every read would be parsed (and on
// PostgreSQL planned) again, which costs more than the read. No row is sql.ErrNoRows.
func (s *Store) getRow(ctx context.Context, dest any, keyColumn, key string) error {
	typ := reflect.TypeOf(dest).Elem()
	query := s.getQuery(typ, keyColumn)
	args := []any{key}
	if err := s.checkArgs(args); err != nil {
		return sql.ErrNoRows // no key holds a NUL byte on PostgreSQL
	}
	stmt, err := s.preparedRead(ctx, query)
	if err != nil {
		return err
	}
	if err := s.scan(ctx, stmt, args, dest); err != nil {
		return err
	}
	table := s.dbW.Table(typ)
	if table.LookupField(keyColumn).HasZeroValue(reflect.ValueOf(dest).Elem()) {
		return sql.ErrNoRows
	}
	return nil
}

// columnNames returns the column names of a row type, in field order.
func columnNames(table *schema.Table) []string {
	cols := make([]string, len(table.Fields))
	for i, f := range table.Fields {
		cols[i] = string(f.SQLName)
	}
	return cols
}

// getSQL caches the statements of getRow, per row type and key column.
var getSQL sync.Map // getKey → string

type getKey struct {
	typ reflect.Type
	col string
}

// getQuery returns the SELECT of every column of a row type by one key column. The columns are named
// rather than *, so that a prepared statement keeps its result shape when a newer replica adds a column.
func (s *Store) getQuery(typ reflect.Type, keyColumn string) string {
	key := getKey{typ, keyColumn}
	if q, ok := getSQL.Load(key); ok {
		return q.(string)
	}
	table := s.dbW.Table(typ)
	q := "SELECT " + strings.Join(columnNames(table), ", ") + " FROM " + string(table.SQLName) + " WHERE " + keyColumn + " = ?"
	getSQL.Store(key, q)
	return q
}

// insertQuery returns the INSERT of n rows of a row type with one parameter per column.
func (s *Store) insertQuery(typ reflect.Type, n int) string {
	key := insertKey{typ, n}
	if q, ok := insertSQL.Load(key); ok {
		return q.(string)
	}
	table := s.dbW.Table(typ)
	cols := columnNames(table)
	values := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	q := "INSERT INTO " + string(table.SQLName) + " (" + strings.Join(cols, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(values+", ", n), ", ")
	insertSQL.Store(key, q)
	return q
}

// driverValue converts a row field to the parameter that stores what bun would have written.
func driverValue(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64, float64:
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

// errStringNUL refuses a string parameter with a NUL byte on PostgreSQL, whose text types cannot hold
// one: pgdriver would drop the byte silently, where bun refuses such a string.
var errStringNUL = errors.New("sqlstore: string contains a NUL byte (0x00)")

// checkArgs refuses, on PostgreSQL, what bun would have refused in a parameter (see errStringNUL).
func (s *Store) checkArgs(args []any) error {
	if !s.pg {
		return nil
	}
	for _, a := range args {
		if v, ok := a.(string); ok && strings.IndexByte(v, 0) >= 0 {
			return errStringNUL
		}
	}
	return nil
}

// dialectSQL returns query, written with ? parameters, as the store's dialect takes it.
func (s *Store) dialectSQL(query string) string {
	if s.pg {
		return pgPlaceholders(query)
	}
	return query
}

// pgPlaceholders rewrites each ? parameter of query to PostgreSQL's numbered form: $1, $2, … in order.
// A ? inside a quoted literal or identifier is left alone; the statements given here use no operator
// spelled with ? (such as jsonb's ?| ), which this would take for a parameter.
func pgPlaceholders(query string) string {
	if strings.IndexByte(query, '?') < 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte // the quote we are inside of, or 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote ('') closes and reopens: same result
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// formatTime renders t as bun renders a time literal: statements whose parameters bypass bun must store
// the same text, or SQLite's textual time comparisons and ordering would break. On PostgreSQL the offset
// the text carries (+00:00) makes it name one instant whatever the session's TimeZone.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}
