package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/internal/testkit/callbackcase"
	"github.com/agentorchestrator/orchestrator/store"
)

func TestSyncStartAnswersItsOwnRunWhenACallbackResumesTheSession(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	release := make(chan struct{})
	close(release)
	ids := callbackcase.Play(t, c, release)
	res, err := c.StartRun(t.Context(), orchestrator.StartRunParams{
		AgentName: callbackcase.Parent, Prompt: "delegate", Mode: orchestrator.ModeSync, Wait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	callbackcase.CheckAnswer(t, c, "the sync answer", res, callbackcase.FirstRun(t, ids))
}

func TestWaitRunAnswersItsOwnRunWhenACallbackResumesTheSession(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := newCoordinator(t, coordinator.Config{})
	release := make(chan struct{})
	ids := callbackcase.Play(t, c, release)
	started, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: callbackcase.Parent, Prompt: "delegate"})
	if err != nil {
		t.Fatal(err)
	}

	// Before the run ends, a wait of zero answers with the session's status and no result.
	now, err := c.WaitRun(ctx, started.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if now.RunID != started.RunID || now.SessionID != started.SessionID || now.Status.Ended() || now.Result != nil {
		t.Errorf("WaitRun(0) of a live run = %+v, want its ids, a live status and no result", now)
	}

	// A parked wait is woken by the run's end; the session is resumed in the same transaction.
	close(release)
	res, err := c.WaitRun(ctx, started.RunID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	first := callbackcase.FirstRun(t, ids)
	callbackcase.CheckAnswer(t, c, "WaitRun", res, first)

	// Once the session has moved on, the run's own result is still its answer.
	again, err := c.WaitRun(ctx, first, 0)
	if err != nil {
		t.Fatal(err)
	}
	callbackcase.CheckAnswer(t, c, "WaitRun after the resume", again, first)
}

func TestWaitRunUnknownRun(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	_, err := c.WaitRun(t.Context(), "run_unknown", time.Minute)
	if !errors.Is(err, orchestrator.ErrNotFound) || orchestrator.ErrorCode(err) != "run_not_found" {
		t.Fatalf("WaitRun(unknown) = %v, want ErrNotFound run_not_found", err)
	}
}

// observedStore is a store that counts reads of runs and sessions and, once armed, runs a function
// before its next read of a session (to put a run's end between WaitRun's reads).
type observedStore struct {
	store.Store
	runs, sessions    atomic.Int64
	beforeSessionRead atomic.Pointer[func()]
}

func (s *observedStore) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	s.runs.Add(1)
	return s.Store.GetRun(ctx, id)
}

func (s *observedStore) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	s.sessions.Add(1)
	if f := s.beforeSessionRead.Swap(nil); f != nil {
		(*f)()
	}
	return s.Store.GetSession(ctx, id)
}

// TestWaitRunEndBetweenReads: a run that ends between WaitRun's read of the run (still live) and its read
// of the session (ended) is answered with its outcome, never with an ended status and no result.
func TestWaitRunEndBetweenReads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := &observedStore{Store: newStore(t)}
	c := newCoordinator(t, coordinator.Config{Store: st})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 {
		t.Fatalf("poll: %d runs, want 1", len(w.Runs))
	}
	end := func() {
		if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultText: "done"}}); err != nil {
			t.Errorf("ReportRun: %v", err)
		}
	}
	st.beforeSessionRead.Store(&end)
	got, err := c.WaitRun(ctx, res.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.beforeSessionRead.Load() != nil {
		t.Fatal("the run's end was not put between the reads")
	}
	if got.Status != orchestrator.SessionCompleted || got.Result == nil || got.Result.ResultText != "done" {
		t.Errorf("WaitRun = %+v (result %+v), want completed with the run's result", got, got.Result)
	}
}

// TestSyncStartReadsTheSessionOnly: a sync start waits on its session alone, one read before it parks and
// one when the run's end wakes it (it read the run three times and the session once).
func TestSyncStartReadsTheSessionOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := &observedStore{Store: newStore(t)}
	c := newCoordinator(t, coordinator.Config{Store: st})
	a := register(t, c, "host-a", crawler())
	type answer struct {
		res *orchestrator.StartRunResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeSync,
			Wait: time.Minute, Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		answered <- answer{res, err}
	}()
	var w *orchestrator.Work
	for w == nil || len(w.Runs) == 0 { // the start may not have created its run yet: a long poll waits for it
		w = poll(t, c, a.RunnerID, 1)
	}
	// The start's first look, before it parks, reads the session.
	testkit.WaitFor(t, 10*time.Second, "the sync start to read its session before parking", func() bool { return st.sessions.Load() > 0 })
	runs, sessions := st.runs.Load(), st.sessions.Load()
	if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: w.Runs[0].Run.ID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultText: "done"}}); err != nil {
		t.Fatal(err)
	}
	got := <-answered
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.res.Status != orchestrator.SessionCompleted || got.res.Result == nil || got.res.Result.ResultText != "done" {
		t.Fatalf("sync start = %+v (result %+v), want completed with the run's result", got.res, got.res.Result)
	}
	if r, s := st.runs.Load()-runs, st.sessions.Load()-sessions; r != 0 || s != 1 || sessions != 1 {
		t.Errorf("the sync start read the session %d times before parking and %d after, and the run %d times; want 1, 1 and 0", sessions, s, r)
	}
}
