package sqlstore

import (
	"context"
	"database/sql"
	"strings"
)

// guardedUpdate is an UPDATE … WHERE … RETURNING of one row, written with ? parameters so that it runs
// as a prepared statement (see prepared.go: parsing, and on PostgreSQL planning, costs more than running
// a simple update). Its text depends only on which columns are set and how many statuses guard it, so few
// distinct statements exist and each is prepared once. The RETURNING columns are named rather than *, so
// that the result shape of a prepared statement stays fixed when a newer replica adds a column.
type guardedUpdate struct {
	table string
	sets  []string
	args  []any
	where []string
	wargs []any
}

func (u *guardedUpdate) set(col string, v any) {
	u.sets = append(u.sets, col+" = ?")
	u.args = append(u.args, v)
}

func (u *guardedUpdate) setNull(col string) { u.sets = append(u.sets, col+" = NULL") }

func (u *guardedUpdate) whereEq(col string, v any) {
	u.where = append(u.where, col+" = ?")
	u.wargs = append(u.wargs, v)
}

func (u *guardedUpdate) whereIn(col string, vs []string) {
	if len(vs) == 0 {
		return
	}
	u.where = append(u.where, col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", ")+")")
	for _, v := range vs {
		u.wargs = append(u.wargs, v)
	}
}

// query returns the update's statement, returning the columns named.
func (u *guardedUpdate) query(returning []string) string {
	if len(u.sets) == 0 {
		u.sets = append(u.sets, "id = id") // nothing to change, but the guard is still checked
	}
	return "UPDATE " + u.table + " SET " + strings.Join(u.sets, ", ") + " WHERE " + strings.Join(u.where, " AND ") +
		" RETURNING " + strings.Join(returning, ", ")
}

// run executes the update and scans the updated row into dest, a row struct, through bun; no matching row
// is sql.ErrNoRows.
func (u *guardedUpdate) run(ctx context.Context, s *Store, returning []string, dest any) error {
	if err := s.queryPrepared(ctx, u.query(returning), append(u.args, u.wargs...), dest); err != nil {
		return err
	}
	if id := rowID(dest); id == "" {
		return sql.ErrNoRows
	}
	return nil
}

// runInto executes the update and scans the returning columns of the updated row into dest, one
// destination per column, as database/sql scans; no matching row is sql.ErrNoRows. It spares the few
// columns of a brief bun's mapping of a row onto a struct, which costs more than scanning them.
func (u *guardedUpdate) runInto(ctx context.Context, s *Store, returning []string, dest ...any) error {
	args := append(u.args, u.wargs...)
	if err := s.checkArgs(args); err != nil {
		return err
	}
	stmt, err := s.prepared(ctx, u.query(returning))
	if err != nil {
		return err
	}
	return stmt.QueryRowContext(ctx, args...).Scan(dest...)
}

// rowID returns the id of a scanned run or session row, "" when nothing was scanned.
func rowID(dest any) string {
	switch r := dest.(type) {
	case *runRow:
		return r.ID
	case *sessionRow:
		return r.ID
	}
	panic("sqlstore: guardedUpdate of an unknown row type")
}
