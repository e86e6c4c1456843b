package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Rate limits (migration 81). A rate-limited run carries its limit, period (milliseconds) and bucket; its
// bucket's row in rate_buckets holds the claim times (Unix milliseconds) of the bucket's runs within the
// period, as a JSON array on SQLite and a bigint[] on PostgreSQL. A trigger appends a run's claim time when
// it moves from pending to claimed, dropping the times that fell out of its window, in the claim's own
// statement. The claim reads the row — on PostgreSQL locked FOR UPDATE, so that it sees the newest times
// after a concurrent claim of the bucket commits, exactly as run_slots serves concurrency limits (see
// [buildClaimSQL]) — and takes a run only while the bucket's recent claims plus its rank among the
// bucket's candidates stay within the limit.
//
// The times live in the locked row rather than in a table of starts because a PostgreSQL statement reads
// other tables as of its start: a count over a table would miss what a concurrent claim committed while
// this one waited for the lock.

// rateLimits is migration 81.
func rateLimits(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
	pg := m.DB().Dialect().Name() == dialect.PG
	starts, withoutRowID := "TEXT NOT NULL DEFAULT '[]'", " WITHOUT ROWID"
	if pg {
		starts, withoutRowID = "BIGINT[] NOT NULL DEFAULT '{}'", ""
	}
	return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, c := range []struct{ column, def string }{
			{"rate_limit", "BIGINT NOT NULL DEFAULT 0"},
			{"rate_period_ms", "BIGINT NOT NULL DEFAULT 0"},
			{"rate_bucket", "TEXT NOT NULL DEFAULT ''"},
			// The claim time in Unix milliseconds, which the claim writes beside claimed_at: the trigger
			// records it exactly, without date arithmetic that differs per dialect.
			{"claimed_ms", "BIGINT NOT NULL DEFAULT 0"},
		} {
			if err := addColumn(ctx, m, tx, "runs", c.column, c.def); err != nil {
				return err
			}
		}
		stmts := []string{
			"CREATE TABLE IF NOT EXISTS rate_buckets (agent_name TEXT NOT NULL, bucket TEXT NOT NULL, starts " + starts + "," +
				" PRIMARY KEY (agent_name, bucket))" + withoutRowID,
			// The pending runs a rate limit may hold: what the held-runs gauge counts.
			"CREATE INDEX IF NOT EXISTS runs_rate_pending ON runs (agent_name) WHERE status = 'pending' AND rate_limit > 0",
		}
		stmts = append(stmts, rateTriggers(pg)...)
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return fmt.Errorf("%s: %w", st, err)
			}
		}
		return nil
	})
}

// rateTriggers record a rate-limited run's claim time in its bucket's row.
func rateTriggers(pg bool) []string {
	const when = "NEW.rate_limit > 0 AND NEW.status = 'claimed' AND OLD.status = 'pending'"
	if !pg {
		const ms = "NEW.claimed_ms"
		return []string{
			"CREATE TRIGGER IF NOT EXISTS runs_rate_start AFTER UPDATE OF status ON runs WHEN " + when + " BEGIN" +
				" UPDATE rate_buckets SET starts = (SELECT json_group_array(v) FROM (SELECT value AS v FROM json_each(rate_buckets.starts)" +
				" WHERE value > " + ms + " - NEW.rate_period_ms UNION ALL SELECT " + ms + "))" +
				" WHERE agent_name = NEW.agent_name AND bucket = NEW.rate_bucket;" +
				" END",
		}
	}
	fn := `CREATE OR REPLACE FUNCTION orchestrator_rate_start() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	ms bigint := NEW.claimed_ms;
BEGIN
	UPDATE rate_buckets SET starts = ARRAY(SELECT t FROM unnest(starts) t WHERE t > ms - NEW.rate_period_ms) || ms
		WHERE agent_name = NEW.agent_name AND bucket = NEW.rate_bucket;
	RETURN NULL;
END
$$`
	return []string{
		fn,
		"DROP TRIGGER IF EXISTS runs_rate_start ON runs",
		"CREATE TRIGGER runs_rate_start AFTER UPDATE OF status ON runs FOR EACH ROW WHEN (" + when + ") EXECUTE FUNCTION orchestrator_rate_start()",
	}
}

// recentStarts is the SQL expression counting the claim times in starts (a rate_buckets column) later
// than since (a millisecond expression).
func recentStarts(pg bool, starts, since string) string {
	if pg {
		return "(SELECT count(*) FROM unnest(" + starts + ") t WHERE t > " + since + ")"
	}
	return "(SELECT count(*) FROM json_each(" + starts + ") WHERE value > " + since + ")"
}

// rateFits is the SQL condition under which a claim at nowMS may take a run limited to limit claims per
// period (both SQL expressions) from the bucket whose claim times are starts, after rank-1 others of the
// same claim: fewer than limit-rank+1 claims in the period before nowMS, and none after nowMS. A claimer
// whose clock reads earlier than the bucket's latest claim (it read the time, then waited for the
// bucket's lock while another claim went through) takes nothing from the bucket: recording its earlier
// time after a later one would let a claim that came after it miss it, and a window hold one claim too
// many. It claims again with a fresh time.
func rateFits(pg bool, starts, nowMS, period, limit, rank string) string {
	latest := "(SELECT coalesce(max(value), 0) FROM json_each(" + starts + "))"
	if pg {
		latest = "(SELECT coalesce(max(t), 0) FROM unnest(" + starts + ") t)"
	}
	return "(" + rank + " + " + recentStarts(pg, starts, nowMS+" - "+period) + " <= " + limit + " AND " + latest + " <= " + nowMS + ")"
}

// createRateBucket makes sure the rate_buckets row of a rate-limited run exists, so that claims find it.
func (s *Store) createRateBucket(ctx context.Context, row *runRow) error {
	if row.RateLimit <= 0 {
		return nil
	}
	if _, err := s.execPrepared(ctx, "INSERT INTO rate_buckets (agent_name, bucket) VALUES (?, ?) ON CONFLICT DO NOTHING", row.AgentName, row.RateBucket); err != nil {
		return wrap(err, "rate bucket", row.ID)
	}
	return nil
}

// RateLimitStarts implements [store.Store].
func (s *Store) RateLimitStarts(ctx context.Context, agentName, bucket string, since time.Time) (int, error) {
	var n []int
	q := "SELECT " + recentStarts(s.pg, "b.starts", "?") + " FROM rate_buckets b WHERE b.agent_name = ? AND b.bucket = ?"
	if err := s.r.NewRaw(q, since.UnixMilli(), agentName, bucket).Scan(ctx, &n); err != nil {
		return 0, wrap(err, "rate bucket", agentName)
	}
	if len(n) == 0 {
		return 0, nil
	}
	return n[0], nil
}

// RateLimitedRuns implements [store.Store]; runs_rate_pending serves it.
func (s *Store) RateLimitedRuns(ctx context.Context, now time.Time) (map[string]int, error) {
	var rows []struct {
		AgentName string `bun:"agent_name"`
		N         int    `bun:"n"`
	}
	q := "SELECT r.agent_name, count(*) AS n FROM runs r JOIN rate_buckets b ON b.agent_name = r.agent_name AND b.bucket = r.rate_bucket" +
		" WHERE r.status = 'pending' AND r.rate_limit > 0 AND NOT r.parked AND r.run_at <= ?" +
		" AND " + recentStarts(s.pg, "b.starts", "? - r.rate_period_ms") + " >= r.rate_limit GROUP BY r.agent_name"
	if err := s.r.NewRaw(q, utc(now), now.UnixMilli()).Scan(ctx, &rows); err != nil {
		return nil, wrap(err, "rate-limited runs", "")
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.AgentName] = r.N
	}
	return out, nil
}
