package sqlstore

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// The claim's probes walk the partial index runs_claim and nothing walks the runs table or another index
// of it: that is what keeps a claim's cost independent of the runs pinned to other runners.
func TestClaimPlanSQLite(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	runner := &orchestrator.RunnerInfo{ID: "lnch_a", Hostname: "h", Tags: []string{"gpu"}, AcceptsAgents: true}
	lines := sqlitePlan(t, s, claimSQL[false].claim, claimArgs(false, runner, utc(time.Now()), 8)...)
	uses := 0
	for _, detail := range lines {
		if strings.Contains(detail, "USING INDEX runs_claim") {
			uses++
		}
		if strings.HasPrefix(detail, "SCAN r") || strings.HasPrefix(detail, "SCAN runs") ||
			(strings.HasPrefix(detail, "SEARCH") && !strings.Contains(detail, "runs_claim") &&
				!strings.Contains(detail, "(id=?)") && !strings.Contains(detail, "(run_id=?)") &&
				!strings.Contains(detail, "(agent_name=? AND concurrency_key=?)") &&
				!strings.Contains(detail, "(agent_name=? AND bucket=?)") && !strings.Contains(detail, "json_each VIRTUAL TABLE")) {
			t.Errorf("the claim plan has a walk of runs outside runs_claim: %q", detail)
		}
	}
	if uses != 3 {
		t.Errorf("runs_claim used by %d probes, want 3", uses)
	}
	if t.Failed() {
		t.Logf("plan:\n%s", strings.Join(lines, "\n"))
	}
}

// Every poll looks for stop requests: the look must visit only runs it can find, never a walk of runs or of
// the runner's history in runs_runner.
func TestStopProbePlanSQLite(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	detail := strings.Join(sqlitePlan(t, s, stopProbeSQL, "lnch_a"), "\n")
	// SQLite, without statistics, prefers runs_runner with both columns bound: that visits only the
	// runner's claimed and running runs, which is as good.
	if !strings.HasPrefix(detail, "SEARCH runs USING INDEX runs_stop (runner_id=?)") &&
		!strings.HasPrefix(detail, "SEARCH runs USING INDEX runs_runner (runner_id=? AND status=?)") {
		t.Errorf("the stop probe's plan is %q, want a search of runs_stop by runner, or of runs_runner by runner and status", detail)
	}
}

// On PostgreSQL the probe is a prepared statement, planned while the runs table may still be small and
// unanalysed: then, before runs_stop, the plan matched runner_id alone in runs_runner and filtered every
// run the runner had held, on every poll. Custom and generic plans must both search runs_stop.
func TestStopProbePlanPostgres(t *testing.T) {
	t.Parallel()
	s := pgStore(t, "UTC")
	conn := planConn(t, s, `INSERT INTO runs (id, session_id, agent_name, agent_type, type, status, runner_id, created_at)
		SELECT 'run_' || i, 'ses_' || i, 'a', 'deterministic', 'start', 'completed', 'lnch_a', now() FROM generate_series(1, 50) AS i`)
	for mode, plan := range preparedPlans(t, conn, "stop_probe", s.dialectSQL(stopProbeSQL), "'lnch_a'") {
		if !strings.Contains(plan, "using runs_stop on runs") {
			t.Errorf("%s: the stop probe does not search runs_stop:\n%s", mode, plan)
		}
	}
}

// A run's guarded update (its start and end reports: by id, guarded by status and holder) must find the
// run by its primary key, whatever the statistics were when it was prepared. Planned on a nearly empty
// runs table, both planners took runs_runner by runner_id alone when the holder was a bare column, and
// PostgreSQL kept that generic plan until runs was next analysed: each report read every run the runner
// had ever held.
func TestRunUpdatePlanPostgres(t *testing.T) {
	t.Parallel()
	s := pgStore(t, "UTC")
	conn := planConn(t, s, `INSERT INTO runs (id, session_id, agent_name, agent_type, type, status, runner_id, created_at)
		SELECT 'run_' || i, 'ses_' || i, 'a', 'deterministic', 'start', 'claimed', 'lnch_a', now() FROM generate_series(1, 3) AS i`)
	now := utc(time.Now())
	status, msg := orchestrator.RunCompleted, ""
	q := runUpdate("run_2", []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}, "lnch_a", store.RunUpdate{Status: &status, Error: &msg, EndedAt: &now})
	var params []string
	for _, a := range append(q.args, q.wargs...) {
		params = append(params, "'"+strings.ReplaceAll(a.(string), "'", "''")+"'")
	}
	for mode, plan := range preparedPlans(t, conn, "run_update", s.dialectSQL(q.query(runBriefColumns)), strings.Join(params, ", ")) {
		if !strings.Contains(plan, "using runs_pkey on runs") {
			t.Errorf("%s: the run's guarded update does not find the run by its primary key:\n%s", mode, plan)
		}
	}
}

// planConn returns a connection of s's pool, after running setup on it.
func planConn(t *testing.T, s *Store, setup string) bun.Conn {
	t.Helper()
	conn, err := s.DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	return conn
}

// preparedPlans prepares query on conn as name and returns the plans PostgreSQL makes for executing it
// with args (SQL literals), generic and custom, by plan_cache_mode.
func preparedPlans(t *testing.T, conn bun.Conn, name, query, args string) map[string]string {
	t.Helper()
	ctx := t.Context()
	if _, err := conn.ExecContext(ctx, "PREPARE "+name+" AS "+query); err != nil {
		t.Fatal(err)
	}
	plans := map[string]string{}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE "+name+"("+args+")")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		plans[mode] = strings.Join(plan, "\n")
	}
	return plans
}

// On PostgreSQL, too, each of the claim's three probes walks runs_claim, in the custom and the generic
// plan, whether the runs carry priorities, delays and limits or not; run_slots is read by its key.
func TestClaimPlanPostgres(t *testing.T) {
	t.Parallel()
	s := pgStore(t, "UTC")
	conn := planConn(t, s, `INSERT INTO runs (id, session_id, agent_name, agent_type, type, status, created_at, run_at, priority, agent_limit)
		SELECT 'run_' || i, 'ses_' || i, 'a', 'agent', 'start', 'pending', now(), now(), 1 + i % 4, i % 2 FROM generate_series(1, 200) AS i`)
	if _, err := conn.ExecContext(t.Context(), "ANALYZE runs"); err != nil {
		t.Fatal(err)
	}
	runner := &orchestrator.RunnerInfo{ID: "lnch_a", Hostname: "h", Tags: []string{"gpu"}, AcceptsAgents: true}
	var params []string
	for _, a := range claimArgs(true, runner, utc(time.Now()), 8) {
		switch v := a.(type) {
		case string:
			params = append(params, "'"+strings.ReplaceAll(v, "'", "''")+"'")
		case bool:
			params = append(params, map[bool]string{true: "'true'", false: "'false'"}[v])
		case int:
			params = append(params, strconv.Itoa(v))
		case int64:
			params = append(params, strconv.FormatInt(v, 10))
		}
	}
	for mode, plan := range preparedPlans(t, conn, "claim", claimSQL[true].claim, strings.Join(params, ", ")) {
		if n := strings.Count(plan, "runs_claim on runs"); n != 3 {
			t.Errorf("%s: runs_claim walked by %d probes, want 3:\n%s", mode, n, plan)
		}
		// The probes (runs r, r_1, r_2) never scan runs. The UPDATE's own target may be a scan of a
		// table this small (a few pages; see buildClaimSQL), not of a real one.
		if strings.Contains(plan, "Seq Scan on runs r") {
			t.Errorf("%s: a probe scans runs:\n%s", mode, plan)
		}
	}
}

// The coordinator's sweeps select pending runs every half second, and parked ones in every full sweep:
// those selections must walk runs_pending or runs_parked in order, never the runs table (the whole
// history). A poll's look for the runs its runner holds searches runs_runner, and sorts what it finds
// (no more than the runner has slots).
func TestListRunsPlansSQLite(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	pending := []orchestrator.RunStatus{orchestrator.RunPending}
	now := time.Now()
	cursor := &runRow{ID: "run_a", CreatedAt: now.Add(-time.Hour)}
	for _, c := range []struct {
		name  string
		f     orchestrator.RunFilter
		after *runRow
		want  string
		sorts bool
	}{
		{"no-match sweep", orchestrator.RunFilter{Statuses: pending, CreatedBefore: now, Limit: 1000}, nil, "runs_pending", false},
		{"no-match sweep, next page", orchestrator.RunFilter{Statuses: pending, CreatedBefore: now, Limit: 1000}, cursor, "runs_pending", false},
		{"park sweep", orchestrator.RunFilter{Statuses: pending, Parked: new(false), CreatedBefore: now, Limit: 1000}, cursor, "runs_pending", false},
		{"unpark", orchestrator.RunFilter{Statuses: pending, Parked: new(true)}, nil, "runs_parked", false},
		{"runs a runner holds", orchestrator.RunFilter{RunnerID: "lnch_a", Statuses: []orchestrator.RunStatus{orchestrator.RunClaimed}, Limit: 8}, nil, "runs_runner", true},
	} {
		q := listRunsQuery(s.DB().NewSelect().Model((*runRow)(nil)), c.f, c.after).String()
		lines := sqlitePlan(t, s, q)
		plan := strings.Join(lines, "\n")
		if !strings.HasPrefix(plan, "SEARCH ru USING INDEX "+c.want) && !strings.HasPrefix(plan, "SCAN ru USING INDEX "+c.want) ||
			strings.Contains(plan, "TEMP B-TREE") != c.sorts || len(lines) != 1+btoi(c.sorts) {
			t.Errorf("%s: the plan of %s is\n%s\nwant one walk of %s, in order", c.name, q, plan, c.want)
		}
	}
}

// sqliteStore opens a store on a new SQLite file, closed when the test ends.
func sqliteStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(t.Context(), filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sqlitePlan returns the lines of SQLite's plan for query with args (EXPLAIN QUERY PLAN), in order.
func sqlitePlan(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.DB().DB.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
