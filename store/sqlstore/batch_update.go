package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun/schema"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// The ends of the runs a runner reports together are written by the coordinator with one call of
// UpdateRunsBrief and one of UpdateSessionsBrief ([store.BatchBriefUpdater]). On PostgreSQL each
// statement is a round trip, and a run's end took three of them (its run, its session, its events): here
// the updates of a group that change the same columns under the same kind of guard go in one
// UPDATE … FROM unnest(…) statement per table, prepared once, and the group's events in one INSERT over
// arrays (insertBatch). On SQLite a statement costs no round trip and the transactions of concurrent
// callers already share one commit (batch.go), so each update runs alone, as UpdateRunBrief and
// UpdateSessionBrief run it.

// maxUpdateGroup bounds the members of one grouped UPDATE, so that one statement's arrays stay a few
// hundred kilobytes at most.
const maxUpdateGroup = 1024

// UpdateRunsBrief implements [store.BatchBriefUpdater].
func (s *Store) UpdateRunsBrief(ctx context.Context, us []store.RunsUpdate) ([]*store.RunBrief, error) {
	out := make([]*store.RunBrief, len(us))
	if !s.pg || len(us) < 2 {
		for i, u := range us {
			b, err := s.UpdateRunBrief(ctx, u.ID, u.From, u.RunnerID, u.Update)
			if err != nil && !guardMissed(err) {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	qs := make([]guardedUpdate, len(us))
	ids := make([]string, len(us))
	for i, u := range us {
		qs[i], ids[i] = runUpdate(u.ID, u.From, u.RunnerID, u.Update), u.ID
	}
	briefs := map[string]*store.RunBrief{}
	single, err := s.updateGrouped(ctx, reflect.TypeFor[runRow](), qs, ids, runBriefColumns, func(rows *sql.Rows) error {
		var b store.RunBrief
		if err := rows.Scan(&b.ID, &b.SessionID, &b.AgentName, &b.AgentType, &b.Mode, &b.Status, &b.RunnerID,
			&b.CallbackURL, &b.Limited, &b.TraceParent, &b.CreatedAt, &b.Attempt, &b.MaxAttempts, &b.Timeout, &b.TimedOut, &b.CacheKey, &b.CacheRole); err != nil {
			return err
		}
		b.Timeout *= time.Millisecond // stored in milliseconds

		b.CreatedAt = b.CreatedAt.UTC()
		briefs[b.ID] = &b
		return nil
	})
	if err != nil {
		return nil, wrap(err, "runs", "")
	}
	for i, u := range us {
		if !single[i] {
			out[i] = briefs[u.ID]
			continue
		}
		b, err := s.UpdateRunBrief(ctx, u.ID, u.From, u.RunnerID, u.Update)
		if err != nil && !guardMissed(err) {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// UpdateSessionsBrief implements [store.BatchBriefUpdater]. On PostgreSQL the events the updates
// append go in one INSERT after the sessions' UPDATE, which hands out their sequence numbers: call it in a
// transaction, as the single UpdateSessionBrief with AppendEvents is one.
func (s *Store) UpdateSessionsBrief(ctx context.Context, us []store.SessionsUpdate) ([]*store.SessionBrief, error) {
	out := make([]*store.SessionBrief, len(us))
	if !s.pg || len(us) < 2 {
		for i, u := range us {
			b, err := s.UpdateSessionBrief(ctx, u.ID, u.From, u.Update)
			if err != nil && !guardMissed(err) {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	if !s.inTx {
		err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
			var err error
			out, err = tx.UpdateSessionsBrief(ctx, us)
			return err
		})
		return out, err
	}
	qs := make([]guardedUpdate, len(us))
	ids := make([]string, len(us))
	for i, u := range us {
		q, err := sessionUpdate(u.ID, u.From, u.Update)
		if err != nil {
			return nil, wrap(err, "session", u.ID)
		}
		qs[i], ids[i] = q, u.ID
	}
	briefs := map[string]*store.SessionBrief{}
	single, err := s.updateGrouped(ctx, reflect.TypeFor[sessionRow](), qs, ids, sessionBriefColumns, func(rows *sql.Rows) error {
		var b store.SessionBrief
		if err := rows.Scan(&b.ID, &b.AgentName, &b.AgentType, &b.Status, &b.ParentSessionID, &b.LastEventSeq); err != nil {
			return err
		}
		briefs[b.ID] = &b
		return nil
	})
	if err != nil {
		return nil, wrap(err, "sessions", "")
	}
	// The events of every session the grouped statements changed, in one INSERT; their numbers end at the
	// session's new last_event_seq, as insertEvents numbers them.
	var events []*eventRow
	var appended []*orchestrator.Event
	for i, u := range us {
		b := briefs[u.ID]
		if single[i] || b == nil {
			continue
		}
		out[i] = b
		first := b.LastEventSeq - int64(len(u.Update.AppendEvents)) + 1
		for k, e := range u.Update.AppendEvents {
			row := eventRowOf(u.ID, first+int64(k), e)
			events = append(events, row)
			appended = append(appended, e)
		}
	}
	if err := insertBatch(ctx, s, events); err != nil {
		return nil, wrap(err, "events", "")
	}
	for k, e := range appended {
		e.SessionID, e.Seq, e.Time = events[k].SessionID, events[k].Seq, events[k].Time
	}
	for i, u := range us {
		if !single[i] {
			continue
		}
		b, err := s.UpdateSessionBrief(ctx, u.ID, u.From, u.Update)
		if err != nil && !guardMissed(err) {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// guardMissed reports whether err is a guarded update's "the guard did not match": the record is missing
// or not in an expected state.
func guardMissed(err error) bool {
	return errors.Is(err, orchestrator.ErrNotFound) || errors.Is(err, orchestrator.ErrConflict)
}

// updateGrouped runs the guarded updates qs (of the table of row type row; ids[i] is the id qs[i] guards on) on
// PostgreSQL: those with the same statement text go together, up to maxUpdateGroup in one statement,
// whose returning columns (the id first) scan reads row by row. It reports which updates it left to be
// run one at a time, after it: those alone in their shape, and the repeats of an id already in the
// group, which must see the first one's outcome as a sequence of single updates would.
func (s *Store) updateGrouped(ctx context.Context, row reflect.Type, qs []guardedUpdate, ids []string, returning []string, scan func(*sql.Rows) error) ([]bool, error) {
	single := make([]bool, len(qs))
	shapes := map[string][]int{}
	var order []string
	seen := make(map[string]bool, len(qs))
	for i := range qs {
		if seen[ids[i]] {
			single[i] = true
			continue
		}
		seen[ids[i]] = true
		if err := s.checkArgs(append(qs[i].args, qs[i].wargs...)); err != nil {
			return nil, err
		}
		key := strings.Join(qs[i].sets, ",") + " WHERE " + strings.Join(qs[i].where, " AND ")
		if _, ok := shapes[key]; !ok {
			order = append(order, key)
		}
		shapes[key] = append(shapes[key], i)
	}
	for _, key := range order {
		members := shapes[key]
		if len(members) < 2 {
			single[members[0]] = true
			continue
		}
		for start := 0; start < len(members); start += maxUpdateGroup {
			chunk := members[start:min(start+maxUpdateGroup, len(members))]
			query, args, err := groupedUpdateSQL(s.dbW.Table(row), qs, chunk, returning)
			if err != nil {
				return nil, err
			}
			stmt, err := s.prepared(ctx, query)
			if err != nil {
				return nil, err
			}
			if err := scanRows(ctx, stmt, args, scan); err != nil {
				return nil, err
			}
		}
	}
	return single, nil
}

// groupedUpdateSQL writes the guarded updates qs[members], which share their text, as one PostgreSQL
// statement over arrays, one array parameter per ? of the shared text:
//
//	UPDATE t SET c = v.p1, … FROM unnest(?::type[], …) AS v(p1, …) WHERE id = v.pK AND … RETURNING …
//
// Each array is typed after the column its ? is compared with or assigned to, by the row struct's field
// (as arrayInsert types its arrays); the columns of v are named p1, p2, … so that the table's columns stay
// unqualified and unambiguous. The text depends on the shape alone, not on the number of members, so it
// is prepared once and planned once.
func groupedUpdateSQL(table *schema.Table, qs []guardedUpdate, members []int, returning []string) (string, []any, error) {
	q := qs[members[0]]
	var types []string
	param := func(clause string) (string, error) {
		col, _, _ := strings.Cut(strings.TrimSpace(clause), " ")
		parts := strings.Split(clause, "?")
		var b strings.Builder
		for k, part := range parts {
			b.WriteString(part)
			if k < len(parts)-1 {
				f := table.LookupField(col)
				if f == nil {
					return "", fmt.Errorf("sqlstore: %s has no column %q", table.Name, col)
				}
				typ, err := pgArrayType(f.IndirectType)
				if err != nil {
					return "", err
				}
				types = append(types, typ)
				b.WriteString("v.p" + strconv.Itoa(len(types)))
			}
		}
		return b.String(), nil
	}
	var err error
	sets := make([]string, len(q.sets))
	for k, c := range q.sets {
		if sets[k], err = param(c); err != nil {
			return "", nil, err
		}
	}
	if len(sets) == 0 {
		sets = []string{"id = id"} // nothing to change, but the guard is still checked
	}
	where := make([]string, len(q.where))
	for k, c := range q.where {
		if where[k], err = param(c); err != nil {
			return "", nil, err
		}
	}
	arrays := make([]string, len(types))
	cols := make([]string, len(types))
	for k, typ := range types {
		arrays[k] = "?::" + typ + "[]"
		cols[k] = "p" + strconv.Itoa(k+1)
	}
	args := make([]any, len(types))
	column := make([]any, len(members))
	for k := range types {
		for m, i := range members {
			if k < len(qs[i].args) {
				column[m] = qs[i].args[k]
			} else {
				column[m] = qs[i].wargs[k-len(qs[i].args)]
			}
		}
		lit, err := pgArray(column)
		if err != nil {
			return "", nil, err
		}
		args[k] = lit
	}
	query := "UPDATE " + q.table + " SET " + strings.Join(sets, ", ") + " FROM unnest(" + strings.Join(arrays, ", ") +
		") AS v(" + strings.Join(cols, ", ") + ") WHERE " + strings.Join(where, " AND ") + " RETURNING " + strings.Join(returning, ", ")
	return query, args, nil
}

// pgArray writes vals as the text of a PostgreSQL array, which a parameter cast to an array type
// reads: {"a","b\"c",NULL,42}. Strings are quoted and escaped, so any text goes through.
func pgArray(vals []any) (string, error) {
	var b strings.Builder
	size := 2 + 3*len(vals)
	for _, v := range vals {
		if s, ok := v.(string); ok {
			size += len(s)
		}
	}
	b.Grow(size)
	b.WriteByte('{')
	for k, v := range vals {
		if k > 0 {
			b.WriteByte(',')
		}
		switch v := v.(type) {
		case nil:
			b.WriteString("NULL")
		case string:
			b.WriteByte('"')
			for {
				i := strings.IndexAny(v, `"\`)
				if i < 0 {
					break
				}
				b.WriteString(v[:i])
				b.WriteByte('\\')
				b.WriteByte(v[i])
				v = v[i+1:]
			}
			b.WriteString(v)
			b.WriteByte('"')
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64)) // shortest form that reads back exactly
		case bool:
			b.WriteString(strconv.FormatBool(v))
		default:
			return "", fmt.Errorf("sqlstore: no array element for %T", v)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// scanRows runs the prepared query stmt with args and calls scan for each row.
func scanRows(ctx context.Context, stmt *sql.Stmt, args []any, scan func(*sql.Rows) error) error {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
