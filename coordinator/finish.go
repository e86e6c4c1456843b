package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// finishRun ends run with status inside tx, guarded by the run's current status (and by runnerID, when
// given, so only the runner that holds it can end it). It records the session's result — the reported
// one, else the newest result event of the run, else its last assistant message — appends the result and
// run_ended events, and records and delivers callbacks.
func (c *Coordinator) finishRun(ctx context.Context, tx store.Store, fx *effects, runID, runnerID string, status orchestrator.RunStatus, res *orchestrator.Result, errMsg string) error {
	return c.finishRunFrom(ctx, tx, fx, runID, runnerID, runStatusesBefore(status), status, res, errMsg)
}

// finishRunFrom is finishRun guarded by the run statuses from: a run answered from the result cache
// completes while pending, which no runner's report may do.
func (c *Coordinator) finishRunFrom(ctx context.Context, tx store.Store, fx *effects, runID, runnerID string, from []orchestrator.RunStatus, status orchestrator.RunStatus, res *orchestrator.Result, errMsg string) error {
	e := c.newEnding(runID, runnerID, status, res, errMsg)
	run, err := updateRunBrief(ctx, tx, runID, from, runnerID, e.runUpdate())
	if err != nil {
		return err
	}
	e.run = run
	defer e.endSpan()
	if err := c.settleTimedOut(ctx, tx, e); err != nil {
		return err
	}
	if err := c.prepareSessionEnd(ctx, tx, e); err != nil {
		return err
	}
	if r, err := c.planRetry(ctx, tx, e); err != nil || r != nil {
		if err != nil {
			return err
		}
		return c.scheduleRetry(e.ctx, tx, fx, e, r)
	}
	s, err := updateSessionBrief(ctx, tx, run.SessionID, sessionStatusesBeforeEnd, e.session)
	if err != nil {
		return err
	}
	return c.afterSessionEnd(e.ctx, tx, fx, e, s)
}

// finishRuns ends the runs of reps (final reports) inside tx as finishRun ends each, all or none: a
// report that does not apply as it stands (its guard, or its session's, does not match) fails the
// whole group with its error. With a store that updates many records at once
// ([store.BatchBriefUpdater]) the group's runs are written with one call and their sessions with
// another — on PostgreSQL one statement per table for the whole group — instead of a few statements per
// run.
func (c *Coordinator) finishRuns(ctx context.Context, tx store.Store, fx *effects, reps []orchestrator.RunReport) error {
	b, ok := tx.(store.BatchBriefUpdater)
	if !ok {
		for _, rep := range reps {
			if err := c.finishRun(ctx, tx, fx, rep.RunID, rep.RunnerID, rep.Status, rep.Result, rep.Error); err != nil {
				return err
			}
		}
		return nil
	}
	ends := make([]*ending, len(reps))
	rus := make([]store.RunsUpdate, len(reps))
	for i, rep := range reps {
		ends[i] = c.newEnding(rep.RunID, rep.RunnerID, rep.Status, rep.Result, rep.Error)
		rus[i] = store.RunsUpdate{ID: rep.RunID, From: runStatusesBefore(rep.Status), RunnerID: rep.RunnerID, Update: ends[i].runUpdate()}
	}
	runs, err := b.UpdateRunsBrief(ctx, rus)
	if err != nil {
		return err
	}
	defer func() {
		for _, e := range ends {
			e.endSpan()
		}
	}()
	sus := make([]store.SessionsUpdate, 0, len(reps))
	ending := ends[:0:0] // the ends that end their sessions, in the order of sus
	for i, e := range ends {
		if runs[i] == nil {
			return orchestrator.Errorf(orchestrator.ErrConflict, "run_conflict", "run %s cannot end as %s", e.runID, e.status)
		}
		e.run = runs[i]
		if err := c.settleTimedOut(ctx, tx, e); err != nil {
			return err
		}
		if err := c.prepareSessionEnd(ctx, tx, e); err != nil {
			return err
		}
		r, err := c.planRetry(ctx, tx, e)
		if err != nil {
			return err
		}
		if r != nil { // a retried failure keeps its session going: written on its own
			if err := c.scheduleRetry(e.ctx, tx, fx, e, r); err != nil {
				return err
			}
			continue
		}
		sus = append(sus, store.SessionsUpdate{ID: e.run.SessionID, From: sessionStatusesBeforeEnd, Update: e.session})
		ending = append(ending, e)
	}
	sessions, err := b.UpdateSessionsBrief(ctx, sus)
	if err != nil {
		return err
	}
	for i, e := range ending {
		if sessions[i] == nil {
			return orchestrator.Errorf(orchestrator.ErrConflict, "session_conflict", "session %s of run %s is not live", e.run.SessionID, e.runID)
		}
		if err := c.afterSessionEnd(e.ctx, tx, fx, e, sessions[i]); err != nil {
			return err
		}
	}
	return nil
}

// sessionStatusesBeforeEnd guards a session's end: it ends from pending (a run that never started),
// running, or waiting (for its approval, or for the answer to a question its agent asked).
var sessionStatusesBeforeEnd = []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning, orchestrator.SessionWaiting}

// ending is one run's end on its way through finishRun or finishRuns.
type ending struct {
	runID, runnerID string
	status          orchestrator.RunStatus
	res             *orchestrator.Result
	errMsg          string
	now             time.Time

	run     *store.RunBrief     // the run, once updated
	ctx     context.Context     // the report's span, when the run is traced
	span    trace.Span          // nil when not traced
	session store.SessionUpdate // the session's end, once prepared
	// stopRequest is the stop_requested event of a run that ended stopped, if it has one.
	stopRequest *treeStop
}

// newEnding fills in the error message an end records: none for completed, else the reported one, the
// result's, or the status.
func (c *Coordinator) newEnding(runID, runnerID string, status orchestrator.RunStatus, res *orchestrator.Result, errMsg string) *ending {
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
	return &ending{runID: runID, runnerID: runnerID, status: status, res: res, errMsg: errMsg, now: c.now()}
}

// runUpdate is the run's side of the end.
func (e *ending) runUpdate() store.RunUpdate {
	ru := store.RunUpdate{Status: &e.status, Error: &e.errMsg, EndedAt: &e.now}
	if e.res != nil {
		ru.Usage = e.res.Usage // the reported usage, kept on the run
	}
	return ru
}

func (e *ending) endSpan() {
	if e.span != nil {
		e.span.End()
	}
}

// prepareSessionEnd starts the report's span (for a traced run), settles the result and writes the
// session's update into e.session: the end's status, result and error, with the result and run_ended
// events.
func (c *Coordinator) prepareSessionEnd(ctx context.Context, tx store.Store, e *ending) error {
	run, status, errMsg, now := e.run, e.status, e.errMsg, e.now
	e.ctx = ctx
	if run.TraceParent != "" {
		e.ctx, e.span = c.tracer.Start(traces.Parent(ctx, run.TraceParent), spanReport, trace.WithAttributes(
			attrAgent.String(run.AgentName), attrRun.String(run.ID), attrSession.String(run.SessionID), attrStatus.String(string(status))))
	}
	var events []*orchestrator.Event
	fromEvent := false
	res := e.res
	reported := e.res // the result the runner reported (nil: none), whose usage the run keeps
	if res == nil {
		var err error
		res, fromEvent, err = c.deriveResult(e.ctx, tx, run)
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
	e.res = res
	if !fromEvent {
		events = append(events, eventOf(orchestrator.EventResult, now, res))
	}
	events = append(events, eventOf(orchestrator.EventRunEnded, now, map[string]any{
		"run_id": run.ID, "status": status, "error": errMsg,
	}))
	sessionStatus := orchestrator.SessionStatus(status)
	errorCode := "" // a completed run clears the code an earlier run of the session left
	sessionErr := e.errMsg
	if status != orchestrator.RunCompleted {
		errorCode = res.ErrorCode
	}
	if status == orchestrator.RunStopped {
		// A run its tree's stop reached says why (parent_stopped, …), as a run that had not started does.
		e.stopRequest = lastStopRequest(e.ctx, tx, run.SessionID)
		if st := e.stopRequest; errorCode == "" && st != nil && !st.NoCascade {
			errorCode, res.ErrorCode = st.Reason, st.Reason
		}
	}
	if status == orchestrator.RunFailed {
		sessionErr = attemptsError(run.Attempt, e.errMsg) // the run keeps its own error
	}
	e.session = store.SessionUpdate{Status: &sessionStatus, Result: res, Error: &sessionErr, ErrorCode: &errorCode, EndedAt: &e.now, UpdatedAt: now, AppendEvents: events}
	if run.Attempt > 1 {
		e.session.ClearNextAttemptAt = true // the retry it waited for has come and gone
	}
	addUsage, err := c.finalUsage(e.ctx, tx, run, reported)
	if err != nil {
		return err
	}
	e.session.AddUsage = addUsage
	if run.RunnerID != "" {
		e.session.RunnerID = &run.RunnerID // a run that never reported started has not set it yet
	}
	return nil
}

// afterSessionEnd follows a session's end: it notes the end for the wake-ups, logs and metrics, queues
// the run's webhook, and records and delivers callbacks.
func (c *Coordinator) afterSessionEnd(ctx context.Context, tx store.Store, fx *effects, e *ending, s *store.SessionBrief) error {
	run, status, res, errMsg, now := e.run, e.status, e.res, e.errMsg, e.now
	fx.ended = append(fx.ended, s.ID)
	if err := c.cascadeEnd(ctx, tx, fx, s, e.stopRequest); err != nil {
		return err
	}
	fx.runsEnded = append(fx.runsEnded, runEnd{run: run, status: status, err: errMsg, took: now.Sub(run.CreatedAt)})
	if u := e.session.AddUsage; u != nil {
		fx.usage = append(fx.usage, usageCount{agent: run.AgentName, u: *u})
	}
	if run.Limited {
		fx.wakeAll = true // a slot freed: runs its limit held back may be claimed now
	}
	if run.CacheKey != "" && (run.CacheRole == cacheLead || run.CacheRole == cacheWrite) {
		if err := c.cacheRunEnded(ctx, tx, fx, run, status, res, s.ID); err != nil {
			return err
		}
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
			ID:              ids.New(ids.Callback),
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
func (c *Coordinator) deriveResult(ctx context.Context, tx store.Store, run *store.RunBrief) (*orchestrator.Result, bool, error) {
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
	return c.failRunWith(ctx, run, nil, msg)
}

// failRunWith is failRun with the run's result (its error and error code); without one, the result is
// what the run wrote (see finishRun).
func (c *Coordinator) failRunWith(ctx context.Context, run *orchestrator.Run, res *orchestrator.Result, msg string) error {
	fx := &effects{}
	err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		return c.finishRun(ctx, tx, fx, run.ID, "", orchestrator.RunFailed, res, msg)
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
	return c.failPendingWith(ctx, run, nil, msg)
}

// failPendingWith is failPending with the run's result (its error and error code).
func (c *Coordinator) failPendingWith(ctx context.Context, run *orchestrator.Run, res *orchestrator.Result, msg string) error {
	fx := &effects{}
	err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		if _, err := tx.UpdateRun(ctx, run.ID, []orchestrator.RunStatus{orchestrator.RunPending}, "", store.RunUpdate{}); err != nil {
			return err
		}
		return c.finishRun(ctx, tx, fx, run.ID, "", orchestrator.RunFailed, res, msg)
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

// updateRunBrief is tx.UpdateRun returning the run's brief, through the store's [store.BriefUpdater]
// when it has one.
func updateRunBrief(ctx context.Context, tx store.Store, id string, from []orchestrator.RunStatus, runnerID string, u store.RunUpdate) (*store.RunBrief, error) {
	if b, ok := tx.(store.BriefUpdater); ok {
		return b.UpdateRunBrief(ctx, id, from, runnerID, u)
	}
	r, err := tx.UpdateRun(ctx, id, from, runnerID, u)
	if err != nil {
		return nil, err
	}
	return store.NewRunBrief(r), nil
}

// updateSessionBrief is tx.UpdateSession returning the session's brief, through the store's
// [store.BriefUpdater] when it has one.
func updateSessionBrief(ctx context.Context, tx store.Store, id string, from []orchestrator.SessionStatus, u store.SessionUpdate) (*store.SessionBrief, error) {
	if b, ok := tx.(store.BriefUpdater); ok {
		return b.UpdateSessionBrief(ctx, id, from, u)
	}
	s, err := tx.UpdateSession(ctx, id, from, u)
	if err != nil {
		return nil, err
	}
	return store.NewSessionBrief(s), nil
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
