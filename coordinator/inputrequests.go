package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store"
)

// Human input: approval gates in front of runs, and questions agents ask while they run. Every request
// is a store record written in the transaction that makes its session wait, and closed once by a
// guarded update (store.CloseInputRequest) in the transaction that lets the session go on — so an open
// request, its deadline and its session's state survive any restart, and of concurrent answers exactly
// one is applied. docs/human-input.md describes the flow for users.

var _ orchestrator.HumanInput = (*Coordinator)(nil)

// inputKey wakes the long polls of one input request (GetInputRequest with a wait).
func inputKey(id string) string { return "i:" + id }

// opInput is the store operation of an input request's opening or closing ([Metrics.StoreTx]).
const opInput = "input_request"

// maxPromptBytes bounds an input request's prompt.
const maxPromptBytes = 64 << 10

// gateSession decides whether a new session waits for an approval: when its blueprint requires one or
// the request asks for one. A gated session is created waiting, its run held (parked, and unparked by
// nothing but the approval), and the returned approval request is written in the same transaction.
func (c *Coordinator) gateSession(s *orchestrator.Session, run *orchestrator.Run, b *orchestrator.Blueprint, p orchestrator.StartRunParams) (*orchestrator.InputRequest, error) {
	if p.ApprovalTimeoutSeconds < 0 || time.Duration(p.ApprovalTimeoutSeconds*float64(time.Second)) > orchestrator.MaxInputTimeout {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "approval_timeout_seconds must be between 0 and %d (30 days)", int(orchestrator.MaxInputTimeout.Seconds()))
	}
	required := p.RequireApproval || (b.Approval != nil && b.Approval.Required)
	if !required {
		if p.ApprovalTimeoutSeconds > 0 {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "approval_timeout_seconds needs require_approval (agent %q requires none)", s.AgentName)
		}
		return nil, nil
	}
	timeout := time.Duration(p.ApprovalTimeoutSeconds * float64(time.Second))
	if timeout == 0 {
		timeout = b.Approval.Timeout()
	}
	s.Status = orchestrator.SessionWaiting
	run.Held, run.Parked = true, true
	r := &orchestrator.InputRequest{
		ID:        ids.New(ids.InputRequest),
		SessionID: s.ID,
		RunID:     run.ID,
		AgentName: s.AgentName,
		Kind:      orchestrator.InputApproval,
		Prompt:    approvalPrompt(s),
		Schema:    json.RawMessage(orchestrator.ApprovalSchema),
		Status:    orchestrator.InputOpen,
		CreatedAt: s.CreatedAt,
	}
	if timeout > 0 {
		r.ExpiresAt = new(s.CreatedAt.Add(timeout))
	}
	return r, nil
}

// approvalPrompt says what an approval lets run: the agent and its parameters, cut to a readable size.
func approvalPrompt(s *orchestrator.Session) string {
	params := string(s.Parameters)
	if len(params) > 2000 {
		params = params[:2000] + "…"
	}
	return fmt.Sprintf("Run agent %s with parameters %s?", s.AgentName, params)
}

// createGatedSession creates a gated session, its held run and its approval request in one transaction,
// with the idempotency key and the schedule's write when there are any (as createSession does).
func (c *Coordinator) createGatedSession(ctx context.Context, key *store.IdempotencyKey, s *orchestrator.Session, run *orchestrator.Run, gate *orchestrator.InputRequest, fx *effects) error {
	write, _ := ctx.Value(firingKey{}).(firing)
	inner := &effects{}
	err := c.inTx(ctx, opStartRun, func(ctx context.Context, tx store.Store) error {
		*inner = effects{}
		if write != nil {
			if err := write(ctx, tx, s); err != nil {
				return err
			}
		}
		if s.Depth > 0 {
			if err := admitChild(ctx, tx, s); err != nil {
				return err
			}
		}
		if key != nil {
			key.RunID, key.SessionID, key.CreatedAt = run.ID, run.SessionID, run.CreatedAt
			if err := tx.CreateSessionWithRunOnce(ctx, s, run, key); err != nil {
				if errors.Is(err, orchestrator.ErrConflict) {
					return errKeyTaken
				}
				return err
			}
		} else if err := tx.CreateSessionWithRun(ctx, s, run); err != nil {
			return err
		}
		return c.openGate(ctx, tx, inner, run, gate)
	})
	if err != nil {
		return err
	}
	fx.webhooks = fx.webhooks || inner.webhooks
	c.countInput("opened", gate.Kind)
	return nil
}

// openGate records a new session's approval request inside tx, with its input_requested event and
// webhook.
func (c *Coordinator) openGate(ctx context.Context, tx store.Store, fx *effects, run *orchestrator.Run, gate *orchestrator.InputRequest) error {
	if err := tx.CreateInputRequest(ctx, gate); err != nil {
		return err
	}
	if err := tx.AppendEvents(ctx, gate.SessionID, []*orchestrator.Event{requestedEvent(gate)}); err != nil {
		return err
	}
	return c.queueInputWebhook(ctx, tx, fx, store.NewRunBrief(run), gate)
}

func requestedEvent(r *orchestrator.InputRequest) *orchestrator.Event {
	data := map[string]any{"request_id": r.ID, "kind": r.Kind, "prompt": r.Prompt, "schema": r.Schema}
	if r.ExpiresAt != nil {
		data["expires_at"] = r.ExpiresAt
	}
	return eventOf(orchestrator.EventInputRequested, r.CreatedAt, data)
}

// queueInputWebhook tells the run's callback_url, if it has one, that its session waits for a person.
func (c *Coordinator) queueInputWebhook(ctx context.Context, tx store.Store, fx *effects, run *store.RunBrief, r *orchestrator.InputRequest) error {
	if run.CallbackURL == "" {
		return nil
	}
	return c.queueWebhook(ctx, tx, fx, run, orchestrator.WebhookPayload{
		Event: "input_requested", SessionID: r.SessionID, RunID: run.ID, AgentName: run.AgentName,
		Status: orchestrator.SessionWaiting, InputRequest: r,
	})
}

// AskHuman opens a question for a running session: the session is waiting until the question is
// answered, expires or the session ends; its run goes on running (the agent waits for the answer with
// GetInputRequest). The answer's schema defaults to [orchestrator.DefaultQuestionSchema].
func (c *Coordinator) AskHuman(ctx context.Context, p orchestrator.AskParams) (*orchestrator.InputRequest, error) {
	if strings.TrimSpace(p.Prompt) == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "prompt is required")
	}
	if len(p.Prompt) > maxPromptBytes {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "prompt_too_large", "prompt is %d bytes; at most %d", len(p.Prompt), maxPromptBytes)
	}
	schema := p.Schema
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(orchestrator.DefaultQuestionSchema)
	}
	if _, err := c.schemas.Compile(schema); err != nil {
		return nil, err
	}
	timeout := time.Duration(p.TimeoutSeconds * float64(time.Second))
	if p.TimeoutSeconds < 0 || timeout > orchestrator.MaxInputTimeout {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "timeout_seconds must be between 0 and %d (30 days)", int(orchestrator.MaxInputTimeout.Seconds()))
	}
	s, err := c.GetSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	notRunning := orchestrator.Errorf(orchestrator.ErrConflict, "session_not_running",
		"session %s is %s: only a running session's agent can ask a question", s.ID, s.Status).With("status", s.Status)
	if s.Status != orchestrator.SessionRunning && s.Status != orchestrator.SessionWaiting {
		return nil, notRunning
	}
	run, err := c.GetRun(ctx, s.CurrentRunID)
	if err != nil {
		return nil, err
	}
	if run.Status != orchestrator.RunRunning {
		return nil, notRunning
	}
	now := c.now()
	r := &orchestrator.InputRequest{
		ID:        ids.New(ids.InputRequest),
		SessionID: s.ID,
		RunID:     run.ID,
		AgentName: s.AgentName,
		Kind:      orchestrator.InputQuestion,
		Prompt:    p.Prompt,
		Schema:    schema,
		Status:    orchestrator.InputOpen,
		CreatedAt: now,
	}
	if timeout > 0 {
		r.ExpiresAt = new(now.Add(timeout))
	}
	fx := &effects{}
	err = c.inTx(ctx, opInput, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		if err := tx.CreateInputRequest(ctx, r); err != nil {
			return err
		}
		// Guarded: a run that ended since the look above ends the session too, and then nothing is asked.
		if _, err := tx.UpdateSession(ctx, s.ID, []orchestrator.SessionStatus{orchestrator.SessionRunning, orchestrator.SessionWaiting}, store.SessionUpdate{
			Status: new(orchestrator.SessionWaiting), UpdatedAt: now, AppendEvents: []*orchestrator.Event{requestedEvent(r)},
		}); err != nil {
			return err
		}
		fx.changed = append(fx.changed, s.ID)
		return c.queueInputWebhook(ctx, tx, fx, store.NewRunBrief(run), r)
	})
	if errors.Is(err, orchestrator.ErrConflict) {
		return nil, notRunning
	}
	if err != nil {
		return nil, err
	}
	c.apply(fx)
	c.countInput("opened", r.Kind)
	c.log.Info("input requested", "request_id", r.ID, "session_id", s.ID, "kind", r.Kind)
	return r, nil
}

// GetInputRequest returns an input request. With a positive wait it waits, parked on a notification,
// until the request is no longer open or wait elapses, and returns it as it is then.
func (c *Coordinator) GetInputRequest(ctx context.Context, id string, wait time.Duration) (*orchestrator.InputRequest, error) {
	var r *orchestrator.InputRequest
	_, err := c.await(ctx, wait, inputKey(id), "", func() (bool, error) {
		var err error
		r, err = lookup(c.store.GetInputRequest(ctx, id)).as("input_request", id)
		return err == nil && r.Status != orchestrator.InputOpen, err
	})
	if err != nil && r == nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	return r, nil
}

// ListInputRequests lists input requests, oldest first. Limit defaults to 100 and is capped at 1000.
func (c *Coordinator) ListInputRequests(ctx context.Context, f orchestrator.InputRequestFilter) ([]*orchestrator.InputRequest, error) {
	for _, st := range f.Statuses {
		switch st {
		case orchestrator.InputOpen, orchestrator.InputAnswered, orchestrator.InputExpired, orchestrator.InputCancelled:
		default:
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "unknown input request status %q (open, answered, expired, cancelled)", st)
		}
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "limit must be at most 1000")
	}
	return c.store.ListInputRequests(ctx, f)
}

// AnswerInputRequest answers an open request. The answer is validated against the request's schema
// first (ErrInvalid, code answer_validation_failed, with every error and its $.path); then, in one
// transaction, the request is closed by a guarded update and its session goes on: an approved run is
// released to the runners, a refused one fails with error code rejected (the comment in its error) and
// never runs, a question's session is running again. A request no longer open is ErrConflict, code
// request_closed: of concurrent answers exactly one is applied.
func (c *Coordinator) AnswerInputRequest(ctx context.Context, id string, p orchestrator.AnswerParams) (*orchestrator.InputRequest, error) {
	r, err := lookup(c.store.GetInputRequest(ctx, id)).as("input_request", id)
	if err != nil {
		return nil, err
	}
	if r.Status != orchestrator.InputOpen {
		return nil, requestClosed(r)
	}
	answer, err := c.validateAnswer(r, p.Answer)
	if err != nil {
		return nil, err
	}
	return c.closeInput(ctx, r, store.InputRequestClose{Status: orchestrator.InputAnswered, Answer: answer, AnsweredBy: p.AnsweredBy})
}

func requestClosed(r *orchestrator.InputRequest) error {
	return orchestrator.Errorf(orchestrator.ErrConflict, "request_closed", "input request %s is %s; it can no longer be answered", r.ID, r.Status).
		With("request_id", r.ID).With("status", r.Status)
}

// validateAnswer checks an answer against the request's schema and returns it with the schema's
// defaults applied.
func (c *Coordinator) validateAnswer(r *orchestrator.InputRequest, answer json.RawMessage) (json.RawMessage, error) {
	if len(answer) == 0 || string(answer) == "null" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "answer is required: an object matching the request's schema").With("schema", r.Schema)
	}
	compiled, err := c.schemas.Compile(r.Schema)
	if err != nil {
		return nil, fmt.Errorf("input request %s has an unusable schema: %w", r.ID, err)
	}
	normalized, ferrs, err := compiled.Normalize(answer)
	if err != nil {
		return nil, err
	}
	if len(ferrs) > 0 {
		msgs := make([]string, len(ferrs))
		for i, fe := range ferrs {
			msgs[i] = fe.Path + ": " + fe.Message
		}
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "answer_validation_failed", "Answer does not match the request's schema: %s", strings.Join(msgs, "; ")).
			With("validation_errors", ferrs).With("schema", r.Schema).With("request_id", r.ID)
	}
	return normalized, nil
}

// closeInput closes r as cl says, and lets its session go on, in one transaction; then it wakes those
// who wait on the request and on the session.
func (c *Coordinator) closeInput(ctx context.Context, r *orchestrator.InputRequest, cl store.InputRequestClose) (*orchestrator.InputRequest, error) {
	cl.At = c.now()
	var closed *orchestrator.InputRequest
	fx := &effects{}
	err := c.inTx(ctx, opInput, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		var err error
		closed, err = tx.CloseInputRequest(ctx, r.ID, cl)
		if errors.Is(err, orchestrator.ErrConflict) {
			if now, gerr := tx.GetInputRequest(ctx, r.ID); gerr == nil {
				return requestClosed(now)
			}
		}
		if err != nil {
			return err
		}
		return c.afterClose(ctx, tx, fx, closed)
	})
	if err != nil {
		return nil, err
	}
	c.apply(fx)
	c.wake(inputKey(r.ID))
	c.countInput(string(closed.Status), closed.Kind)
	c.log.Info("input request closed", "request_id", closed.ID, "session_id", closed.SessionID, "kind", closed.Kind,
		"status", closed.Status, "answered_by", closed.AnsweredBy)
	return closed, nil
}

// afterClose lets the session of a request closed inside tx go on.
func (c *Coordinator) afterClose(ctx context.Context, tx store.Store, fx *effects, r *orchestrator.InputRequest) error {
	now := *r.ClosedAt
	data := map[string]any{"request_id": r.ID, "kind": r.Kind, "status": r.Status}
	if r.Status == orchestrator.InputAnswered {
		data["answer"], data["answered_by"] = r.Answer, r.AnsweredBy
	}
	events := []*orchestrator.Event{eventOf(orchestrator.EventInputClosed, now, data)}
	fx.changed = append(fx.changed, r.SessionID)
	if r.Kind == orchestrator.InputQuestion {
		return c.resumeAfterQuestion(ctx, tx, r, now, events)
	}
	if r.Status == orchestrator.InputCancelled {
		return tx.AppendEvents(ctx, r.SessionID, events)
	}
	var approval orchestrator.Approval
	if r.Status == orchestrator.InputAnswered {
		if err := json.Unmarshal(r.Answer, &approval); err != nil {
			return err // validated against ApprovalSchema: cannot happen
		}
	}
	if approval.Approved {
		if err := tx.ReleaseRun(ctx, r.RunID, now); err != nil {
			if errors.Is(err, orchestrator.ErrConflict) {
				return orchestrator.Errorf(orchestrator.ErrConflict, "session_ended", "session %s ended before the approval", r.SessionID)
			}
			return err
		}
		if _, err := tx.UpdateSession(ctx, r.SessionID, []orchestrator.SessionStatus{orchestrator.SessionWaiting}, store.SessionUpdate{
			Status: new(orchestrator.SessionPending), UpdatedAt: now, AppendEvents: events,
		}); err != nil {
			return err
		}
		run, err := tx.GetRun(ctx, r.RunID)
		if err != nil {
			return err
		}
		if run.Demands.RunnerID != "" {
			fx.wakeRunners = append(fx.wakeRunners, run.Demands.RunnerID)
		} else {
			fx.wakeAll = true
		}
		return nil
	}
	code, msg := "rejected", "approval rejected"
	if r.Status == orchestrator.InputExpired {
		code, msg = "approval_timeout", "approval timed out: nobody answered before "+r.ExpiresAt.Format(time.RFC3339)
	} else if approval.Comment != "" {
		msg += ": " + approval.Comment
	}
	if r.AnsweredBy != "" && r.Status == orchestrator.InputAnswered {
		msg += " (by " + r.AnsweredBy + ")"
	}
	if err := tx.AppendEvents(ctx, r.SessionID, events); err != nil {
		return err
	}
	err := c.finishRun(ctx, tx, fx, r.RunID, "", orchestrator.RunFailed, &orchestrator.Result{Error: msg, ErrorCode: code}, msg)
	if errors.Is(err, orchestrator.ErrConflict) {
		return orchestrator.Errorf(orchestrator.ErrConflict, "session_ended", "session %s ended before the answer", r.SessionID)
	}
	return err
}

// resumeAfterQuestion records a question's close and, when it was the session's last open request, moves
// the session from waiting back to running. A session that ended meanwhile stays as it is.
func (c *Coordinator) resumeAfterQuestion(ctx context.Context, tx store.Store, r *orchestrator.InputRequest, now time.Time, events []*orchestrator.Event) error {
	open, err := tx.ListInputRequests(ctx, orchestrator.InputRequestFilter{Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen}, SessionID: r.SessionID, Limit: 1})
	if err != nil {
		return err
	}
	if len(open) == 0 {
		_, err := tx.UpdateSession(ctx, r.SessionID, []orchestrator.SessionStatus{orchestrator.SessionWaiting}, store.SessionUpdate{
			Status: new(orchestrator.SessionRunning), UpdatedAt: now, AppendEvents: events,
		})
		if err == nil || !errors.Is(err, orchestrator.ErrConflict) {
			return err
		}
	}
	return tx.AppendEvents(ctx, r.SessionID, events)
}

// cancelInputs cancels the session's open requests inside tx (its run was stopped before anyone answered).
func (c *Coordinator) cancelInputs(ctx context.Context, tx store.Store, fx *effects, sessionID string) error {
	open, err := tx.ListInputRequests(ctx, orchestrator.InputRequestFilter{Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen}, SessionID: sessionID})
	if err != nil {
		return err
	}
	for _, r := range open {
		closed, err := tx.CloseInputRequest(ctx, r.ID, store.InputRequestClose{Status: orchestrator.InputCancelled, At: c.now()})
		if err != nil {
			return err
		}
		if err := c.afterClose(ctx, tx, fx, closed); err != nil {
			return err
		}
		fx.inputsClosed = append(fx.inputsClosed, r.ID)
	}
	return nil
}

// sweepInputRequests expires the open requests whose deadline passed and, in full sweeps, cancels the
// open requests of sessions that ended without anyone answering (their run ended, or was stopped, or
// its runner went away).
func (c *Coordinator) sweepInputRequests(ctx context.Context, full bool) error {
	open := []orchestrator.InputRequestStatus{orchestrator.InputOpen}
	due, err := c.store.ListInputRequests(ctx, orchestrator.InputRequestFilter{Statuses: open, ExpiresBefore: c.now(), Limit: sweepPage})
	if err != nil {
		return err
	}
	for _, r := range due {
		if _, err := c.closeInput(ctx, r, store.InputRequestClose{Status: orchestrator.InputExpired}); err != nil && !errors.Is(err, orchestrator.ErrConflict) {
			return err
		}
	}
	if !full {
		return nil
	}
	live, err := c.store.ListInputRequests(ctx, orchestrator.InputRequestFilter{Statuses: open, Limit: sweepPage})
	if err != nil {
		return err
	}
	ended := map[string]bool{}
	for _, r := range live {
		done, seen := ended[r.SessionID]
		if !seen {
			s, err := c.store.GetSession(ctx, r.SessionID)
			if err != nil && !errors.Is(err, orchestrator.ErrNotFound) {
				return err
			}
			done = err != nil || s.Status.Ended()
			ended[r.SessionID] = done
		}
		if !done {
			continue
		}
		if _, err := c.closeInput(ctx, r, store.InputRequestClose{Status: orchestrator.InputCancelled}); err != nil &&
			!errors.Is(err, orchestrator.ErrConflict) && !errors.Is(err, orchestrator.ErrNotFound) {
			return err
		}
	}
	return nil
}

// countInput counts an input request's opening or close for the metrics, when they have the method.
func (c *Coordinator) countInput(outcome string, kind orchestrator.InputRequestKind) {
	if m, ok := c.metrics.(InputMetrics); ok {
		m.InputRequest(string(kind), outcome)
	}
}

// InputMetrics is an optional [Metrics] capability: counts of input requests opened and closed, by kind
// (approval, question) and outcome (opened, answered, expired, cancelled). package prommetrics has it.
type InputMetrics interface {
	InputRequest(kind, outcome string)
}
