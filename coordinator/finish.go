package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// finishRun ends run with status inside tx, guarded by the run's current status (and by runnerID, when
// given, so only the runner that holds it can end it). It records the session's result — the reported
// one, else the newest result event of the run, else its last assistant message — appends the result and
// run_ended events, and records and delivers callbacks.
func (c *Coordinator) finishRun(ctx context.Context, tx orchestrator.Store, fx *effects, runID, runnerID string, status orchestrator.RunStatus, res *orchestrator.Result, errMsg string) error {
	now := c.now()
	if errMsg == "" && res != nil && status != orchestrator.RunCompleted {
		errMsg = res.Error
	}
	if errMsg == "" && status == orchestrator.RunStopped {
		errMsg = "stopped"
	}
	if errMsg == "" && status == orchestrator.RunFailed {
		errMsg = "failed"
	}
	if status == orchestrator.RunCompleted {
		errMsg = ""
	}
	ru := orchestrator.RunUpdate{Status: &status, Error: &errMsg, EndedAt: &now}
	if res != nil {
		ru.Usage = res.Usage // the reported usage, kept on the run
	}
	run, err := updateRunBrief(ctx, tx, runID, runStatusesBefore(status), runnerID, ru)
	if err != nil {
		return err
	}
	if run.TraceParent != "" {
		var span trace.Span
		ctx, span = c.tracer.Start(traces.Parent(ctx, run.TraceParent), spanReport, trace.WithAttributes(
			attrAgent.String(run.AgentName), attrRun.String(run.ID), attrSession.String(run.SessionID), attrStatus.String(string(status))))
		defer span.End()
	}
	var events []*orchestrator.Event
	fromEvent := false
	if res == nil {
		res, fromEvent, err = c.deriveResult(ctx, tx, run)
		if err != nil {
			return err
		}
	}
	if res == nil {
		res = &orchestrator.Result{}
	}
	if res.ResultType == "" {
		res.ResultType = string(run.AgentType)
	}
	if status != orchestrator.RunCompleted && res.Error == "" {
		res.Error = errMsg
	}
	if !fromEvent {
		events = append(events, eventOf(orchestrator.EventResult, now, res))
	}
	events = append(events, eventOf(orchestrator.EventRunEnded, now, map[string]any{
		"run_id": run.ID, "status": status, "error": errMsg,
	}))
	sessionStatus := orchestrator.SessionStatus(status)
	upd := orchestrator.SessionUpdate{Status: &sessionStatus, Result: res, Error: &errMsg, EndedAt: &now, UpdatedAt: now, AppendEvents: events}
	if run.RunnerID != "" {
		upd.RunnerID = &run.RunnerID // a run that never reported started has not set it yet
	}
	s, err := updateSessionBrief(ctx, tx, run.SessionID, []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning}, upd)
	if err != nil {
		return err
	}
	fx.ended = append(fx.ended, s.ID)
	fx.runsEnded = append(fx.runsEnded, runEnd{run: run, status: status, err: errMsg, took: now.Sub(run.CreatedAt)})
	if run.Limited {
		fx.wakeAll = true // a slot freed: runs its limit held back may be claimed now
	}
	if run.CallbackURL != "" {
		if err := c.queueWebhook(ctx, tx, fx, run, orchestrator.WebhookPayload{
			Event: "session.ended", SessionID: s.ID, RunID: run.ID, AgentName: s.AgentName,
			Status: s.Status, Result: res, Error: errMsg, EndedAt: now,
		}); err != nil {
			return err
		}
	}
	// The parent is called back when this run was started in async_callback mode (the session's first run,
	// a resume that asked for it, or a resume that delivered callbacks to a session started that way).
	if run.Mode == orchestrator.ModeAsyncCallback && s.ParentSessionID != "" && s.ParentSessionID != s.ID {
		cb := &orchestrator.Callback{
			ID:              ids.New(orchestrator.CallbackPrefix),
			ParentSessionID: s.ParentSessionID,
			ChildSessionID:  s.ID,
			Type:            "child_" + string(status),
			ChildAgent:      s.AgentName,
			Result:          res,
			CreatedAt:       now,
		}
		if err := tx.CreateCallback(ctx, cb); err != nil {
			return err
		}
		fx.callbacksRecorded++
		if err := c.deliverCallbacks(ctx, tx, fx, s.ParentSessionID); err != nil {
			return err
		}
	}
	// Callbacks that arrived while this session ran are delivered now, however the run ended. Only AI
	// sessions receive callbacks (checkParent), so deterministic ones spare the lookup.
	if s.AgentType != orchestrator.AgentTypeAgent {
		return nil
	}
	return c.deliverCallbacks(ctx, tx, fx, s.ID)
}

// deriveResult finds the result of a run that was reported without one: the newest result event the run
// wrote (through the gateway), else its last assistant message. The run's events are those after the
// previous run's run_ended marker (its own is not written yet): its executor may write before the
// runner's started report lands.
func (c *Coordinator) deriveResult(ctx context.Context, tx orchestrator.Store, run *orchestrator.RunBrief) (*orchestrator.Result, bool, error) {
	sessionID := run.SessionID
	var since int64
	prev, err := tx.LastEvent(ctx, sessionID, []string{orchestrator.EventRunEnded}, 0)
	switch {
	case err == nil:
		since = prev.Seq
	case !errors.Is(err, orchestrator.ErrNotFound):
		return nil, false, err
	}
	start := &orchestrator.Event{Seq: since}
	ev, err := tx.LastEvent(ctx, sessionID, []string{orchestrator.EventResult, orchestrator.EventMessage}, start.Seq)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if ev.Type == orchestrator.EventResult {
		var r orchestrator.Result
		if err := ev.DecodeData(&r); err == nil {
			return &r, true, nil
		}
	}
	// The newest event is a message; a result event may still precede it.
	if rev, err := tx.LastEvent(ctx, sessionID, []string{orchestrator.EventResult}, start.Seq); err == nil {
		var r orchestrator.Result
		if err := rev.DecodeData(&r); err == nil {
			return &r, true, nil
		}
	}
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if ev.DecodeData(&msg) != nil || msg.Role != "assistant" {
		return nil, false, nil
	}
	return &orchestrator.Result{ResultType: string(run.AgentType), ResultText: messageText(msg.Content)}, false, nil
}

// messageText extracts the text of a message's content: a string, or the text blocks of a content array
// ([{"type":"text","text":"…"}]) joined by newlines.
func messageText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" || (b.Type == "" && b.Text != "") {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// failRun ends a run that never reached a runner, or whose runner is gone, as failed.
func (c *Coordinator) failRun(ctx context.Context, run *orchestrator.Run, msg string) error {
	fx := &effects{}
	err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx orchestrator.Store) error {
		*fx = effects{}
		return c.finishRun(ctx, tx, fx, run.ID, "", orchestrator.RunFailed, nil, msg)
	})
	if errors.Is(err, orchestrator.ErrConflict) {
		return nil // it ended some other way meanwhile
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

// failPending fails a run that is still pending (the no-match sweep). A guarded update that changes
// nothing takes the run first: a run claimed since the sweep read it is left alone, and on PostgreSQL a
// concurrent claim skips the row until this transaction has ended it.
func (c *Coordinator) failPending(ctx context.Context, run *orchestrator.Run, msg string) error {
	fx := &effects{}
	err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx orchestrator.Store) error {
		*fx = effects{}
		if _, err := tx.UpdateRun(ctx, run.ID, []orchestrator.RunStatus{orchestrator.RunPending}, "", orchestrator.RunUpdate{}); err != nil {
			return err
		}
		return c.finishRun(ctx, tx, fx, run.ID, "", orchestrator.RunFailed, nil, msg)
	})
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return nil // claimed, ended or deleted meanwhile
	}
	if err == nil {
		c.apply(fx)
	}
	return err
}

func eventOf(typ string, at time.Time, data any) *orchestrator.Event {
	e := orchestrator.NewEvent(typ, data)
	e.Time = at
	return &e
}

// updateRunBrief is tx.UpdateRun returning the run's brief, through the store's [orchestrator.BriefUpdater]
// when it has one.
func updateRunBrief(ctx context.Context, tx orchestrator.Store, id string, from []orchestrator.RunStatus, runnerID string, u orchestrator.RunUpdate) (*orchestrator.RunBrief, error) {
	if b, ok := tx.(orchestrator.BriefUpdater); ok {
		return b.UpdateRunBrief(ctx, id, from, runnerID, u)
	}
	r, err := tx.UpdateRun(ctx, id, from, runnerID, u)
	if err != nil {
		return nil, err
	}
	return r.Brief(), nil
}

// updateSessionBrief is tx.UpdateSession returning the session's brief, through the store's
// [orchestrator.BriefUpdater] when it has one.
func updateSessionBrief(ctx context.Context, tx orchestrator.Store, id string, from []orchestrator.SessionStatus, u orchestrator.SessionUpdate) (*orchestrator.SessionBrief, error) {
	if b, ok := tx.(orchestrator.BriefUpdater); ok {
		return b.UpdateSessionBrief(ctx, id, from, u)
	}
	s, err := tx.UpdateSession(ctx, id, from, u)
	if err != nil {
		return nil, err
	}
	return s.Brief(), nil
}

// runStatusesBefore returns the statuses from which a run may move to next: the guard of its update.
func runStatusesBefore(next orchestrator.RunStatus) []orchestrator.RunStatus {
	var from []orchestrator.RunStatus
	for _, s := range []orchestrator.RunStatus{orchestrator.RunPending, orchestrator.RunClaimed, orchestrator.RunRunning} {
		if s.CanTransition(next) {
			from = append(from, s)
		}
	}
	return from
}
