package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// endNextRun claims the next run of runnerID and reports it ended with status.
func endNextRun(t *testing.T, c orchestrator.Coordinator, runnerID string, status orchestrator.RunStatus) {
	t.Helper()
	w := poll(t, c, runnerID, 1)
	if len(w.Runs) != 1 {
		t.Fatalf("poll: %d runs, want 1", len(w.Runs))
	}
	exit := 0
	if status != orchestrator.RunCompleted {
		exit = 1
	}
	report(t, c, orchestrator.RunReport{RunnerID: runnerID, RunID: w.Runs[0].Run.ID, Status: status,
		Result: &orchestrator.Result{ResultType: "deterministic", ExitCode: &exit}})
}

// TestRerunSession: a re-run is a new session of the same agent with the original's parameters, a merge
// patch applied and validated again, that names the original; a live session cannot be re-run.
func TestRerunSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	orig := start(t, c, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example","depth":5}`),
		Metadata: json.RawMessage(`{"ticket":"T-1"}`), Priority: 3,
	})

	_, err := c.RerunSession(ctx, orig.SessionID, orchestrator.RerunParams{})
	if !errors.Is(err, orchestrator.ErrConflict) || orchestrator.ErrorCode(err) != "session_active" {
		t.Fatalf("re-run of a pending session: %v (code %q), want ErrConflict session_active", err, orchestrator.ErrorCode(err))
	}
	endNextRun(t, c, a.RunnerID, orchestrator.RunFailed)

	res, err := c.RerunSession(ctx, orig.SessionID, orchestrator.RerunParams{Parameters: json.RawMessage(`{"depth":null,"url":"https://b.example"}`)})
	if err != nil {
		t.Fatalf("RerunSession: %v", err)
	}
	if res.SessionID == orig.SessionID || res.Status != orchestrator.SessionPending {
		t.Fatalf("RerunSession = %+v, want a new pending session", res)
	}
	s, err := c.GetSession(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	// depth was removed by the patch, so the schema's default (2) applies again.
	if s.RerunOf != orig.SessionID || s.AgentName != "web-crawler" || string(s.Parameters) != `{"depth":2,"url":"https://b.example"}` ||
		string(s.Metadata) != `{"ticket":"T-1"}` || s.ParentSessionID != "" {
		t.Errorf("re-run session = rerun_of %q agent %q parameters %s metadata %s parent %q; want rerun_of %s, the patched parameters, the metadata, no parent",
			s.RerunOf, s.AgentName, s.Parameters, s.Metadata, s.ParentSessionID, orig.SessionID)
	}
	if run, err := c.GetRun(ctx, res.RunID); err != nil || run.Priority != 3 {
		t.Errorf("re-run's run = %+v, %v; want priority 3 as the original's", run, err)
	}

	// Validated again: a patch that breaks the schema is refused with every error, and creates nothing.
	before, _ := c.ListSessions(ctx, orchestrator.SessionFilter{})
	_, err = c.RerunSession(ctx, orig.SessionID, orchestrator.RerunParams{Parameters: json.RawMessage(`{"url":null,"depth":"deep"}`)})
	var verr *orchestrator.ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) != 2 {
		t.Errorf("re-run with parameters that break the schema: %v, want a validation error with 2 errors", err)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`} {
		if _, err := c.RerunSession(ctx, orig.SessionID, orchestrator.RerunParams{Parameters: json.RawMessage(bad)}); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("re-run with patch %s: %v, want ErrInvalid", bad, err)
		}
	}
	after, _ := c.ListSessions(ctx, orchestrator.SessionFilter{})
	if len(after.Sessions) != len(before.Sessions) {
		t.Errorf("refused re-runs created sessions: %d before, %d after", len(before.Sessions), len(after.Sessions))
	}
	if _, err := c.RerunSession(ctx, "ses_missing", orchestrator.RerunParams{}); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("re-run of an unknown session: %v, want ErrNotFound", err)
	}
}

// TestRerunSessions: the bulk re-run selects ended sessions by status, agent and age, newest first up to
// its limit; a dry run changes nothing; bad filters are refused.
func TestRerunSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	other := crawler()
	other.Name = "other"
	a := register(t, c, "host-a", crawler(), other)
	params := json.RawMessage(`{"url":"https://a.example"}`)
	var failed []string // oldest first
	for _, status := range []orchestrator.RunStatus{orchestrator.RunFailed, orchestrator.RunCompleted, orchestrator.RunFailed, orchestrator.RunFailed} {
		clk.Advance(time.Minute)
		res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: params})
		endNextRun(t, c, a.RunnerID, status)
		if status == orchestrator.RunFailed {
			failed = append(failed, res.SessionID)
		}

	}
	start(t, c, orchestrator.StartRunParams{AgentName: "other", Parameters: params})
	endNextRun(t, c, a.RunnerID, orchestrator.RunFailed)
	cutoff := clk.Now().Add(-150 * time.Second) // after the first two sessions, before the last two

	dry, err := c.RerunSessions(ctx, orchestrator.RerunFilter{AgentName: "web-crawler", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	newestFirst := slices.Clone(failed)
	slices.Reverse(newestFirst)
	if dry.Count != 3 || !slices.Equal(dry.SessionIDs, newestFirst) || len(dry.Reruns) != 0 {
		t.Errorf("dry run = %+v, want the 3 failed web-crawler sessions, newest first (%v), and no re-runs", dry, newestFirst)
	}
	if page, _ := c.ListSessions(ctx, orchestrator.SessionFilter{Statuses: []orchestrator.SessionStatus{orchestrator.SessionPending}}); len(page.Sessions) != 0 {
		t.Errorf("a dry run started %d sessions", len(page.Sessions))
	}

	limited, err := c.RerunSessions(ctx, orchestrator.RerunFilter{AgentName: "web-crawler", Limit: 1, DryRun: true})
	if err != nil || !slices.Equal(limited.SessionIDs, newestFirst[:1]) {
		t.Errorf("limit 1 = %+v, %v; want the newest failed session", limited, err)
	}

	got, err := c.RerunSessions(ctx, orchestrator.RerunFilter{AgentName: "web-crawler", CreatedAfter: &cutoff})
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 2 || !slices.Equal(got.SessionIDs, newestFirst[:2]) || len(got.Reruns) != 2 || len(got.Errors) != 0 {
		t.Fatalf("re-run created after the cutoff = %+v, want the 2 newest failed sessions re-run", got)
	}
	for i, r := range got.Reruns {
		s, err := c.GetSession(ctx, r.SessionID)
		if err != nil || s.RerunOf != got.SessionIDs[i] || r.RerunOf != got.SessionIDs[i] || s.Status != orchestrator.SessionPending {
			t.Errorf("re-run %d = %+v (%+v, %v), want a pending session that re-runs %s", i, r, s, err, got.SessionIDs[i])
		}
	}

	for _, f := range []orchestrator.RerunFilter{
		{Statuses: []orchestrator.SessionStatus{orchestrator.SessionRunning}},
		{Limit: -1},
		{Limit: orchestrator.MaxRerunBatch + 1},
	} {
		if _, err := c.RerunSessions(ctx, f); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("RerunSessions(%+v): %v, want ErrInvalid", f, err)
		}
	}
}
