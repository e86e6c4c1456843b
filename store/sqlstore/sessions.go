package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// CreateSession inserts the session; a taken id is ErrConflict.
func (s *Store) CreateSession(ctx context.Context, se *orchestrator.Session) error {
	row, err := sessionToRow(se)
	if err != nil {
		return err
	}
	return wrap(s.insert(ctx, row), "session", se.ID)
}

// CreateSessionWithRun implements [store.Store]. On PostgreSQL a run without demanded tags is one
// statement (the session's INSERT in a WITH clause of the run's; a run under a concurrency limit takes the transaction, which
// also makes its run_slots rows), a single round trip where a
// transaction of two INSERTs takes four (BEGIN, the INSERTs, COMMIT). On SQLite the transaction's
// statements run in-process and it shares its commit with concurrent ones anyway.
func (s *Store) CreateSessionWithRun(ctx context.Context, se *orchestrator.Session, r *orchestrator.Run) error {
	if !s.pg || len(r.Demands.Tags) > 0 || r.AgentLimit > 0 || r.ConcurrencyKey != "" || r.RateLimit > 0 {
		return s.tx(ctx, func(ctx context.Context, tx *Store) error {
			if err := tx.CreateSession(ctx, se); err != nil {
				return err
			}
			return tx.CreateRun(ctx, r)
		})
	}
	return s.createInOneStatement(ctx, se, r, nil)
}

// CreateSessionWithRunOnce implements [store.Store]. On PostgreSQL a run without demanded tags or
// limits is one statement, as in CreateSessionWithRun, with the key's INSERT in a WITH clause too, and
// joins the group of concurrent creations the same way (group_create.go): a taken key fails the whole
// statement (a concurrent one with the same key waits for the first to commit, then fails), so nothing is
// created, and in a group only its own member fails.
func (s *Store) CreateSessionWithRunOnce(ctx context.Context, se *orchestrator.Session, r *orchestrator.Run, k *store.IdempotencyKey) error {
	krow := &idempotencyKeyRow{ID: k.Key, RequestHash: k.RequestHash, RunID: r.ID, SessionID: se.ID, CreatedAt: utc(k.CreatedAt)}
	if krow.CreatedAt.IsZero() {
		krow.CreatedAt = utc(r.CreatedAt)
	}
	if !s.pg || len(r.Demands.Tags) > 0 || r.AgentLimit > 0 || r.ConcurrencyKey != "" || r.RateLimit > 0 {
		return s.tx(ctx, func(ctx context.Context, tx *Store) error {
			if err := wrap(tx.insert(ctx, krow), "idempotency key", k.Key); err != nil {
				return err
			}
			return tx.CreateSessionWithRun(ctx, se, r)
		})
	}
	return s.createInOneStatement(ctx, se, r, krow)
}

// GetSession returns the session with the id.
func (s *Store) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	var row sessionRow
	if err := s.getRow(ctx, &row, "id", id); err != nil {
		return nil, wrap(err, "session", id)
	}
	return row.domain()
}

// ListSessions returns the sessions f selects, oldest first (created_at, then id), or newest first with
// f.NewestFirst. AfterID continues strictly after that session in this order; a cursor naming a session
// that no longer exists is ErrNotFound.
func (s *Store) ListSessions(ctx context.Context, f orchestrator.SessionFilter) ([]*orchestrator.Session, error) {
	var rows []sessionRow
	q := s.r.NewSelect().Model(&rows)
	if f.NewestFirst {
		q = q.OrderExpr("created_at DESC, id DESC")
	} else {
		q = q.OrderExpr("created_at, id")
	}
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.AgentName != "" {
		q = q.Where("agent_name = ?", f.AgentName)
	}
	if f.ParentSessionID != "" {
		q = q.Where("parent_session_id = ?", f.ParentSessionID)
	}
	if !f.EndedBefore.IsZero() {
		q = q.Where("ended_at IS NOT NULL AND ended_at < ?", utc(f.EndedBefore))
	}
	if f.AfterID != "" {
		var after sessionRow
		if err := s.r.NewSelect().Model(&after).Column("id", "created_at").Where("id = ?", f.AfterID).Scan(ctx); err != nil {
			return nil, wrap(err, "cursor session", f.AfterID)
		}
		if f.NewestFirst {
			q = beforeCursor(q, after.CreatedAt, after.ID)
		} else {
			q = afterCursor(q, after.CreatedAt, after.ID)
		}
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "sessions", "")
	}
	return domains(rows, (*sessionRow).domain)
}

// afterCursor selects rows strictly after (createdAt, id) in (created_at, id) order. Spelled out rather
// than as a row-value comparison so both planners use the (…, created_at, id) indexes the same way.
func afterCursor(q *bun.SelectQuery, createdAt time.Time, id string) *bun.SelectQuery {
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("created_at > ?", utc(createdAt)).
			WhereOr("created_at = ? AND id > ?", utc(createdAt), id)
	})
}

// beforeCursor selects rows strictly before (createdAt, id) in (created_at, id) order: the next page of a
// newest-first listing.
func beforeCursor(q *bun.SelectQuery, createdAt time.Time, id string) *bun.SelectQuery {
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("created_at < ?", utc(createdAt)).
			WhereOr("created_at = ? AND id < ?", utc(createdAt), id)
	})
}

// UpdateSession applies u when the session's status is one of from (any, when from is empty).
func (s *Store) UpdateSession(ctx context.Context, id string, from []orchestrator.SessionStatus, u store.SessionUpdate) (*orchestrator.Session, error) {
	var row sessionRow
	err := s.updateSession(ctx, id, from, u, func(ctx context.Context, s *Store, q *guardedUpdate) (int64, error) {
		err := q.run(ctx, s, sessionColumns, &row)
		return row.LastEventSeq, err
	})
	if err != nil {
		return nil, err
	}
	return row.domain()
}

// UpdateSessionBrief implements [store.BriefUpdater]: UpdateSession, returning only the columns
// of the session's brief.
func (s *Store) UpdateSessionBrief(ctx context.Context, id string, from []orchestrator.SessionStatus, u store.SessionUpdate) (*store.SessionBrief, error) {
	var b store.SessionBrief
	err := s.updateSession(ctx, id, from, u, func(ctx context.Context, s *Store, q *guardedUpdate) (int64, error) {
		err := q.runInto(ctx, s, sessionBriefColumns,
			&b.ID, &b.AgentName, &b.AgentType, &b.Status, &b.ParentSessionID, &b.LastEventSeq)
		return b.LastEventSeq, err
	})
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// sessionBriefColumns are the columns of a [store.SessionBrief], in the order of its fields.
var sessionBriefColumns = []string{"id", "agent_name", "agent_type", "status", "parent_session_id", "last_event_seq"}

// updateSession is UpdateSession; run executes the guarded update it builds (on the store it is given,
// which is a transaction when events are appended) and returns the session's last event sequence.
func (s *Store) updateSession(ctx context.Context, id string, from []orchestrator.SessionStatus, u store.SessionUpdate,
	run func(ctx context.Context, s *Store, q *guardedUpdate) (int64, error)) error {
	if len(u.AppendEvents) > 0 && !s.inTx {
		return s.tx(ctx, func(ctx context.Context, tx *Store) error {
			return tx.updateSession(ctx, id, from, u, run)
		})
	}
	q, err := sessionUpdate(id, from, u)
	if err != nil {
		return err
	}
	last, err := run(ctx, s, &q)
	if err := s.updatedSession(ctx, err, id); err != nil {
		return err
	}
	return s.insertEvents(ctx, id, last, u.AppendEvents)
}

// sessionUpdate is the guarded update of UpdateSession (the appended events' sequence numbers included,
// not the events).
func sessionUpdate(id string, from []orchestrator.SessionStatus, u store.SessionUpdate) (guardedUpdate, error) {
	q := guardedUpdate{table: "sessions"}
	if u.Status != nil {
		q.set("status", string(*u.Status))
	}
	if u.RunnerID != nil {
		q.set("runner_id", *u.RunnerID)
	}
	if u.CurrentRunID != nil {
		q.set("current_run_id", *u.CurrentRunID)
	}
	if u.ExecutorSessionID != nil {
		q.set("executor_session_id", *u.ExecutorSessionID)
	}
	switch {
	case u.Result != nil:
		b, err := marshalResult(u.Result)
		if err != nil {
			return q, err
		}
		q.set("result", string(b))
	case u.ClearResult:
		q.setNull("result")
	}
	if u.Error != nil {
		q.set("error", *u.Error)
	}
	if u.ErrorCode != nil {
		q.set("error_code", *u.ErrorCode)
	}
	if u.CachedFrom != nil {
		q.set("cached_from", *u.CachedFrom)
	}
	if u.Attempt != nil {
		q.set("attempt", int64(*u.Attempt))
	}
	switch {
	case u.NextAttemptAt != nil:
		q.set("next_attempt_at", formatTime(*u.NextAttemptAt))
	case u.ClearNextAttemptAt:
		q.setNull("next_attempt_at")
	}
	switch {
	case u.EndedAt != nil:
		q.set("ended_at", formatTime(*u.EndedAt))
	case u.ClearEndedAt:
		q.setNull("ended_at")
	}
	updated := u.UpdatedAt
	if updated.IsZero() {
		updated = utc(time.Now())
	}
	q.set("updated_at", formatTime(updated))
	if n := len(u.AppendEvents); n > 0 {
		q.sets = append(q.sets, "last_event_seq = last_event_seq + ?")
		q.args = append(q.args, int64(n))
	}
	usage, counted, err := store.UsageOfEvents(u.AppendEvents)
	if err != nil {
		return q, fmt.Errorf("%w: %v", orchestrator.ErrInvalid, err)
	}
	if u.AddUsage != nil {
		usage.Add(*u.AddUsage)
		counted = true
	}
	if counted {
		q.sets = append(q.sets, usageSets...)
		q.args = append(q.args, usageArgs(usage)...)
	}
	q.whereEq("id", id)
	statuses := make([]string, len(from))
	for i, st := range from {
		statuses[i] = string(st)
	}
	q.whereIn("status", statuses)
	return q, nil
}

// updatedSession finishes a guarded update of session id: nil when it changed the session, else why the
// guard did not match — ErrNotFound for a missing session, ErrConflict otherwise.
func (s *Store) updatedSession(ctx context.Context, err error, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetSession(ctx, id); err != nil {
			return err
		}
		return conflict("session", id, "is not in an expected state")
	}
	return wrap(err, "session", id)
}

// DeleteSession deletes the session with its runs (and their demanded tags), events, callbacks (as
// parent or child) and artifacts (queueing their keys), in one transaction.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.tx(ctx, func(ctx context.Context, tx *Store) error {
		if tx.pg {
			// The session's row first, as retention takes rows (sessions, then what belongs to them), so
			// that a delete and a retention batch cannot deadlock.
			var got string
			err := tx.w.NewSelect().Model((*sessionRow)(nil)).Column("id").Where("id = ?", id).For("UPDATE").Scan(ctx, &got)
			if err != nil {
				return wrap(err, "session", id)
			}
		}
		runs := tx.w.NewSelect().Model((*runRow)(nil)).Column("id").Where("session_id = ?", id)
		if _, err := tx.w.NewDelete().Model((*runTagRow)(nil)).Where("run_id IN (?)", runs).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		if _, err := tx.w.NewDelete().Model((*runRow)(nil)).Where("session_id = ?", id).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		if _, err := tx.w.NewDelete().Model((*eventRow)(nil)).Where("session_id = ?", id).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		if _, err := tx.w.NewDelete().Model((*callbackRow)(nil)).
			Where("parent_session_id = ? OR child_session_id = ?", id, id).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		if _, err := tx.w.NewDelete().Model((*webhookRow)(nil)).Where("session_id = ?", id).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		if err := tx.dropArtifacts(ctx, "session_id = ?", id); err != nil {
			return err
		}
		if _, err := tx.w.NewDelete().Model((*inputRequestRow)(nil)).Where("session_id = ?", id).Exec(ctx); err != nil {
			return wrap(err, "session", id)
		}
		res, err := tx.w.NewDelete().Model((*sessionRow)(nil)).Where("id = ?", id).Exec(ctx)
		return deleted(res, err, "session", id)
	})
}

var sessionColumns = columns(sessionRow{})
