//go:build linux

package e2e

import (
	"net/http"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// A run's run_started is its first event whatever path its executor's events take. Here claude
// (e2e/internal/fakeclaude) posts an event through the runner's gateway before it prints its first line:
// that event reaches the coordinator well before the runner's started report (which waits for the run's
// first event through the runner, or a quarter second), and still comes after run_started. Each resume
// is a new run and starts the same way.
func TestRunStartedIsFirstEvent(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startClaudeRunner(co, "")
	admin := co.admin()
	admin.json("POST", "/agents", map[string]any{"name": "poster", "type": "agent", "description": "posts an event at once"}, http.StatusCreated, nil)

	params := map[string]any{"prompt": "go", "post_event": "posted through the gateway"}
	first := admin.startRun(map[string]any{"agent_name": "poster", "parameters": params, "mode": "async_poll"})
	if r := admin.result(first.SessionID); r.Status != "completed" {
		t.Fatalf("the run: %s", mustJSON(t, r))
	}
	resumed := admin.startRun(map[string]any{"agent_name": "poster", "type": "resume", "session_id": first.SessionID, "prompt": "again"})
	if r := admin.result(first.SessionID); r.Status != "completed" {
		t.Fatalf("the resumed run: %s", mustJSON(t, r))
	}

	// Split the session's events into its runs: each begins with run_started and ends with run_ended.
	evs := admin.events(first.SessionID)
	var runs [][]*orchestrator.Event
	open := false
	for _, e := range evs {
		if !open {
			runs = append(runs, nil)
			open = true
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], e)
		if e.Type == orchestrator.EventRunEnded {
			open = false
		}
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs in the events, want 2: %s", len(runs), mustJSON(t, evs))
	}
	for i, run := range runs {
		if run[0].Type != orchestrator.EventRunStarted {
			t.Errorf("run %d begins with %s, want run_started: %s", i+1, run[0].Type, mustJSON(t, run))
		}
		want := []string{first.RunID, resumed.RunID}[i]
		var d struct {
			RunID string `json:"run_id"`
		}
		if err := run[0].DecodeData(&d); err != nil || d.RunID != want {
			t.Errorf("run %d: run_started names run %q, want %s", i+1, d.RunID, want)
		}
	}
	if len(runs[0]) < 2 || runs[0][1].Type != "progress" {
		t.Errorf("the first run's second event is not the event claude posted: %s", mustJSON(t, runs[0]))
	}
}
