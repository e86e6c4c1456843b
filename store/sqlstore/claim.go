package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// ClaimRuns moves up to p.Max pending, due runs the runner can execute to claimed, bound to the runner,
// highest priority and oldest first, within their concurrency limits, in one statement.
//
// The statement is an UPDATE whose targets are chosen from up to three probes. Each probe walks the
// partial index runs_claim (pending runs only, keyed by demand_runner_id, agent_type, priority, run_at,
// id) from the first entry under one (demand_runner_id, agent_type) key, filtered by the rest of
// [orchestrator.Demands.Matches], by run_at (due by p.Now) and by the limits (see [buildClaimSQL]), and
// yields at most p.Max candidates:
//
//   - deterministic runs pinned to this runner;
//   - AI runs pinned to this runner (when it accepts AI agents: resumed sessions are pinned);
//   - AI runs pinned to no runner (when it accepts AI agents).
//
// The first p.Max of those candidates, by priority, run_at and id, are claimed, less those past a limit.
// Runs pinned to other runners sit under other keys, so
// no number of them slows a claim down; only unpinned runs this runner cannot take for another reason (a
// demanded hostname, tag, ...) are stepped over. A deterministic run is always pinned (Matches refuses an
// unpinned one), and runs of any other agent type are never claimed.
//
// The statement has fixed text with bound parameters and is prepared once (per connection on
// PostgreSQL), so it is parsed and planned once: for a statement this size that is most of the cost.
//
// SQLite: the statement is atomic under SQLite's single writer (BEGIN IMMEDIATE).
//
// PostgreSQL: each probe locks its candidates FOR UPDATE SKIP LOCKED, so concurrent claimers pass over
// each other's candidates instead of queueing behind them, and a candidate whose claim committed meanwhile
// is re-checked (no longer pending) and passed over too. The UPDATE finds its rows by their ids alone (by
// primary key once runs has statistics; see buildClaimSQL): the probes' locks guarantee they are still
// pending. The locks of candidates that lose to older ones last until the statement ends, so a concurrent
// claim may find nothing but such rows: a claim that comes back empty checks the probes without locks and,
// when they find candidates, claims again (up to claimRetries times). An empty result therefore means nothing was claimable, not "everything was busy". A claim that
// took fewer than p.Max runs returns what it took.
func (s *Store) ClaimRuns(ctx context.Context, p store.ClaimParams) ([]*orchestrator.Run, error) {
	if s.batch != nil && !s.inTx {
		// A claim is a write: on SQLite it joins the batched commits rather than waiting for the
		// write connection between them.
		var runs []*orchestrator.Run
		err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
			var err error
			runs, err = tx.ClaimRuns(ctx, p)
			return err
		})
		return runs, err
	}
	runner := p.Runner
	if runner == nil || runner.ID == "" {
		return nil, errors.New("sqlstore: ClaimRuns needs a runner")
	}
	now := p.Now
	if now.IsZero() {
		now = utc(time.Now())
	}
	q := claimSQL[s.pg]
	args := claimArgs(s.pg, runner, now, max(p.Max, 1))
	for attempt := 0; ; attempt++ {
		var rows []runRow
		if err := s.queryPrepared(ctx, q.claim, args, &rows); err != nil {
			return nil, wrap(err, "claim for runner", runner.ID)
		}
		if len(rows) > 0 {
			// RETURNING gives no order.
			slices.SortFunc(rows, func(a, b runRow) int {
				return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.RunAt.Compare(b.RunAt), strings.Compare(a.ID, b.ID))
			})
			return domains(rows, (*runRow).domain)
		}
		if !s.pg || attempt >= claimRetries {
			break
		}
		// Were the candidates all locked by concurrent claims, or is there nothing to take?
		var ids []string
		if err := s.queryPrepared(ctx, q.probes, args[:claimProbeArgs], &ids); err != nil {
			return nil, wrap(err, "claim for runner", runner.ID)
		}
		if len(ids) == 0 {
			break
		}
	}
	return []*orchestrator.Run{}, nil
}

// claimRetries bounds how often a PostgreSQL claim that found every candidate locked by concurrent claims
// looks again (each time, those claims made progress).
const claimRetries = 20

// claimProbeArgs is the number of parameters of the probes: 1 runner id, 2-5 the runner's hostname,
// project dir, executor type and profile, 6 its tags, 7 whether it requires matching tags, 8 whether it
// accepts AI agents, 9 the claim time (runs due by then), 10 the claim time in Unix milliseconds (rate
// limit windows). The claim adds 11 the claimed status and 12 the most runs to take.
const claimProbeArgs = 10

func claimArgs(pg bool, runner *orchestrator.RunnerInfo, now time.Time, limit int) []any {
	var tags string
	if pg {
		tags = strings.Join(runner.Tags, ",") // tags hold no commas (orchestrator.Demands.Validate)
	} else {
		b, _ := json.Marshal(append([]string{}, runner.Tags...)) // [] rather than null for no tags
		tags = string(b)
	}
	return []any{
		runner.ID, runner.Hostname, runner.ProjectDir, runner.ExecutorType, runner.ExecutorProfile,
		tags, runner.RequireMatchingTags, runner.AcceptsAgents, formatTime(now), now.UnixMilli(),
		string(orchestrator.RunClaimed), limit,
	}
}

// claimSQL holds the claim statements per dialect (true: PostgreSQL).
var claimSQL = map[bool]struct{ claim, probes string }{false: buildClaimSQL(false), true: buildClaimSQL(true)}

// buildClaimSQL writes the claim statement of a dialect:
//
//	WITH k AS (the oldest p.Max candidates of the probes, by priority then run_at),
//	     sl AS (the run_slots rows the limited candidates count against),
//	     rb AS (the rate_buckets rows of the rate-limited candidates, see ratelimit.go),
//	     g AS (each candidate with its rank among the limited candidates of its agent, of its key, and of its rate bucket)
//	UPDATE runs SET (claimed) WHERE id IN (the candidates of g that fit their limits) RETURNING …
//
// A candidate under a limit fits when the row's count of claimed and running runs plus its rank is
// within the limit, for its agent's limit and for its key's; a run whose row is missing never fits. The
// probes step over runs whose limit is already full (by the counts they read), so a backlog held back by a
// limit does not hide the runs behind it; sl has the final word. With no limited candidate, sl is empty
// and g passes every candidate: a plain claim pays for a window over at most p.Max rows.
//
// On SQLite the statement runs alone under the single writer, so the counts it reads are current. On
// PostgreSQL sl locks its rows FOR UPDATE, in key order, and a row another claim (or a run's end) changed
// meanwhile is read in its newest committed version after the wait: two claims of one agent's runs take
// turns on its row, and the second sees the first's runs counted (the triggers of slotTriggers counted
// them in the first claim's transaction). rb serves rate limits the same way: a rate-limited candidate
// fits while the claim times of its bucket within its period, read from the locked row, plus its rank
// among the bucket's candidates stay within its limit (and the claim's time is not behind the bucket's
// latest claim: see rateFits). Ranks may over-count (a candidate refused by its agent's limit
// still ranks in its key), never under-count: a claim may take less than fits, never more.
func buildClaimSQL(pg bool) (q struct{ claim, probes string }) {
	arg := func(n int) string {
		if pg {
			return "$" + strconv.Itoa(n)
		}
		return "?" + strconv.Itoa(n)
	}
	flag := func(n int) string {
		if pg {
			return arg(n) + "::boolean"
		}
		return arg(n) + " <> 0"
	}
	// Every demanded tag is one the runner holds.
	tagHeld := "t.tag NOT IN (SELECT value FROM json_each(" + arg(6) + "))"
	if pg {
		tagHeld = "t.tag <> ALL(string_to_array(" + arg(6) + ", ','))"
	}
	now, nowMS := arg(9), arg(10)
	if pg {
		now += "::timestamptz"
		nowMS += "::bigint"
	}
	// The rest of Demands.Matches: every demanded field empty or the runner's, and every demanded tag
	// held; for runs pinned to no runner also at least one demanded tag, when the runner requires matching
	// tags (a run pinned to the runner always qualifies). Then the run must be due, and its limits not
	// full by the counts the statement reads.
	match := " AND r.demand_hostname IN ('', " + arg(2) + ") AND r.demand_project_dir IN ('', " + arg(3) + ")" +
		" AND r.demand_executor_type IN ('', " + arg(4) + ") AND r.demand_executor_profile IN ('', " + arg(5) + ")" +
		" AND (r.demand_tag_count = 0 OR NOT EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND " + tagHeld + "))" +
		" AND r.run_at <= " + now +
		" AND (r.agent_limit = 0 OR EXISTS (SELECT 1 FROM run_slots s WHERE s.agent_name = r.agent_name AND s.concurrency_key = '' AND s.active < r.agent_limit))" +
		" AND (r.concurrency_key = '' OR EXISTS (SELECT 1 FROM run_slots s WHERE s.agent_name = r.agent_name AND s.concurrency_key = r.concurrency_key AND s.active < r.key_limit))" +
		" AND (r.rate_limit = 0 OR EXISTS (SELECT 1 FROM rate_buckets b WHERE b.agent_name = r.agent_name AND b.bucket = r.rate_bucket AND " +
		rateFits(pg, "b.starts", nowMS, "r.rate_period_ms", "r.rate_limit", "1") + "))"
	requireTags := " AND (NOT (" + flag(7) + ") OR r.demand_tag_count > 0)"
	const cols = "id, priority, run_at, agent_name, agent_limit, concurrency_key, key_limit, rate_limit, rate_period_ms, rate_bucket"
	union := func(limit, lock string) string {
		var sb strings.Builder
		for i, p := range []struct{ pinned, agentType, gate string }{
			{arg(1), "deterministic", ""},
			{arg(1), "agent", " AND (" + flag(8) + ")"},
			{"''", "agent", " AND (" + flag(8) + ")" + requireTags},
		} {
			if i > 0 {
				sb.WriteString(" UNION ALL ")
			}
			// A derived table per probe: SQLite allows no ORDER BY/LIMIT, and PostgreSQL no FOR UPDATE, on a
			// member of a compound SELECT. status and agent_type are literals so that the planners can prove
			// the partial index applies; the gate is a constant, tested once.
			sb.WriteString("SELECT " + cols + " FROM (SELECT r.id, r.priority, r.run_at, r.agent_name, r.agent_limit, r.concurrency_key, r.key_limit, r.rate_limit, r.rate_period_ms, r.rate_bucket FROM runs r" +
				" WHERE r.status = 'pending' AND NOT r.parked AND r.demand_runner_id = " + p.pinned + " AND r.agent_type = '" + p.agentType + "'" +
				p.gate + match + " ORDER BY r.priority, r.run_at, r.id LIMIT " + limit + lock + ") p" + strconv.Itoa(i))
		}
		return sb.String()
	}
	// The columns are named rather than *: a prepared statement must keep its result shape when a newer
	// replica adds a column (PostgreSQL refuses to run it otherwise: "cached plan must not change result
	// type").
	returning := strings.Join(columns(runRow{}), ", ")
	set := "UPDATE runs SET status = " + arg(11) + ", runner_id = " + arg(1) + ", claimed_at = " + now + ", claimed_ms = " + nowMS
	limit, lock, materialized := arg(12), " FOR UPDATE SKIP LOCKED", " MATERIALIZED"
	if !pg {
		// The limit is an expression, not a bare parameter: SQLite plans with the value of a bare LIMIT
		// parameter and so prepares the statement again whenever that value changes (most claims).
		limit, lock, materialized = "("+arg(12)+" + 0)", "", ""
	}
	slotLock := ""
	if pg {
		slotLock = " FOR UPDATE"
	}
	order := "ORDER BY priority, run_at, id"
	with := "WITH k AS" + materialized + " (SELECT " + cols + " FROM (" + union(limit, lock) + ") u " + order + " LIMIT " + limit + ")," +
		" sl AS" + materialized + " (SELECT agent_name, concurrency_key, active FROM run_slots WHERE (agent_name, concurrency_key) IN" +
		" (SELECT agent_name, '' FROM k WHERE agent_limit > 0 UNION SELECT agent_name, concurrency_key FROM k WHERE concurrency_key <> '')" +
		" ORDER BY agent_name, concurrency_key" + slotLock + ")," +
		" rb AS" + materialized + " (SELECT agent_name, bucket, starts FROM rate_buckets WHERE (agent_name, bucket) IN" +
		" (SELECT agent_name, rate_bucket FROM k WHERE rate_limit > 0) ORDER BY agent_name, bucket" + slotLock + ")," +
		" g AS (SELECT " + cols + "," +
		" sum(CASE WHEN agent_limit > 0 THEN 1 ELSE 0 END) OVER (PARTITION BY agent_name " + order + " ROWS UNBOUNDED PRECEDING) AS ra," +
		" row_number() OVER (PARTITION BY agent_name, concurrency_key " + order + ") AS rk," +
		" sum(CASE WHEN rate_limit > 0 THEN 1 ELSE 0 END) OVER (PARTITION BY agent_name, rate_bucket " + order + " ROWS UNBOUNDED PRECEDING) AS rr FROM k)"
	fits := "SELECT id FROM g WHERE (agent_limit = 0 OR ra + (SELECT active FROM sl WHERE sl.agent_name = g.agent_name AND sl.concurrency_key = '') <= agent_limit)" +
		" AND (concurrency_key = '' OR rk + (SELECT active FROM sl WHERE sl.agent_name = g.agent_name AND sl.concurrency_key = g.concurrency_key) <= key_limit)" +
		" AND (rate_limit = 0 OR EXISTS (SELECT 1 FROM rb WHERE rb.agent_name = g.agent_name AND rb.bucket = g.rate_bucket AND " +
		rateFits(pg, "rb.starts", nowMS, "g.rate_period_ms", "g.rate_limit", "g.rr") + "))"
	if pg {
		// = ANY(ARRAY(…)) rather than IN (…): the candidates are computed once, as an init plan, and the
		// UPDATE probes the primary key with them, whatever the planner guesses of the LIMIT. One exception:
		// planned while runs is a few pages (a new database), a sequential scan is cheaper than the ten
		// probes the planner guesses, and PostgreSQL keeps that generic plan until runs is next analysed
		// (autovacuum does it within a minute or two of the first writes; BENCHMARKS.md has the cost).
		q.claim = with + " " + set + " WHERE id = ANY(ARRAY(" + fits + ")) RETURNING " + returning
	} else {
		q.claim = with + " " + set + " WHERE status = 'pending' AND id IN (" + fits + ") RETURNING " + returning
	}
	q.probes = "SELECT id FROM (" + union("1", "") + ") k"
	return q
}

// columns returns the column names of a row struct, from its bun tags.
func columns(row any) []string {
	var cols []string
	t := reflect.TypeOf(row)
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("bun") == "" {
			cols = append(cols, columns(reflect.New(f.Type).Elem().Interface())...) // embedded columns, as bun reads them
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("bun"), ",")
		if name != "" && !strings.HasPrefix(name, "table:") {
			cols = append(cols, name)
		}
	}
	return cols
}

// queryPrepared runs query as a prepared statement and scans its rows into dest (a struct, which then
// holds the first row, or a slice) through bun. No row leaves dest as it was.
func (s *Store) queryPrepared(ctx context.Context, query string, args []any, dest any) error {
	if err := s.checkArgs(args); err != nil {
		return err
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return err
	}
	return s.scan(ctx, stmt, args, dest)
}

// scan runs a prepared query and scans its rows into dest through bun.
func (s *Store) scan(ctx context.Context, stmt *sql.Stmt, args []any, dest any) error {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	return s.dbW.ScanRows(ctx, rows, dest) // closes rows
}
