package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentorchestrator/orchestrator/store"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Submission control: priorities, delayed runs, concurrency limits and idempotency keys.
//
// A run's priority and run_at (when it becomes claimable: its creation time unless it was delayed) lead
// the claim index after its equality columns, so the claim's probes walk each priority's due runs oldest
// first and stop at the first run not yet due.
//
// Concurrency limits are counted in run_slots: one row per agent with a limit (concurrency_key '') and one
// per (agent, concurrency key), holding how many of the runs it counts are claimed or running. Triggers on
// runs keep the count: a run counted there that enters claimed or running adds one, one that leaves them
// (or is deleted while in them) takes one away, whichever statement changes it. The rows are created
// with the runs that need them and are never deleted, so a claim always finds them. The claim reads the
// counts (on PostgreSQL locking the rows, see [buildClaimSQL]) and claims only what fits.

// submissionControl is migration 20. It is Go for the reason parkedRuns is, and because the triggers
// differ per dialect.
func submissionControl(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
	pg := m.DB().Dialect().Name() == dialect.PG
	timeType, epoch, withoutRowID := "TIMESTAMP", "'1970-01-01 00:00:00+00:00'", " WITHOUT ROWID"
	if pg {
		timeType, epoch, withoutRowID = "TIMESTAMPTZ", "'1970-01-01 00:00:00+00'", ""
	}
	return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, c := range []struct{ column, def string }{
			{"priority", "BIGINT NOT NULL DEFAULT 1"},
			// A run written by a replica that predates this migration gets the epoch: claimable at once.
			{"run_at", timeType + " NOT NULL DEFAULT " + epoch},
			{"concurrency_key", "TEXT NOT NULL DEFAULT ''"},
			{"agent_limit", "BIGINT NOT NULL DEFAULT 0"},
			{"key_limit", "BIGINT NOT NULL DEFAULT 0"},
		} {
			if err := addColumn(ctx, m, tx, "runs", c.column, c.def); err != nil {
				return err
			}
		}
		stmts := []string{
			"UPDATE runs SET run_at = created_at WHERE status = 'pending' AND run_at < created_at",
			"DROP INDEX IF EXISTS runs_claim",
			"CREATE INDEX IF NOT EXISTS runs_claim ON runs (demand_runner_id, agent_type, priority, run_at, id) WHERE status = 'pending' AND NOT parked",
			// Pending delayed runs by due time: when a parked poll must next be woken.
			"CREATE INDEX IF NOT EXISTS runs_delayed ON runs (run_at) WHERE status = 'pending' AND run_at > created_at",
			"CREATE TABLE IF NOT EXISTS run_slots (agent_name TEXT NOT NULL, concurrency_key TEXT NOT NULL, active BIGINT NOT NULL DEFAULT 0," +
				" PRIMARY KEY (agent_name, concurrency_key))" + withoutRowID,
			"CREATE TABLE IF NOT EXISTS idempotency_keys (id TEXT PRIMARY KEY, request_hash TEXT NOT NULL, run_id TEXT NOT NULL," +
				" session_id TEXT NOT NULL, created_at " + timeType + " NOT NULL)",
			"CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at, id)",
		}
		stmts = append(stmts, slotTriggers(pg)...)
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return fmt.Errorf("%s: %w", st, err)
			}
		}
		return nil
	})
}

// slotTriggers keeps run_slots.active equal to the number of claimed or running runs each row counts.
// The WHEN conditions let every other write of runs (unlimited runs, changes within claimed and running)
// pass without running the trigger.
func slotTriggers(pg bool) []string {
	const active = "('claimed', 'running')"
	limited := func(r string) string { return "(" + r + ".agent_limit > 0 OR " + r + ".concurrency_key <> '')" }
	if !pg {
		body := func(r, delta string) string {
			return " BEGIN" +
				" UPDATE run_slots SET active = active " + delta + " WHERE agent_name = " + r + ".agent_name AND concurrency_key = '' AND " + r + ".agent_limit > 0;" +
				" UPDATE run_slots SET active = active " + delta + " WHERE agent_name = " + r + ".agent_name AND concurrency_key = " + r + ".concurrency_key AND " + r + ".concurrency_key <> '';" +
				" END"
		}
		return []string{
			"CREATE TRIGGER IF NOT EXISTS runs_slots_take AFTER UPDATE OF status ON runs WHEN " + limited("NEW") +
				" AND NEW.status IN " + active + " AND OLD.status NOT IN " + active + body("NEW", "+ 1"),
			"CREATE TRIGGER IF NOT EXISTS runs_slots_release AFTER UPDATE OF status ON runs WHEN " + limited("OLD") +
				" AND OLD.status IN " + active + " AND NEW.status NOT IN " + active + body("OLD", "- 1"),
			"CREATE TRIGGER IF NOT EXISTS runs_slots_delete AFTER DELETE ON runs WHEN " + limited("OLD") +
				" AND OLD.status IN " + active + body("OLD", "- 1"),
		}
	}
	// The agent's row is updated before the key's: the order the claim locks them in.
	fn := `CREATE OR REPLACE FUNCTION orchestrator_run_slots() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	r runs;
	d bigint;
BEGIN
	IF TG_OP = 'DELETE' THEN
		r := OLD; d := -1;
	ELSIF NEW.status IN ` + active + ` THEN
		r := NEW; d := 1;
	ELSE
		r := OLD; d := -1;
	END IF;
	IF r.agent_limit > 0 THEN
		UPDATE run_slots SET active = active + d WHERE agent_name = r.agent_name AND concurrency_key = '';
	END IF;
	IF r.concurrency_key <> '' THEN
		UPDATE run_slots SET active = active + d WHERE agent_name = r.agent_name AND concurrency_key = r.concurrency_key;
	END IF;
	RETURN NULL;
END
$$`
	return []string{
		fn,
		"DROP TRIGGER IF EXISTS runs_slots_update ON runs",
		"CREATE TRIGGER runs_slots_update AFTER UPDATE OF status ON runs FOR EACH ROW WHEN (" + limited("NEW") +
			" AND (OLD.status IN " + active + ") <> (NEW.status IN " + active + ")) EXECUTE FUNCTION orchestrator_run_slots()",
		"DROP TRIGGER IF EXISTS runs_slots_delete ON runs",
		"CREATE TRIGGER runs_slots_delete AFTER DELETE ON runs FOR EACH ROW WHEN (" + limited("OLD") +
			" AND OLD.status IN " + active + ") EXECUTE FUNCTION orchestrator_run_slots()",
	}
}

// createSlots makes sure the run_slots rows that count the run exist, so that claims find them.
func (s *Store) createSlots(ctx context.Context, row *runRow) error {
	if err := s.createRateBucket(ctx, row); err != nil {
		return err
	}
	if !row.limited() {
		return nil
	}
	keys := make([]string, 0, 2)
	if row.AgentLimit > 0 {
		keys = append(keys, "")
	}
	if row.ConcurrencyKey != "" {
		keys = append(keys, row.ConcurrencyKey)
	}
	for _, k := range keys {
		if _, err := s.execPrepared(ctx, "INSERT INTO run_slots (agent_name, concurrency_key, active) VALUES (?, ?, 0) ON CONFLICT DO NOTHING", row.AgentName, k); err != nil {
			return wrap(err, "run slots", row.ID)
		}
	}
	return nil
}

// execPrepared runs a statement that returns no rows as a prepared statement.
func (s *Store) execPrepared(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := s.checkArgs(args); err != nil {
		return nil, err
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt.ExecContext(ctx, args...)
}

// NextRunAt implements [store.Store]; runs_delayed serves it.
func (s *Store) NextRunAt(ctx context.Context, after time.Time) (time.Time, error) {
	var at []time.Time
	err := s.r.NewSelect().Model((*runRow)(nil)).Column("run_at").
		Where("status = 'pending' AND run_at > created_at AND run_at > ?", utc(after)).
		OrderExpr("run_at").Limit(1).Scan(ctx, &at)
	if err != nil || len(at) == 0 {
		return time.Time{}, wrap(err, "next run_at", "")
	}
	return utc(at[0]), nil
}

type idempotencyKeyRow struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	ID          string    `bun:"id,pk"`
	RequestHash string    `bun:"request_hash"`
	RunID       string    `bun:"run_id"`
	SessionID   string    `bun:"session_id"`
	CreatedAt   time.Time `bun:"created_at"`
}

// CreateIdempotencyKey implements [store.Store]. The key is the table's primary key: of two
// transactions inserting it, the second waits for the first (PostgreSQL) or runs after it (SQLite's one
// writer) and gets ErrConflict when the first committed.
func (s *Store) CreateIdempotencyKey(ctx context.Context, k *store.IdempotencyKey) error {
	row := &idempotencyKeyRow{ID: k.Key, RequestHash: k.RequestHash, RunID: k.RunID, SessionID: k.SessionID, CreatedAt: utc(k.CreatedAt)}
	return wrap(s.insert(ctx, row), "idempotency key", k.Key)
}

// GetIdempotencyKey implements [store.Store].
func (s *Store) GetIdempotencyKey(ctx context.Context, key string) (*store.IdempotencyKey, error) {
	var row idempotencyKeyRow
	if err := s.getRow(ctx, &row, "id", key); err != nil {
		return nil, wrap(err, "idempotency key", key)
	}
	return &store.IdempotencyKey{Key: row.ID, RequestHash: row.RequestHash, RunID: row.RunID, SessionID: row.SessionID, CreatedAt: utc(row.CreatedAt)}, nil
}

// DeleteIdempotencyKeys implements [store.Store], oldest first, in batches of at most
// retentionChunk keys.
func (s *Store) DeleteIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	total := 0
	for limit > 0 {
		chunk := min(limit, retentionChunk)
		sel := s.w.NewSelect().Model((*idempotencyKeyRow)(nil)).Column("id").
			Where("created_at < ?", utc(before)).OrderExpr("created_at, id").Limit(int64(chunk))
		res, err := s.w.NewDelete().Model((*idempotencyKeyRow)(nil)).Where("id IN (?)", sel).Exec(ctx)
		if err != nil {
			return total, wrap(err, "idempotency keys", "")
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, wrap(err, "idempotency keys", "")
		}
		total += int(n)
		if int(n) < chunk {
			break
		}
		limit -= int(n)
	}
	return total, nil
}
