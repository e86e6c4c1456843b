package scaleout

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// TestCallbackFanOut: an AI parent starts four async_callback children and ends; the children end at the
// same moment, their reports spread over two coordinator replicas on one PostgreSQL schema. Every child's
// report must be accepted and every callback delivered (the parent resumed with all of them, over one or
// more resume runs).
//
// This is the regression test of a race deliverCallbacks (coordinator/callbacks.go) once lost: it read the
// parent as ended, lost the guarded resume to a sibling that resumed it first, and returned that conflict
// from the child's finishRun, so the child's report was refused and its run stayed running. It now takes the
// parent's row first and treats a lost resume as "parent busy".
func TestCallbackFanOut(t *testing.T) {
	dsn := postgresSchema(t)
	ctx := context.Background()
	var coords []*coordinator.Coordinator
	var db *sqlstore.Store
	for range 2 {
		st, err := sqlstore.New(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		db = st
		c, err := coordinator.New(coordinator.Config{Store: st, Notifier: st.Notifier()})
		if err != nil {
			t.Fatal(err)
		}
		coords = append(coords, c)
	}
	a := coords[0]
	if _, err := a.CreateAgent(ctx, &orchestrator.Blueprint{Name: "ai", Type: orchestrator.AgentTypeAgent, Description: "an AI agent"}); err != nil {
		t.Fatal(err)
	}
	accepts := true
	reg, err := a.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/p", ExecutorType: "agent",
		MaxConcurrent: 100, AcceptsAgents: &accepts})
	if err != nil {
		t.Fatal(err)
	}
	rid := reg.RunnerID
	claim := func(n int) []*orchestrator.Assignment {
		t.Helper()
		var out []*orchestrator.Assignment
		for len(out) < n {
			w, err := a.PollWork(ctx, orchestrator.PollParams{RunnerID: rid, Max: n - len(out), Wait: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Runs) == 0 {
				t.Fatalf("claimed %d runs of %d", len(out), n)
			}
			out = append(out, w.Runs...)
		}
		return out
	}
	report := func(c *coordinator.Coordinator, runID string, st orchestrator.RunStatus) error {
		return c.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: runID, Status: st, Result: &orchestrator.Result{ResultText: "ok"}})
	}
	const rounds, children = 20, 4
	for round := range rounds {
		parent, err := a.StartRun(ctx, orchestrator.StartRunParams{AgentName: "ai", Prompt: "parent"})
		if err != nil {
			t.Fatal(err)
		}
		p := claim(1)[0]
		if err := report(a, p.Run.ID, orchestrator.RunRunning); err != nil {
			t.Fatal(err)
		}
		for range children {
			if _, err := a.StartRun(ctx, orchestrator.StartRunParams{AgentName: "ai", Prompt: "child",
				Mode: orchestrator.ModeAsyncCallback, ParentSessionID: parent.SessionID}); err != nil {
				t.Fatal(err)
			}
		}
		if err := report(a, p.Run.ID, orchestrator.RunCompleted); err != nil {
			t.Fatal(err)
		}
		kids := claim(children)
		for _, k := range kids {
			if err := report(a, k.Run.ID, orchestrator.RunRunning); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i, k := range kids {
			wg.Go(func() {
				if err := report(coords[i%2], k.Run.ID, orchestrator.RunCompleted); err != nil {
					t.Errorf("round %d: a child's completion was refused: %v", round, err)
				}
			})
		}
		wg.Wait()
		// The parent is resumed with the callbacks, perhaps over several runs: complete them.
		for {
			w, err := a.PollWork(ctx, orchestrator.PollParams{RunnerID: rid, Max: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Runs) == 0 {
				break
			}
			for _, r := range w.Runs {
				if err := report(a, r.Run.ID, orchestrator.RunCompleted); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	pending, err := db.ListCallbacks(ctx, store.CallbackFilter{Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := db.ListCallbacks(ctx, store.CallbackFilter{})
	if err != nil {
		t.Fatal(err)
	}
	open, err := db.ListRuns(ctx, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{
		orchestrator.RunPending, orchestrator.RunClaimed, orchestrator.RunRunning}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != rounds*children || len(pending) != 0 || len(open) != 0 {
		t.Errorf("%d callbacks recorded (want %d), %d undelivered, %d runs still open", len(all), rounds*children, len(pending), len(open))
	}
}
