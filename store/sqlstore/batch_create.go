package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// maxBatchParams bounds the parameters of one multi-row INSERT on SQLite (insertBatch): below its
// default limit of 32,766 host parameters, so that a thousand runs go in one or two statements per table.
const maxBatchParams = 32000

// CreateSessionsWithRuns creates every session with its first run (runs[i] belongs to sessions[i]) in
// one transaction: all of them exist after it, or none (a taken id is ErrConflict). The sessions go in
// one INSERT, then the runs in another, and the runs' demanded tags in a third (see insertBatch); the
// transaction commits once. It is how the coordinator
// creates a fan-out (coordinator.Coordinator.StartRuns).
func (s *Store) CreateSessionsWithRuns(ctx context.Context, sessions []*orchestrator.Session, runs []*orchestrator.Run) error {
	if len(sessions) != len(runs) {
		return fmt.Errorf("sqlstore: %d sessions for %d runs", len(sessions), len(runs))
	}
	if len(sessions) == 0 {
		return nil
	}
	srows := make([]*sessionRow, len(sessions))
	rrows := make([]*runRow, len(runs))
	var tags []*runTagRow
	for i, se := range sessions {
		var err error
		if srows[i], err = sessionToRow(se); err != nil {
			return err
		}
		row, t, err := runToRow(runs[i])
		if err != nil {
			return err
		}
		rrows[i] = row
		for k := range t {
			tags = append(tags, &t[k])
		}
	}
	return s.tx(ctx, func(ctx context.Context, tx *Store) error {
		if err := tx.insertBatch(ctx, srows); err != nil {
			return wrap(err, "sessions", "")
		}
		if err := tx.insertBatch(ctx, rrows); err != nil {
			return wrap(err, "runs", "")
		}
		if err := tx.insertBatch(ctx, tags); err != nil {
			return wrap(err, "run tags", "")
		}
		for _, row := range rrows { // the slots of runs under a concurrency limit, as CreateRun makes them
			if err := tx.createSlots(ctx, row); err != nil {
				return wrap(err, "run slots", row.ID)
			}
		}
		return nil
	})
}

// insertBatch inserts rows (pointers to one row type). On PostgreSQL that is one statement over arrays,
// prepared once whatever the number of rows (see arrayInsert). On SQLite it is as few multi-row INSERTs
// as the parameter limit allows, not prepared: each batch size would be a statement of its own to keep.
func insertBatch[T any](ctx context.Context, s *Store, rows []*T) error {
	if len(rows) == 0 {
		return nil
	}
	typ := reflect.TypeFor[T]()
	table := s.dbW.Table(typ)
	if s.pg {
		query, args, err := s.arrayInsert(typ, len(rows), func(i int) ([]any, error) { return s.insertArgs(rows[i]) })
		if err != nil {
			return err
		}
		_, err = s.execPrepared(ctx, query, args...)
		return err
	}
	per := max(1, maxBatchParams/len(table.Fields))
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		args := make([]any, 0, len(chunk)*len(table.Fields))
		for _, row := range chunk {
			var err error
			if args, err = s.appendInsertArgs(args, table, reflect.ValueOf(row).Elem()); err != nil {
				return err
			}
		}
		if err := s.execRaw(ctx, s.dialectSQL(batchInsertQuery(s, typ, len(chunk))), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertBatch is [insertBatch] for the row types CreateSessionsWithRuns writes.
func (s *Store) insertBatch(ctx context.Context, rows any) error {
	switch rows := rows.(type) {
	case []*sessionRow:
		return insertBatch(ctx, s, rows)
	case []*runRow:
		return insertBatch(ctx, s, rows)
	case []*runTagRow:
		return insertBatch(ctx, s, rows)
	}
	return fmt.Errorf("sqlstore: no batch insert for %T", rows)
}

// arrayInsert writes the INSERT of n rows of type typ (row(i) the i-th) on PostgreSQL as one statement
// over arrays, one per column, and its arguments:
//
//	INSERT INTO t (c1, c2, …) SELECT * FROM unnest(?::text[], ?::timestamptz[], …)
//
// Its text depends on the table alone, so it is prepared and planned once; a multi-row VALUES list of a
// thousand rows is a statement of tens of thousands of parameters that PostgreSQL parses and plans anew
// each time (about 15 ms for a thousand runs). rowArgs(i) returns the i-th row's insert arguments
// ([Store.insertArgs]).
func (s *Store) arrayInsert(typ reflect.Type, n int, rowArgs func(int) ([]any, error)) (string, []any, error) {
	table := s.dbW.Table(typ)
	cols := columnNames(table)
	values := make([][]any, len(cols))
	for k := range values {
		values[k] = make([]any, n)
	}
	for i := range n {
		args, err := rowArgs(i)
		if err != nil {
			return "", nil, err
		}
		for k, a := range args {
			values[k][i] = a
		}
	}
	arrays := make([]string, len(cols))
	args := make([]any, len(cols))
	for k, f := range table.Fields {
		typ, err := pgArrayType(f.IndirectType)
		if err != nil {
			return "", nil, fmt.Errorf("%s.%s: %w", table.Name, f.Name, err)
		}
		arrays[k] = "?::" + typ + "[]"
		if args[k], err = pgArray(values[k]); err != nil {
			return "", nil, fmt.Errorf("%s.%s: %w", table.Name, f.Name, err)
		}
	}
	return "INSERT INTO " + string(table.SQLName) + " (" + strings.Join(cols, ", ") + ") SELECT * FROM unnest(" +
		strings.Join(arrays, ", ") + ")", args, nil
}

// pgArrayType is the PostgreSQL type of the array that carries a row field of Go type t (the types
// driverValue converts).
func pgArrayType(t reflect.Type) (string, error) {
	switch t {
	case reflect.TypeFor[string]():
		return "text", nil
	case reflect.TypeFor[bool]():
		return "boolean", nil
	case reflect.TypeFor[int64]():
		return "bigint", nil
	case reflect.TypeFor[float64]():
		return "double precision", nil
	case reflect.TypeFor[time.Time]():
		return "timestamptz", nil
	case reflect.TypeFor[json.RawMessage]():
		return "json", nil
	}
	return "", fmt.Errorf("sqlstore: no array type for %s", t)
}

// batchInsertQuery is [Store.insertQuery] without its cache: batch sizes vary.
func batchInsertQuery(s *Store, typ reflect.Type, n int) string {
	if n <= maxInsertRows {
		return s.insertQuery(typ, n)
	}
	table := s.dbW.Table(typ)
	cols := columnNames(table)
	values := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	var b strings.Builder
	b.Grow(64 + len(cols)*16 + n*(len(values)+2))
	b.WriteString("INSERT INTO " + string(table.SQLName) + " (" + strings.Join(cols, ", ") + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(values)
	}
	return b.String()
}

// execRaw runs query (already in the dialect's placeholders) with args on the store's connection or
// transaction, past bun, which would write the values into the SQL text.
func (s *Store) execRaw(ctx context.Context, query string, args ...any) error {
	switch w := s.w.(type) {
	case bun.Tx:
		_, err := w.Tx.ExecContext(ctx, query, args...)
		return err
	case *bun.DB:
		_, err := w.DB.ExecContext(ctx, query, args...)
		return err
	}
	return errors.New("sqlstore: no connection to execute on")
}
