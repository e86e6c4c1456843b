package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// The result cache (migration 80): result_cache holds one row per cache key, with the completed session
// whose result it answers and the session executing for it now. A start locks the key's row for the rest
// of its transaction (on PostgreSQL: INSERT … ON CONFLICT DO NOTHING, which waits for a concurrent insert
// of the same key to commit, then SELECT … FOR UPDATE), so that of identical starts arriving at once on
// any replicas exactly one leads and the others see it and wait. The runs that wait are pending and parked
// (claims skip them at no cost) with cache_role 'wait'; runs_cache_wait finds them when the leader ends.

// resultCache is migration 80.
func resultCache(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
	pg := m.DB().Dialect().Name() == dialect.PG
	timeType, withoutRowID := "TIMESTAMP", " WITHOUT ROWID"
	if pg {
		timeType, withoutRowID = "TIMESTAMPTZ", ""
	}
	return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, c := range []struct{ table, column, def string }{
			{"sessions", "cached_from", "TEXT NOT NULL DEFAULT ''"},
			{"runs", "cache_key", "TEXT NOT NULL DEFAULT ''"},
			{"runs", "cache_role", "TEXT NOT NULL DEFAULT ''"},
		} {
			if err := addColumn(ctx, m, tx, c.table, c.column, c.def); err != nil {
				return err
			}
		}
		for _, st := range []string{
			"CREATE TABLE IF NOT EXISTS result_cache (cache_key TEXT PRIMARY KEY, agent_name TEXT NOT NULL," +
				" session_id TEXT NOT NULL DEFAULT '', completed_at " + timeType + ", expires_at " + timeType + "," +
				" leader_session_id TEXT NOT NULL DEFAULT '', updated_at " + timeType + " NOT NULL)" + withoutRowID,
			"CREATE INDEX IF NOT EXISTS result_cache_expiry ON result_cache (expires_at)",
			"CREATE INDEX IF NOT EXISTS runs_cache_wait ON runs (cache_key, created_at) WHERE status = 'pending' AND cache_role = 'wait'",
		} {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return fmt.Errorf("%s: %w", st, err)
			}
		}
		return nil
	})
}

type cacheRow struct {
	bun.BaseModel `bun:"table:result_cache,alias:rc"`

	Key             string     `bun:"cache_key,pk"`
	AgentName       string     `bun:"agent_name"`
	SessionID       string     `bun:"session_id"`
	CompletedAt     *time.Time `bun:"completed_at"`
	ExpiresAt       *time.Time `bun:"expires_at"`
	LeaderSessionID string     `bun:"leader_session_id"`
	UpdatedAt       time.Time  `bun:"updated_at"`
}

// LockCacheEntry implements [store.Store].
func (s *Store) LockCacheEntry(ctx context.Context, key, agentName string, now time.Time) (*store.CacheEntry, error) {
	if !s.inTx {
		return nil, fmt.Errorf("sqlstore: LockCacheEntry outside a transaction")
	}
	if _, err := s.execPrepared(ctx, "INSERT INTO result_cache (cache_key, agent_name, updated_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
		key, agentName, formatTime(now)); err != nil {
		return nil, wrap(err, "cache entry", key)
	}
	q := s.w.NewSelect().Model((*cacheRow)(nil)).Where("cache_key = ?", key)
	if s.pg {
		q = q.For("UPDATE")
	}
	var row cacheRow
	if err := q.Scan(ctx, &row); err != nil {
		return nil, wrap(err, "cache entry", key)
	}
	e := &store.CacheEntry{Key: row.Key, AgentName: row.AgentName, SessionID: row.SessionID, LeaderSessionID: row.LeaderSessionID, UpdatedAt: utc(row.UpdatedAt)}
	if row.CompletedAt != nil {
		e.CompletedAt = utc(*row.CompletedAt)
	}
	if row.ExpiresAt != nil {
		e.ExpiresAt = utc(*row.ExpiresAt)
	}
	return e, nil
}

// PutCacheEntry implements [store.Store].
func (s *Store) PutCacheEntry(ctx context.Context, e *store.CacheEntry) error {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := utc(t)
		return &u
	}
	row := &cacheRow{Key: e.Key, AgentName: e.AgentName, SessionID: e.SessionID, CompletedAt: opt(e.CompletedAt), ExpiresAt: opt(e.ExpiresAt),
		LeaderSessionID: e.LeaderSessionID, UpdatedAt: utc(e.UpdatedAt)}
	res, err := s.w.NewUpdate().Model(row).WherePK().Exec(ctx)
	return updated(res, err, "cache entry", e.Key)
}

// updated turns the outcome of an UPDATE of one row into the store's errors: ErrNotFound when it changed
// nothing.
func updated(res interface{ RowsAffected() (int64, error) }, err error, what, id string) error {
	if err != nil {
		return wrap(err, what, id)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return wrap(errOr(err, orchestrator.Errorf(orchestrator.ErrNotFound, "not_found", "%s %q not found", what, id)), what, id)
	}
	return nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// ListCacheWaiters implements [store.Store]; runs_cache_wait serves it.
func (s *Store) ListCacheWaiters(ctx context.Context, key string) ([]*orchestrator.Run, error) {
	var rows []runRow
	err := s.w.NewSelect().Model(&rows).
		Where("status = 'pending' AND cache_role = 'wait' AND cache_key = ?", key).
		OrderExpr("created_at, id").Scan(ctx)
	if err != nil {
		return nil, wrap(err, "cache waiters", key)
	}
	return domains(rows, (*runRow).domain)
}

// SetRunCacheRole implements [store.Store].
func (s *Store) SetRunCacheRole(ctx context.Context, id, role string, parked bool) error {
	res, err := s.w.NewUpdate().Model((*runRow)(nil)).Set("cache_role = ?", role).Set("parked = ?", parked).
		Where("id = ? AND status = 'pending'", id).Exec(ctx)
	if err != nil {
		return wrap(err, "run", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.GetRun(ctx, id); err != nil {
			return err
		}
		return conflict("run", id, "is no longer pending")
	}
	return nil
}

// staleLeader is how long after its last write an entry whose leader never cleared it is deleted anyway:
// longer than any deterministic run may last (timeout_seconds is at most 7 days).
const staleLeader = 8 * 24 * time.Hour

// DeleteCacheEntries implements [store.Store].
func (s *Store) DeleteCacheEntries(ctx context.Context, before time.Time, limit int) (int, error) {
	total := 0
	for limit > 0 {
		chunk := min(limit, retentionChunk)
		sel := s.w.NewSelect().Model((*cacheRow)(nil)).Column("cache_key").
			Where("(leader_session_id = '' AND ((expires_at IS NOT NULL AND expires_at < ?) OR (expires_at IS NULL AND updated_at < ?))) OR updated_at < ?",
				utc(before), utc(before), utc(before.Add(-staleLeader))).
			Limit(int64(chunk))
		res, err := s.w.NewDelete().Model((*cacheRow)(nil)).Where("cache_key IN (?)", sel).Exec(ctx)
		if err != nil {
			return total, wrap(err, "cache entries", "")
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, wrap(err, "cache entries", "")
		}
		total += int(n)
		if int(n) < chunk {
			break
		}
		limit -= int(n)
	}
	return total, nil
}
