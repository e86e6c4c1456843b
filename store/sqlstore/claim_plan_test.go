package sqlstore

import (
	"path/filepath"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// The claim's probes walk the partial index runs_claim and nothing walks the runs table or another index
// of it: that is what keeps a claim's cost independent of the runs pinned to other runners.
func TestClaimPlanSQLite(t *testing.T) {
	t.Parallel()
	s, err := New(t.Context(), filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runner := &orchestrator.RunnerInfo{ID: "lnch_a", Hostname: "h", Tags: []string{"gpu"}, AcceptsAgents: true}
	rows, err := s.DB().DB.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+claimSQL[false].claim, claimArgs(false, runner, orchestrator.Now(), 8)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	uses := 0
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
		if strings.Contains(detail, "USING INDEX runs_claim") {
			uses++
		}
		if strings.HasPrefix(detail, "SCAN r") || strings.HasPrefix(detail, "SCAN runs") ||
			(strings.HasPrefix(detail, "SEARCH") && !strings.Contains(detail, "runs_claim") &&
				!strings.Contains(detail, "(id=?)") && !strings.Contains(detail, "(run_id=?)")) {
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

// Every poll looks for stop requests: the look must be a search of runs_runner, not a walk of runs.
func TestStopProbePlanSQLite(t *testing.T) {
	t.Parallel()
	s, err := New(t.Context(), filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var id, parent, notUsed int
	var detail string
	err = s.DB().DB.QueryRowContext(t.Context(), "EXPLAIN QUERY PLAN "+stopProbeSQL, "lnch_a", "claimed", "running").
		Scan(&id, &parent, &notUsed, &detail)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(detail, "SEARCH runs USING INDEX runs_runner (runner_id=? AND status=?)") {
		t.Errorf("the stop probe's plan is %q, want a search of runs_runner by runner and status", detail)
	}
}
