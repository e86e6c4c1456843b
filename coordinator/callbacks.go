package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
)

// deliverCallbacks resumes an idle parent with every pending callback addressed to it, in one run. A busy
// parent gets them when its current run ends (finishRun calls this again for it).
func (c *Coordinator) deliverCallbacks(ctx context.Context, tx store.Store, fx *effects, parentID string) error {
	parent, err := tx.GetSession(ctx, parentID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil // the parent was deleted; its callbacks went with it
	}
	if err != nil {
		return err
	}
	if !parent.Status.Ended() || parent.AgentType != orchestrator.AgentTypeAgent {
		return nil
	}
	pending, err := tx.ListCallbacks(ctx, store.CallbackFilter{ParentSessionID: parentID, Pending: true})
	if err != nil || len(pending) == 0 {
		return err
	}
	// Take the parent's row (a guarded update that changes nothing; on PostgreSQL it holds the row lock
	// until the transaction ends) and read the callbacks again: whoever else delivers to this parent —
	// another child ending at the same moment, the sweep, another replica — must take the row first, so
	// what is read now is delivered by this transaction alone. A parent that was resumed since it was read
	// is busy: its callbacks are delivered when that run ends (finishRun) or by the sweep.
	parent, err = tx.UpdateSession(ctx, parentID, []orchestrator.SessionStatus{orchestrator.SessionCompleted, orchestrator.SessionFailed, orchestrator.SessionStopped},
		store.SessionUpdate{UpdatedAt: parent.UpdatedAt})
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if pending, err = tx.ListCallbacks(ctx, store.CallbackFilter{ParentSessionID: parentID, Pending: true}); err != nil || len(pending) == 0 {
		return err
	}
	if pending, err = c.dropTreeStops(ctx, tx, pending); err != nil || len(pending) == 0 {
		return err
	}
	prompt := callbackPrompt(pending)
	params, _ := json.Marshal(map[string]string{"prompt": prompt})
	demands := parent.Demands
	if parent.RunnerID != "" && parent.ExecutorSessionID != "" {
		demands.RunnerID = parent.RunnerID
	}
	// A session started in async_callback mode keeps calling its own parent back after the runs its
	// children's callbacks cause.
	mode := orchestrator.ModeAsyncPoll
	if parent.Callback {
		mode = orchestrator.ModeAsyncCallback
	}
	run := c.newResumeRun(parent, params, mode, demands, nil)
	ctx, span := c.tracer.Start(ctx, spanCallback, trace.WithAttributes(attrAgent.String(parent.AgentName),
		attrSession.String(parent.ID), attrRun.String(run.ID), attribute.Int("orchestrator.callbacks", len(pending))))
	defer span.End()
	run.TraceParent = traces.Format(ctx)
	if err := c.queueResume(ctx, tx, parent, run); err != nil {
		return err
	}
	ids := make([]string, len(pending))
	for i, cb := range pending {
		ids[i] = cb.ID
	}
	if n, err := tx.MarkCallbacksDelivered(ctx, ids, run.ID, run.CreatedAt); err != nil {
		return err
	} else if n != len(ids) {
		return fmt.Errorf("orchestrator: %d of %d callbacks to session %s were delivered by someone else", len(ids)-n, len(ids), parentID)
	}
	if err := tx.AppendEvents(ctx, parent.ID, []*orchestrator.Event{eventOf(orchestrator.EventCallback, run.CreatedAt, map[string]any{
		"run_id": run.ID, "callbacks": pending,
	})}); err != nil {
		return err
	}
	fx.changed = append(fx.changed, parent.ID)
	fx.callbacksDelivered += len(pending)
	fx.wakeFor(run)
	return nil
}

// callbackPrompt renders the message a parent session is resumed with: a sentence per child and, for the
// model to read exactly, the callbacks as JSON ({callback_type, child_session_id, result: {result_type,
// result_text, result_data, exit_code, error}}).
func callbackPrompt(cbs []*orchestrator.Callback) string {
	var b strings.Builder
	if len(cbs) == 1 {
		b.WriteString("A child session you started has ended.\n")
	} else {
		fmt.Fprintf(&b, "%d child sessions you started have ended.\n", len(cbs))
	}
	type wire struct {
		CallbackType   string               `json:"callback_type"`
		ChildSessionID string               `json:"child_session_id"`
		ChildAgentName string               `json:"child_agent_name"`
		Result         *orchestrator.Result `json:"result"`
	}
	list := make([]wire, len(cbs))
	for i, cb := range cbs {
		fmt.Fprintf(&b, "- %s (agent %s): %s\n", cb.ChildSessionID, cb.ChildAgent, strings.TrimPrefix(cb.Type, "child_"))
		list[i] = wire{cb.Type, cb.ChildSessionID, cb.ChildAgent, cb.Result}
	}
	data, _ := json.MarshalIndent(list, "", "  ")
	b.WriteString("\nResults:\n```json\n")
	b.Write(data)
	b.WriteString("\n```\n")
	return b.String()
}
