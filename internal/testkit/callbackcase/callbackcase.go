// Package callbackcase plays, for tests, the case a sync answer gets wrong when it waits for a session
// instead of its run: a parent AI session whose first run ends while a callback from a child started in
// async_callback mode is already recorded, so that the coordinator resumes the parent the moment that run
// ends and the session's result is soon the resumed run's.
//
// The test starts the parent (in sync mode, through whatever path it tests) and [Case.Drive] acts as
// both runners over the in-process protocol (poll, report), so that the order of events is fixed by
// channels and not by timing.
package callbackcase

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// The results of the parent's two runs.
const (
	FirstResult   = "first run: asked the child"
	ResumedResult = "resumed run: heard from the child"
)

// Parent is the AI agent whose session the test starts; Child the deterministic agent it delegates to.
const (
	Parent = "callback-parent"
	Child  = "callback-child"
)

// Case holds the two runners' registrations.
type Case struct {
	coord    orchestrator.Coordinator
	aiRunner string
	fnRunner string
}

// Setup creates the parent agent and registers an AI runner and a runner offering the child agent on
// coord (an in-process coordinator: the runners act through it).
func Setup(ctx context.Context, coord orchestrator.Coordinator) (*Case, error) {
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: Parent, Description: "Delegates and hears back"}); err != nil {
		return nil, err
	}
	ai, err := coord.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "callback-ai", ExecutorType: "test"})
	if err != nil {
		return nil, err
	}
	fn, err := coord.RegisterRunner(ctx, &orchestrator.RunnerRegistration{
		Hostname: "callback-fn", ExecutorType: "deterministic",
		Blueprints: []*orchestrator.Blueprint{{Name: Child, Type: orchestrator.AgentTypeDeterministic, Command: "child"}},
	})
	if err != nil {
		return nil, err
	}
	return &Case{coord: coord, aiRunner: ai.RunnerID, fnRunner: fn.RunnerID}, nil
}

// Played is how a played case ended: the first run's id, or why the case could not be played.
type Played struct {
	FirstRunID string
	Err        error
}

// Play sets the case up on coord, failing tb if it cannot, and drives it in the background (see
// [Case.Drive]); the channel yields the outcome when it is over ([FirstRun] waits for it). The end of
// tb's context ends a case left half played.
func Play(tb testing.TB, coord orchestrator.Coordinator, release <-chan struct{}) <-chan Played {
	tb.Helper()
	ctx := tb.Context()
	c, err := Setup(ctx, coord)
	if err != nil {
		tb.Fatalf("set the callback case up: %v", err)
	}
	out := make(chan Played, 1)
	go func() {
		id, err := c.Drive(ctx, release)
		out <- Played{id, err}
	}()
	return out
}

// Drive plays the parent's session once the test has started it: its first run starts the child in
// async_callback mode, the child ends (its callback is recorded while the parent runs), and — once
// release is closed — the first run completes with FirstResult, which resumes the session at once; the
// resumed run completes with ResumedResult. It returns the first run's id.
//
// release lets a test hold the first run until the path it tests has stopped its first, short wait
// (close it at once when there is none).
func (c *Case) Drive(ctx context.Context, release <-chan struct{}) (string, error) {
	first, err := c.claim(ctx, c.aiRunner)
	if err != nil {
		return "", err
	}
	child, err := c.coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: Child, Mode: orchestrator.ModeAsyncCallback, ParentSessionID: first.SessionID,
	})
	if err != nil {
		return "", fmt.Errorf("start the child: %w", err)
	}
	childRun, err := c.claim(ctx, c.fnRunner)
	if err != nil {
		return "", err
	}
	if childRun.ID != child.RunID {
		return "", fmt.Errorf("the child's runner got run %s, want %s", childRun.ID, child.RunID)
	}
	if err := c.end(ctx, c.fnRunner, childRun.ID, &orchestrator.Result{ResultType: "deterministic", ResultData: json.RawMessage(`{"sum":5}`)}); err != nil {
		return "", err
	}
	select {
	case <-release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if err := c.end(ctx, c.aiRunner, first.ID, &orchestrator.Result{ResultType: "agent", ResultText: FirstResult}); err != nil {
		return "", err
	}
	resumed, err := c.claim(ctx, c.aiRunner)
	if err != nil {
		return "", err
	}
	if resumed.SessionID != first.SessionID || resumed.Type != orchestrator.RunTypeResume {
		return "", fmt.Errorf("the AI runner got %s run %s of session %s, want the resume of session %s", resumed.Type, resumed.ID, resumed.SessionID, first.SessionID)
	}
	if err := c.end(ctx, c.aiRunner, resumed.ID, &orchestrator.Result{ResultType: "agent", ResultText: ResumedResult}); err != nil {
		return "", err
	}
	return first.ID, nil
}

// claim waits for the runner's next run and reports it started.
func (c *Case) claim(ctx context.Context, runnerID string) (*orchestrator.Run, error) {
	for {
		w, err := c.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: runnerID, Max: 1, Wait: time.Minute})
		if err != nil {
			return nil, fmt.Errorf("poll: %w", err)
		}
		if len(w.Runs) == 0 {
			continue // the poll's wait elapsed
		}
		run := w.Runs[0].Run
		if err := c.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: runnerID, RunID: run.ID, Status: orchestrator.RunRunning}); err != nil {
			return nil, fmt.Errorf("report run %s started: %w", run.ID, err)
		}
		return run, nil
	}
}

func (c *Case) end(ctx context.Context, runnerID, runID string, res *orchestrator.Result) error {
	if err := c.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: runnerID, RunID: runID, Status: orchestrator.RunCompleted, Result: res}); err != nil {
		return fmt.Errorf("report run %s completed: %w", runID, err)
	}
	return nil
}

// StartSignal is a Coordinator that tells when its first StartRun has answered (Answered closes): a
// server under test is given it, and the case holds the parent's first run until then, so that the wait
// under test surely begins before that run ends.
type StartSignal struct {
	orchestrator.Coordinator
	once     sync.Once
	answered chan struct{}
}

// NewStartSignal wraps coord.
func NewStartSignal(coord orchestrator.Coordinator) *StartSignal {
	return &StartSignal{Coordinator: coord, answered: make(chan struct{})}
}

// Answered is closed once the first StartRun has returned.
func (s *StartSignal) Answered() <-chan struct{} { return s.answered }

// StartRun implements [orchestrator.Coordinator].
func (s *StartSignal) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	res, err := s.Coordinator.StartRun(ctx, p)
	s.once.Do(func() { close(s.answered) })
	return res, err
}

// FirstRun waits for the case to be played to its end and returns the first run's id.
func FirstRun(tb testing.TB, played <-chan Played) string {
	tb.Helper()
	p := <-played
	if p.Err != nil {
		tb.Fatalf("playing the callback case: %v", p.Err)
	}
	return p.FirstRunID
}

// CheckAnswer checks that got (what answered) is the first run's completed outcome, and that the session
// has since moved on to the resumed run's, read through c (else the case did not happen and the test
// proves nothing).
func CheckAnswer(tb testing.TB, c orchestrator.Coordinator, what string, got *orchestrator.StartRunResult, firstRunID string) {
	tb.Helper()
	if got.RunID != firstRunID || got.Status != orchestrator.SessionCompleted || got.Result == nil || got.Result.ResultText != FirstResult {
		tb.Errorf("%s = run %s %s %+v, want run %s completed with %q", what, got.RunID, got.Status, got.Result, firstRunID, FirstResult)
	}
	s, err := c.WaitSession(context.Background(), got.SessionID, time.Minute)
	if err != nil {
		tb.Fatalf("WaitSession: %v", err)
	}
	if s.CurrentRunID == firstRunID || s.Result == nil || s.Result.ResultText != ResumedResult {
		tb.Fatalf("the session was not resumed: current run %s, result %+v", s.CurrentRunID, s.Result)
	}
}
