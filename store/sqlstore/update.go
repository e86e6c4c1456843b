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

// run executes the update and scans the updated row into dest; no matching row is sql.ErrNoRows.
func (u *guardedUpdate) run(ctx context.Context, s *Store, returning []string, dest any) error {
	if len(u.sets) == 0 {
		u.sets = append(u.sets, "id = id") // nothing to change, but the guard is still checked
	}
	q := "UPDATE " + u.table + " SET " + strings.Join(u.sets, ", ") + " WHERE " + strings.Join(u.where, " AND ") +
		" RETURNING " + strings.Join(returning, ", ")
	if err := s.queryPrepared(ctx, q, append(u.args, u.wargs...), dest); err != nil {
		return err
	}
	if id := rowID(dest); id == "" {
		return sql.ErrNoRows
	}
	return nil
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
