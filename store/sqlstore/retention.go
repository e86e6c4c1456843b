package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// retentionChunk bounds the sessions one retention transaction deletes: the id lists stay well under
// SQLite's parameter limit and each transaction short, so it never holds the writers up for long.
const retentionChunk = 1000

// DeleteEndedSessions deletes up to limit sessions that ended (completed, failed or stopped) before the
// given time, oldest end first, each with its runs (and their demanded tags), events, callbacks (as
// parent or child), webhook deliveries and artifacts (queueing their keys), and returns how many it deleted.
//
// Three kinds of ended session are kept, because something is still on its way: a session with a child
// whose run in progress will call it back (a run in async_callback mode), a session with callbacks not yet delivered
// (it is about to be resumed), and a session whose webhook is still being delivered. They go once that is
// done.
//
// The work is done in batches of at most 1000 sessions, one transaction each: a statement selects the
// batch's ids, and one DELETE per table removes everything that belongs to them. On PostgreSQL the
// selection locks the sessions FOR UPDATE SKIP LOCKED, so coordinator replicas running retention at the
// same time take disjoint batches instead of deleting the same rows twice or waiting for each other, and
// a concurrent resume of a selected session waits for the delete and then finds no session; each replica's
// count is what it deleted itself. On SQLite the transaction holds the database's write lock.
func (s *Store) DeleteEndedSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	total := 0
	for limit > 0 {
		chunk := min(limit, retentionChunk)
		n, err := s.deleteEndedChunk(ctx, before, chunk)
		total += n
		if err != nil {
			return total, err
		}
		if n < chunk {
			break
		}
		limit -= n
	}
	return total, nil
}

// deleteEndedChunk deletes one batch of at most limit sessions in one transaction.
func (s *Store) deleteEndedChunk(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
		n = 0
		var ids []string
		if err := tx.w.NewRaw(endedSessionsSQL(tx.pg), bun.List(endedStatuses), utc(before), limit).Scan(ctx, &ids); err != nil {
			return wrap(err, "ended sessions", "")
		}
		if len(ids) == 0 {
			return nil
		}
		in := bun.List(ids)
		runs := tx.w.NewSelect().Model((*runRow)(nil)).Column("id").Where("session_id IN (?)", in)
		for _, d := range []struct {
			model any
			where string
			args  []any
		}{
			{(*runTagRow)(nil), "run_id IN (?)", []any{runs}},
			{(*runRow)(nil), "session_id IN (?)", []any{in}},
			{(*eventRow)(nil), "session_id IN (?)", []any{in}},
			{(*callbackRow)(nil), "parent_session_id IN (?) OR child_session_id IN (?)", []any{in, in}},
			{(*webhookRow)(nil), "session_id IN (?)", []any{in}},
			{(*inputRequestRow)(nil), "session_id IN (?)", []any{in}},
		} {
			if _, err := tx.w.NewDelete().Model(d.model).Where(d.where, d.args...).Exec(ctx); err != nil {
				return wrap(err, "ended sessions", "")
			}
		}
		if err := tx.dropArtifacts(ctx, "session_id IN (?)", in); err != nil {
			return err
		}
		res, err := tx.w.NewDelete().Model((*sessionRow)(nil)).Where("id IN (?)", in).Exec(ctx)
		if err != nil {
			return wrap(err, "ended sessions", "")
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return wrap(err, "ended sessions", "")
		}
		n = int(affected)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

var endedStatuses = []orchestrator.SessionStatus{orchestrator.SessionCompleted, orchestrator.SessionFailed, orchestrator.SessionStopped}

// endedSessionsSQL selects the ids of a retention batch (parameters: the ended statuses, the cutoff, the
// limit). sessions_ended_at (ended_at, id, ended sessions only) serves the range and the order; the NOT EXISTS probes use
// sessions_parent, callbacks_parent and webhooks_session.
func endedSessionsSQL(pg bool) string {
	q := "SELECT s.id FROM sessions AS s" +
		" WHERE s.status IN (?) AND s.ended_at IS NOT NULL AND s.ended_at < ?" +
		" AND NOT EXISTS (SELECT 1 FROM sessions AS c JOIN runs AS r ON r.session_id = c.id" +
		" WHERE c.parent_session_id = s.id AND r.mode = 'async_callback' AND r.status IN ('pending', 'claimed', 'running'))" +
		" AND NOT EXISTS (SELECT 1 FROM callbacks AS cb WHERE cb.parent_session_id = s.id AND cb.delivered_at IS NULL)" +
		" AND NOT EXISTS (SELECT 1 FROM webhooks AS wh WHERE wh.session_id = s.id AND wh.status = 'pending')" +
		" ORDER BY s.ended_at, s.id LIMIT ?"
	if pg {
		q += " FOR UPDATE OF s SKIP LOCKED"
	}
	return q
}
