package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// crawl starts the web crawler, as a child of parent when it is not empty.
func crawl(t *testing.T, c orchestrator.Coordinator, parent string, detached bool) *orchestrator.StartRunResult {
	t.Helper()
	return start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", ParentSessionID: parent, Detached: detached,
		Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
}

func session(t *testing.T, c orchestrator.Coordinator, id string) *orchestrator.Session {
	t.Helper()
	s, err := c.GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", id, err)
	}
	return s
}

// stopReason returns the reason of the session's stop_requested event, "" when it has none.
func stopReason(t *testing.T, c orchestrator.Coordinator, id string) string {
	t.Helper()
	evs, err := c.ListEvents(context.Background(), id, 0, 100, 0)
	if err != nil {
		t.Fatalf("ListEvents(%s): %v", id, err)
	}
	for _, ev := range evs {
		if ev.Type == orchestrator.EventStopRequested {
			var d struct{ Reason string }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.Reason
		}
	}
	return ""
}

// runningTree starts root ─┬─ a (running) ── a1 (pending)
//
//	├─ d (detached, pending) ── d1 (pending)
//	└─ e (completed)
//
// with the root running, all on runner r.
func runningTree(t *testing.T, c orchestrator.Coordinator) (r *orchestrator.Registration, ids map[string]*orchestrator.StartRunResult) {
	t.Helper()
	r = register(t, c, "host-a", crawler())
	ids = map[string]*orchestrator.StartRunResult{}
	ids["root"] = crawl(t, c, "", false)
	run := func(name string) {
		w := poll(t, c, r.RunnerID, 1)
		if len(w.Runs) != 1 || w.Runs[0].Run.ID != ids[name].RunID {
			t.Fatalf("poll for %s got %+v", name, w.Runs)
		}
		report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: ids[name].RunID, Status: orchestrator.RunRunning})
	}
	run("root")
	ids["a"] = crawl(t, c, ids["root"].SessionID, false)
	run("a")
	ids["e"] = crawl(t, c, ids["root"].SessionID, false)
	run("e")
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: ids["e"].RunID, Status: orchestrator.RunCompleted})
	ids["a1"] = crawl(t, c, ids["a"].SessionID, false)
	ids["d"] = crawl(t, c, ids["root"].SessionID, true)
	ids["d1"] = crawl(t, c, ids["d"].SessionID, false)
	return r, ids
}

func TestStopCascades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	r, ids := runningTree(t, c)

	if _, err := c.StopSession(ctx, ids["root"].SessionID); err != nil {
		t.Fatal(err)
	}
	// The pending grandchild ended at once, saying why; the running child and the root were asked to stop.
	if s := session(t, c, ids["a1"].SessionID); s.Status != orchestrator.SessionStopped || s.ErrorCode != orchestrator.CodeParentStopped {
		t.Errorf("pending grandchild = %s (%q), want stopped (parent_stopped)", s.Status, s.ErrorCode)
	}
	for _, name := range []string{"a", "a1"} {
		if got := stopReason(t, c, ids[name].SessionID); got != orchestrator.CodeParentStopped {
			t.Errorf("%s's stop_requested reason = %q, want parent_stopped", name, got)
		}
	}
	w := poll(t, c, r.RunnerID, 0)
	want := map[string]bool{ids["root"].SessionID: true, ids["a"].SessionID: true}
	if len(w.Stop) != 2 || !want[w.Stop[0]] || !want[w.Stop[1]] {
		t.Errorf("runner's stops = %v, want the root and a", w.Stop)
	}
	// The detached child and its own child live on; the completed child is left as it was.
	for _, name := range []string{"d", "d1"} {
		if s := session(t, c, ids[name].SessionID); s.Status != orchestrator.SessionPending || !(s.Detached == (name == "d")) {
			t.Errorf("%s = %s detached=%v, want pending (a detached subtree outlives its parent)", name, s.Status, s.Detached)
		}
	}
	if s := session(t, c, ids["e"].SessionID); s.Status != orchestrator.SessionCompleted {
		t.Errorf("completed child = %s, want completed", s.Status)
	}
	// The runner reports the child stopped: its session says it was its parent's stop.
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: ids["a"].RunID, Status: orchestrator.RunStopped, Error: "stopped"})
	if s := session(t, c, ids["a"].SessionID); s.Status != orchestrator.SessionStopped || s.ErrorCode != orchestrator.CodeParentStopped {
		t.Errorf("running child after its runner stopped it = %s (%q), want stopped (parent_stopped)", s.Status, s.ErrorCode)
	}
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: ids["root"].RunID, Status: orchestrator.RunStopped, Error: "stopped"})
	if s := session(t, c, ids["root"].SessionID); s.Status != orchestrator.SessionStopped || s.ErrorCode != "" {
		t.Errorf("root = %s (%q), want stopped with no tree reason", s.Status, s.ErrorCode)
	}
}

func TestStopWithoutCascade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	r := register(t, c, "host-a", crawler())
	root := crawl(t, c, "", false)
	child := crawl(t, c, root.SessionID, false)
	running := crawl(t, c, "", false)
	runningChild := crawl(t, c, running.SessionID, false)
	if _, err := c.StopSession(ctx, root.SessionID, orchestrator.StopOpts{NoCascade: true}); err != nil {
		t.Fatal(err)
	}
	if s := session(t, c, child.SessionID); s.Status != orchestrator.SessionPending {
		t.Errorf("child after a stop without cascade = %s, want pending", s.Status)
	}
	if s := session(t, c, root.SessionID); s.Status != orchestrator.SessionStopped {
		t.Errorf("root = %s, want stopped", s.Status)
	}
	// The end the stop caused (the pending root ended at once) does not cascade either.
	w := poll(t, c, r.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].Run.SessionID != child.SessionID {
		t.Errorf("the child was not left to run: %+v", w.Runs)
	}

	// A running session stopped without cascade: its end, reported later, leaves its child alone too.
	w = poll(t, c, r.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].Run.SessionID != running.SessionID {
		t.Fatalf("poll got %+v, want %s", w.Runs, running.SessionID)
	}
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: running.RunID, Status: orchestrator.RunRunning})
	if _, err := c.StopSession(ctx, running.SessionID, orchestrator.StopOpts{NoCascade: true}); err != nil {
		t.Fatal(err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: running.RunID, Status: orchestrator.RunStopped, Error: "stopped"})
	if s := session(t, c, running.SessionID); s.Status != orchestrator.SessionStopped || s.ErrorCode != "" {
		t.Errorf("session stopped without cascade = %s (%q), want stopped, no tree reason", s.Status, s.ErrorCode)
	}
	if s := session(t, c, runningChild.SessionID); s.Status != orchestrator.SessionPending {
		t.Errorf("its child = %s, want pending", s.Status)
	}
}

func TestParentFailureStopsChildren(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	r, ids := runningTree(t, c)
	report(t, c, orchestrator.RunReport{RunnerID: r.RunnerID, RunID: ids["root"].RunID, Status: orchestrator.RunFailed, Error: "boom"})
	if s := session(t, c, ids["a1"].SessionID); s.Status != orchestrator.SessionStopped || s.ErrorCode != orchestrator.CodeParentFailed {
		t.Errorf("pending grandchild = %s (%q), want stopped (parent_failed)", s.Status, s.ErrorCode)
	}
	if got := stopReason(t, c, ids["a"].SessionID); got != orchestrator.CodeParentFailed {
		t.Errorf("running child's stop reason = %q, want parent_failed", got)
	}
	if s := session(t, c, ids["d"].SessionID); s.Status != orchestrator.SessionPending {
		t.Errorf("detached child = %s, want pending", s.Status)
	}
}

func TestTreeLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{MaxTreeDepth: 2, MaxTreeSessions: 100})
	register(t, c, "host-a", crawler())
	limitOf := func(err error) string {
		var e *orchestrator.Error
		if !errors.As(err, &e) || e.Code != orchestrator.CodeTreeLimitExceeded || !errors.Is(err, orchestrator.ErrConflict) {
			t.Fatalf("error = %v, want a conflict tree_limit_exceeded", err)
		}
		return e.Details["limit"].(string)
	}
	startChild := func(parent string) (*orchestrator.StartRunResult, error) {
		return c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", ParentSessionID: parent,
			Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	}

	// The coordinator's depth: root 0, child 1, grandchild 2, great-grandchild refused.
	root := crawl(t, c, "", false)
	if s := session(t, c, root.SessionID); s.RootSessionID != root.SessionID || s.Depth != 0 ||
		s.Limits == nil || *s.Limits != (orchestrator.TreeLimits{MaxDepth: 2, MaxSessions: 100}) {
		t.Fatalf("root = root %q depth %d limits %+v, want itself, 0, the coordinator's", s.RootSessionID, s.Depth, s.Limits)
	}
	child := crawl(t, c, root.SessionID, false)
	grand := crawl(t, c, child.SessionID, false)
	if s := session(t, c, grand.SessionID); s.RootSessionID != root.SessionID || s.Depth != 2 {
		t.Fatalf("grandchild = root %q depth %d, want %s, 2", s.RootSessionID, s.Depth, root.SessionID)
	}
	if _, err := startChild(grand.SessionID); limitOf(err) != "max_depth" {
		t.Errorf("depth 3 refused by %s, want max_depth", limitOf(err))
	}

	// A root's tighter limits, inherited: max_depth 1 refuses grandchildren, max_sessions 3 (the root
	// counted) a third child; looser ones than the coordinator's are cut to it.
	tight := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`),
		Limits: &orchestrator.TreeLimits{MaxDepth: 1, MaxSessions: 3}})
	c1 := crawl(t, c, tight.SessionID, false)
	if _, err := startChild(c1.SessionID); limitOf(err) != "max_depth" {
		t.Errorf("a grandchild under max_depth 1 refused by the wrong limit")
	}
	crawl(t, c, tight.SessionID, false)
	if _, err := startChild(tight.SessionID); limitOf(err) != "max_sessions" {
		t.Errorf("a fourth session under max_sessions 3 refused by the wrong limit")
	}
	loose := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`),
		Limits: &orchestrator.TreeLimits{MaxDepth: 50}})
	if s := session(t, c, loose.SessionID); s.Limits.MaxDepth != 2 {
		t.Errorf("a root asking for max_depth 50 got %d, want the coordinator's 2", s.Limits.MaxDepth)
	}

	// What only a root may ask, and what only a child may.
	for name, p := range map[string]orchestrator.StartRunParams{
		"limits on a child":  {ParentSessionID: root.SessionID, Limits: &orchestrator.TreeLimits{MaxDepth: 1}},
		"detached root":      {Detached: true},
		"negative max_depth": {Limits: &orchestrator.TreeLimits{MaxDepth: -1}},
	} {
		p.AgentName, p.Parameters = "web-crawler", json.RawMessage(`{"url":"https://a.example"}`)
		if _, err := c.StartRun(ctx, p); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("%s: error = %v, want invalid", name, err)
		}
	}
}
