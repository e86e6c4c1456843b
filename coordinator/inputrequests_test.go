package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// gated starts a web-crawler run that waits for approval and returns it with its open request.
func gated(t *testing.T, c *coordinator.Coordinator, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, *orchestrator.InputRequest) {
	t.Helper()
	if p.AgentName == "" {
		p.AgentName, p.Parameters = "web-crawler", json.RawMessage(`{"url":"https://a.example"}`)
	}
	p.RequireApproval = true
	res := start(t, c, p)
	if res.Status != orchestrator.SessionWaiting {
		t.Fatalf("gated start answered status %s, want waiting", res.Status)
	}
	reqs, err := c.ListInputRequests(context.Background(), orchestrator.InputRequestFilter{SessionID: res.SessionID, Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen}})
	if err != nil || len(reqs) != 1 {
		t.Fatalf("open requests of the gated session: %v, %v; want one", reqs, err)
	}
	r := reqs[0]
	if r.Kind != orchestrator.InputApproval || r.RunID != res.RunID || string(r.Schema) != orchestrator.ApprovalSchema {
		t.Fatalf("gate request %+v: want an approval of run %s with the approval schema", r, res.RunID)
	}
	return res, r
}

func answer(t *testing.T, c *coordinator.Coordinator, id, body string) *orchestrator.InputRequest {
	t.Helper()
	r, err := c.AnswerInputRequest(context.Background(), id, orchestrator.AnswerParams{Answer: json.RawMessage(body), AnsweredBy: "client:test"})
	if err != nil {
		t.Fatalf("AnswerInputRequest(%s, %s): %v", id, body, err)
	}
	return r
}

func sessionIs(t *testing.T, c *coordinator.Coordinator, id string, want orchestrator.SessionStatus) *orchestrator.Session {
	t.Helper()
	s, err := c.GetSession(context.Background(), id)
	if err != nil || s.Status != want {
		t.Fatalf("session %s: %+v, %v; want status %s", id, s, err, want)
	}
	return s
}

func TestApprovalGateHoldsTheRunUntilApproved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	res, r := gated(t, c, orchestrator.StartRunParams{})

	// No poll gets the held run, and the sweeps (park, unpark, no-match) leave it alone.
	if w := poll(t, c, a.RunnerID, 5); len(w.Runs) != 0 {
		t.Fatalf("a runner got a run waiting for approval: %+v", w.Runs)
	}
	c.Sweep(ctx, true)
	if w := poll(t, c, a.RunnerID, 5); len(w.Runs) != 0 {
		t.Fatalf("after a sweep a runner got a run waiting for approval: %+v", w.Runs)
	}

	// An invalid answer is refused with every error and changes nothing.
	_, err := c.AnswerInputRequest(ctx, r.ID, orchestrator.AnswerParams{Answer: json.RawMessage(`{"approved":"yes","extra":1}`)})
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "answer_validation_failed" || !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("invalid answer: %v, want answer_validation_failed", err)
	}
	if fes, _ := oe.Details["validation_errors"].([]orchestrator.FieldError); len(fes) != 2 || fes[0].Path == "" {
		t.Fatalf("invalid answer's validation_errors = %#v, want two with paths", oe.Details["validation_errors"])
	}
	sessionIs(t, c, res.SessionID, orchestrator.SessionWaiting)

	// A poll parked before the approval is woken by it.
	got := make(chan *orchestrator.Work, 1)
	go func() {
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: a.RunnerID, Max: 1, Wait: time.Minute})
		if err != nil {
			t.Errorf("PollWork: %v", err)
		}
		got <- w
	}()
	closed := answer(t, c, r.ID, `{"approved":true,"comment":"go"}`)
	if closed.Status != orchestrator.InputAnswered || closed.AnsweredBy != "client:test" || closed.ClosedAt == nil {
		t.Fatalf("answered request: %+v", closed)
	}
	sessionIs(t, c, res.SessionID, orchestrator.SessionPending)
	select {
	case w := <-got:
		if len(w.Runs) != 1 || w.Runs[0].Run.ID != res.RunID {
			t.Fatalf("poll after the approval got %+v, want run %s", w, res.RunID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the approval did not wake the parked poll")
	}

	// A second answer is refused: the first stands.
	_, err = c.AnswerInputRequest(ctx, r.ID, orchestrator.AnswerParams{Answer: json.RawMessage(`{"approved":false}`)})
	if !errors.Is(err, orchestrator.ErrConflict) || orchestrator.ErrorCode(err) != "request_closed" {
		t.Fatalf("second answer: %v, want request_closed", err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted, Result: &orchestrator.Result{ResultText: "ok"}})
	sessionIs(t, c, res.SessionID, orchestrator.SessionCompleted)
}

func TestApprovalRejectedFailsTheSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	res, r := gated(t, c, orchestrator.StartRunParams{})
	answer(t, c, r.ID, `{"approved":false,"comment":"not on a Friday"}`)
	s := sessionIs(t, c, res.SessionID, orchestrator.SessionFailed)
	if s.ErrorCode != "rejected" || s.Error != "approval rejected: not on a Friday (by client:test)" {
		t.Fatalf("rejected session: error_code %q, error %q", s.ErrorCode, s.Error)
	}
	if run, _ := c.GetRun(ctx, res.RunID); run.Status != orchestrator.RunFailed || run.RunnerID != "" {
		t.Fatalf("rejected run: %+v, want failed without a runner", run)
	}
	if w := poll(t, c, a.RunnerID, 5); len(w.Runs) != 0 {
		t.Fatalf("a rejected run reached a runner: %+v", w.Runs)
	}
}

func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	register(t, c, "host-a", crawler())
	res, r := gated(t, c, orchestrator.StartRunParams{ApprovalTimeoutSeconds: 60})
	if r.ExpiresAt == nil {
		t.Fatal("gate with a timeout has no expires_at")
	}
	c.Sweep(ctx, false)
	sessionIs(t, c, res.SessionID, orchestrator.SessionWaiting)
	clk.Advance(61 * time.Second)
	c.Sweep(ctx, false)
	s := sessionIs(t, c, res.SessionID, orchestrator.SessionFailed)
	if s.ErrorCode != "approval_timeout" {
		t.Fatalf("expired gate: error_code %q, want approval_timeout", s.ErrorCode)
	}
	got, err := c.GetInputRequest(ctx, r.ID, 0)
	if err != nil || got.Status != orchestrator.InputExpired {
		t.Fatalf("expired request: %+v, %v", got, err)
	}
	if _, err := c.AnswerInputRequest(ctx, r.ID, orchestrator.AnswerParams{Answer: json.RawMessage(`{"approved":true}`)}); orchestrator.ErrorCode(err) != "request_closed" {
		t.Fatalf("answer after expiry: %v, want request_closed", err)
	}
}

func TestBlueprintApprovalAndStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	bp := crawler()
	bp.Approval = &orchestrator.ApprovalPolicy{Required: true, TimeoutSeconds: 3600}
	register(t, c, "host-a", bp)
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	if res.Status != orchestrator.SessionWaiting {
		t.Fatalf("start of an agent that requires approval: status %s, want waiting", res.Status)
	}
	reqs, _ := c.ListInputRequests(ctx, orchestrator.InputRequestFilter{SessionID: res.SessionID})
	if len(reqs) != 1 || reqs[0].ExpiresAt == nil {
		t.Fatalf("requests: %+v, want one with the blueprint's deadline", reqs)
	}
	// Waiting on the request wakes when the session is stopped: its gate is cancelled.
	got := make(chan *orchestrator.InputRequest, 1)
	go func() {
		r, err := c.GetInputRequest(ctx, reqs[0].ID, time.Minute)
		if err != nil {
			t.Errorf("GetInputRequest: %v", err)
		}
		got <- r
	}()
	if _, err := c.StopSession(ctx, res.SessionID); err != nil {
		t.Fatal(err)
	}
	sessionIs(t, c, res.SessionID, orchestrator.SessionStopped)
	select {
	case r := <-got:
		if r.Status != orchestrator.InputCancelled {
			t.Fatalf("request after the stop: %s, want cancelled", r.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stop did not wake the request's waiter")
	}
}

func TestQuestionFromARunningAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})

	// A session whose run has not started cannot ask.
	if _, err := c.AskHuman(ctx, orchestrator.AskParams{SessionID: res.SessionID, Prompt: "?"}); orchestrator.ErrorCode(err) != "session_not_running" {
		t.Fatalf("question of a pending session: %v, want session_not_running", err)
	}
	poll(t, c, a.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})

	for _, bad := range []orchestrator.AskParams{
		{SessionID: res.SessionID},
		{SessionID: res.SessionID, Prompt: "x", Schema: json.RawMessage(`{"type":"strang"}`)},
		{SessionID: res.SessionID, Prompt: "x", TimeoutSeconds: -1},
	} {
		if _, err := c.AskHuman(ctx, bad); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("AskHuman(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	q, err := c.AskHuman(ctx, orchestrator.AskParams{SessionID: res.SessionID, Prompt: "Which region?",
		Schema: json.RawMessage(`{"type":"object","properties":{"region":{"enum":["eu","us"]}},"required":["region"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	sessionIs(t, c, res.SessionID, orchestrator.SessionWaiting)
	got := make(chan *orchestrator.InputRequest, 1)
	go func() {
		r, err := c.GetInputRequest(ctx, q.ID, time.Minute)
		if err != nil {
			t.Errorf("GetInputRequest: %v", err)
		}
		got <- r
	}()
	if _, err := c.AnswerInputRequest(ctx, q.ID, orchestrator.AnswerParams{Answer: json.RawMessage(`{"region":"mars"}`)}); orchestrator.ErrorCode(err) != "answer_validation_failed" {
		t.Fatalf("answer outside the enum: %v", err)
	}
	answer(t, c, q.ID, `{"region":"eu"}`)
	select {
	case r := <-got:
		if r.Status != orchestrator.InputAnswered || string(r.Answer) != `{"region":"eu"}` {
			t.Fatalf("long poll returned %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer did not wake the long poll")
	}
	sessionIs(t, c, res.SessionID, orchestrator.SessionRunning)

	// A question left open when the run ends is cancelled by the next full sweep.
	q2, err := c.AskHuman(ctx, orchestrator.AskParams{SessionID: res.SessionID, Prompt: "Anything else?"})
	if err != nil {
		t.Fatal(err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted})
	sessionIs(t, c, res.SessionID, orchestrator.SessionCompleted)
	c.Sweep(ctx, true)
	if r, _ := c.GetInputRequest(ctx, q2.ID, 0); r.Status != orchestrator.InputCancelled {
		t.Fatalf("question of an ended session: %s, want cancelled", r.Status)
	}
	events, _ := c.ListEvents(ctx, res.SessionID, 0, 100, 0)
	var kinds []string
	for _, e := range events {
		if e.Type == orchestrator.EventInputRequested || e.Type == orchestrator.EventInputClosed {
			kinds = append(kinds, e.Type)
		}
	}
	if fmt.Sprint(kinds) != "[input_requested input_closed input_requested input_closed]" {
		t.Fatalf("input events of the session: %v", kinds)
	}
}

func TestConcurrentAnswersOneWins(t *testing.T) {
	t.Parallel()
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCoordinator(t, coordinator.Config{Store: newStore(t)})
			register(t, c, "host-a", crawler())
			res, r := gated(t, c, orchestrator.StartRunParams{})
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				won      []string
				conflict int
			)
			for i := range 16 {
				wg.Go(func() {
					body := fmt.Sprintf(`{"approved":%v,"comment":"%d"}`, i%2 == 0, i)
					_, err := c.AnswerInputRequest(context.Background(), r.ID, orchestrator.AnswerParams{Answer: json.RawMessage(body)})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won = append(won, body)
					case errors.Is(err, orchestrator.ErrConflict):
						conflict++
					default:
						t.Errorf("answer %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			if len(won) != 1 || conflict != 15 {
				t.Fatalf("16 concurrent answers: %d won %v, %d conflicts; want 1 and 15", len(won), won, conflict)
			}
			var a orchestrator.Approval
			_ = json.Unmarshal([]byte(won[0]), &a)
			want := orchestrator.SessionPending
			if !a.Approved {
				want = orchestrator.SessionFailed
			}
			sessionIs(t, c, res.SessionID, want)
		})
	}
}
