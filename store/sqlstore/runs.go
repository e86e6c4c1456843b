package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// CreateRun inserts the run and its demanded tags; a taken id is ErrConflict.
func (s *Store) CreateRun(ctx context.Context, r *orchestrator.Run) error {
	row, tags, err := runToRow(r)
	if err != nil {
		return err
	}
	insert := func(ctx context.Context, s *Store) error {
		if err := s.insert(ctx, row); err != nil {
			return wrap(err, "run", r.ID)
		}
		for i := range tags {
			if err := s.insert(ctx, &tags[i]); err != nil {
				return wrap(err, "run tags", r.ID)
			}
		}
		return s.createSlots(ctx, row)
	}
	if len(tags) == 0 && !row.limited() && row.RateLimit == 0 {
		return insert(ctx, s) // one statement: no transaction needed
	}
	return s.tx(ctx, insert)
}

// GetRun returns the run with the id.
func (s *Store) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	var row runRow
	if err := s.getRow(ctx, &row, "id", id); err != nil {
		return nil, wrap(err, "run", id)
	}
	return row.domain()
}

// ListRuns returns the runs f selects, oldest first. AfterID continues strictly after that run; a cursor
// naming a run that no longer exists is ErrNotFound.
//
// The indexed selections are by session, by runner (with statuses), by pinned runner, of pending runs
// (runs_pending) and of parked ones (runs_parked). A selection by other statuses alone (GET
// /runs?status=running) reads the whole runs table: runs have no status index, because every status change
// would move its entry (migration 3 dropped it to spare each run's writes). Sessions are indexed by status;
// list those, or set a retention.
func (s *Store) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	var after *runRow
	if f.AfterID != "" {
		after = new(runRow)
		if err := s.r.NewSelect().Model(after).Column("id", "created_at").Where("id = ?", f.AfterID).Scan(ctx); err != nil {
			return nil, wrap(err, "cursor run", f.AfterID)
		}
	}
	var rows []runRow
	if err := listRunsQuery(s.r.NewSelect().Model(&rows), f, after).Scan(ctx); err != nil {
		return nil, wrap(err, "runs", "")
	}
	return domains(rows, (*runRow).domain)
}

// listRunsQuery adds f's selection to q, continuing after the run after when it is set.
//
// The coordinator's sweeps select pending runs every half second, with parked runs apart, and they must
// not read the runs table: it holds the whole history. SQLite uses a partial index only when the query has
// the index's WHERE terms as they are written, so one status is "status = 'pending'", never a one-item IN
// list, and Parked is "parked" or "NOT parked", as in runs_parked and runs_claim.
func listRunsQuery(q *bun.SelectQuery, f orchestrator.RunFilter, after *runRow) *bun.SelectQuery {
	q = q.OrderExpr("created_at, id")
	switch len(f.Statuses) {
	case 0:
	case 1:
		q = q.Where("status = ?", string(f.Statuses[0]))
	default:
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.SessionID != "" {
		q = q.Where("session_id = ?", f.SessionID)
	}
	if f.RunnerID != "" {
		q = q.Where("runner_id = ?", f.RunnerID)
	}
	if f.DemandRunnerID != "" {
		q = q.Where("demand_runner_id = ?", f.DemandRunnerID)
	}
	if f.Parked != nil {
		if *f.Parked {
			q = q.Where("parked")
		} else {
			q = q.Where("NOT parked")
		}
	}
	if f.AgentName != "" {
		q = q.Where("agent_name = ?", f.AgentName)
	}
	// Written as the partial indexes runs_timed and runs_start_deadline are (migration 51).
	if f.Timed {
		q = q.Where("timeout_ms > 0 AND status IN ('claimed', 'running')")
	}
	if !f.StartDeadlineBefore.IsZero() {
		q = q.Where("start_deadline < ? AND status = 'pending'", utc(f.StartDeadlineBefore))
	}
	if !f.CreatedBefore.IsZero() {
		q = q.Where("created_at < ?", utc(f.CreatedBefore))
	}
	if after != nil {
		q = afterCursor(q, after.CreatedAt, after.ID)
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	return q
}

// domains converts scanned rows to their domain values.
func domains[R, T any](rows []R, domain func(*R) (T, error)) ([]T, error) {
	out := make([]T, 0, len(rows))
	for i := range rows {
		v, err := domain(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// UpdateRun applies u when the run's status is one of from (any, when from is empty) and, when runnerID
// is set, the run is held by that runner.
func (s *Store) UpdateRun(ctx context.Context, id string, from []orchestrator.RunStatus, runnerID string, u store.RunUpdate) (*orchestrator.Run, error) {
	q := runUpdate(id, from, runnerID, u)
	var row runRow
	if err := s.updatedRun(ctx, q.run(ctx, s, runColumns, &row), id, runnerID); err != nil {
		return nil, err
	}
	return row.domain()
}

// UpdateRunBrief implements [store.BriefUpdater]: UpdateRun, returning only the columns of the
// run's brief.
func (s *Store) UpdateRunBrief(ctx context.Context, id string, from []orchestrator.RunStatus, runnerID string, u store.RunUpdate) (*store.RunBrief, error) {
	q := runUpdate(id, from, runnerID, u)
	var b store.RunBrief
	err := q.runInto(ctx, s, runBriefColumns,
		&b.ID, &b.SessionID, &b.AgentName, &b.AgentType, &b.Mode, &b.Status, &b.RunnerID, &b.CallbackURL, &b.Limited, &b.TraceParent, &b.CreatedAt, &b.Attempt, &b.MaxAttempts, &b.Timeout, &b.TimedOut, &b.CacheKey, &b.CacheRole)
	if err := s.updatedRun(ctx, err, id, runnerID); err != nil {
		return nil, err
	}
	b.CreatedAt = b.CreatedAt.UTC()
	b.Timeout *= time.Millisecond // stored in milliseconds
	return &b, nil
}

// runBriefColumns are the columns of a [store.RunBrief], in the order of its fields.
var runBriefColumns = []string{"id", "session_id", "agent_name", "agent_type", "mode", "status", "runner_id", "callback_url",
	"(agent_limit > 0 OR concurrency_key <> '')", "traceparent", "created_at", "attempt", "max_attempts",
	"timeout_ms", "(timed_out_at IS NOT NULL)", "cache_key", "cache_role"}

// runUpdate is the guarded update of UpdateRun.
func runUpdate(id string, from []orchestrator.RunStatus, runnerID string, u store.RunUpdate) guardedUpdate {
	q := guardedUpdate{table: "runs"}
	if u.Status != nil {
		q.set("status", string(*u.Status))
	}
	if u.RunnerID != nil {
		q.set("runner_id", *u.RunnerID)
	}
	if u.Error != nil {
		q.set("error", *u.Error)
	}
	if u.StopRequestedAt != nil {
		q.set("stop_requested_at", formatTime(*u.StopRequestedAt))
	}
	if u.StartedAt != nil {
		q.set("started_at", formatTime(*u.StartedAt))
	}
	if u.EndedAt != nil {
		q.set("ended_at", formatTime(*u.EndedAt))
	}
	if u.TimedOutAt != nil {
		q.set("timed_out_at", formatTime(*u.TimedOutAt))
	}
	if u.Usage != nil {
		if b, err := marshalUsage(u.Usage); err == nil {
			q.set("usage", string(b))
		}
	}
	q.whereEq("id", id)
	statuses := make([]string, len(from))
	for i, st := range from {
		statuses[i] = string(st)
	}
	q.whereIn("status", statuses)
	if runnerID != "" {
		// An expression, not the bare column: it keeps the planners off runs_runner for this condition,
		// so the run is found by its primary key. A prepared statement planned while runs was nearly
		// empty saw both indexes as equally cheap and took runs_runner, matching runner_id alone; on
		// PostgreSQL that generic plan stayed until an ANALYZE of runs (autovacuum's, on a new database
		// a minute or more later) invalidated it, and until then every report read all the runs the
		// runner had ever held, each a little slower than the last.
		q.where = append(q.where, "runner_id || '' = ?")
		q.wargs = append(q.wargs, runnerID)
	}
	return q
}

// updatedRun finishes a guarded update of run id: nil when it changed the run, else why the guard did not
// match — ErrNotFound for a missing run, ErrConflict naming the holder or the status otherwise.
func (s *Store) updatedRun(ctx context.Context, err error, id, runnerID string) error {
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := s.GetRun(ctx, id)
		if err != nil {
			return err
		}
		if runnerID != "" && cur.RunnerID != runnerID {
			return conflict("run", id, "is held by another runner")
		}
		return conflict("run", id, "is "+string(cur.Status))
	}
	return wrap(err, "run", id)
}

// TakeStopRequests returns the runner's claimed or running runs with a stop requested and not sent (or
// sent before resendBefore), marking them sent at now, in one statement.
func (s *Store) TakeStopRequests(ctx context.Context, runnerID string, now, resendBefore time.Time) ([]*orchestrator.Run, error) {
	// Runners poll all the time and stops are rare: look first (a read, beside the writer on SQLite) and
	// take the write lock only when there is something to mark. The look is a prepared statement: it
	// runs on every poll, on the way from a run's creation to its runner.
	if s.checkArgs([]any{runnerID}) != nil {
		return nil, nil // no runner id holds a NUL byte on PostgreSQL
	}
	stmt, err := s.preparedRead(ctx, stopProbeSQL)
	if err != nil {
		return nil, wrap(err, "stop requests of runner", runnerID)
	}
	var found int
	err = stmt.QueryRowContext(ctx, runnerID).Scan(&found)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "stop requests of runner", runnerID)
	}
	var rows []runRow
	q := s.w.NewUpdate().Model(&rows).
		Set("stop_sent_at = ?", utc(now)).
		Where("runner_id = ?", runnerID).
		Where("status IN (?)", bun.List([]orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning})).
		Where("stop_requested_at IS NOT NULL")
	if resendBefore.IsZero() {
		q = q.Where("stop_sent_at IS NULL")
	} else {
		q = q.Where("(stop_sent_at IS NULL OR stop_sent_at < ?)", utc(resendBefore))
	}
	if err := q.Returning("*").Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap(err, "stop requests of runner", runnerID)
	}
	// RETURNING has no ORDER BY.
	slices.SortFunc(rows, func(a, b runRow) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return domains(rows, (*runRow).domain)
}

// stopProbeSQL finds whether the runner holds a run with a stop requested. Its conditions are those of the
// partial index runs_stop (migration 20260101000005), word for word: the planners use a partial index only
// when they can prove the query implies its predicate, which a bound parameter would not let them.
const stopProbeSQL = "SELECT 1 FROM runs WHERE runner_id = ? AND stop_requested_at IS NOT NULL AND status IN ('" +
	string(orchestrator.RunClaimed) + "', '" + string(orchestrator.RunRunning) + "') LIMIT 1"

var runColumns = columns(runRow{})

// SetRunsParked sets parked on the listed runs that are still pending and returns how many changed.
func (s *Store) SetRunsParked(ctx context.Context, ids []string, parked bool) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n := 0
	err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
		q := tx.w.NewUpdate().Model((*runRow)(nil)).Set("parked = ?", parked).
			Where("id IN (?)", bun.List(ids)).Where("status = ?", string(orchestrator.RunPending)).
			Where("parked = ?", !parked)
		if !parked {
			q = q.Where("NOT held") // a held run stays parked until its approval releases it (ReleaseRun)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return wrap(err, "runs", "")
		}
		m, err := res.RowsAffected()
		n = int(m)
		return err
	})
	return n, err
}

// CountRuns returns how many runs have status: the coordinator's runs-pending gauge
// (coordinator.Coordinator.Gauges) reads it instead of listing the runs.
func (s *Store) CountRuns(ctx context.Context, status orchestrator.RunStatus) (int, error) {
	n, err := s.r.NewSelect().Model((*runRow)(nil)).Where("status = ?", string(status)).Count(ctx)
	return int(n), wrap(err, "runs", "")
}
