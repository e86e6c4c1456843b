package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// opStopTree is the store operation of a tree's stop, for [Metrics.StoreTx].
const opStopTree = "stop_tree"

// StopSession stops the session's current run (see [Coordinator.StopRun]) and, unless opts says
// NoCascade, every live descendant but a detached child and the sessions below it. The descendants are
// stopped in one transaction: their pending runs end at once, their claimed and running runs get a
// stop request that their runners receive through their parked polls, as StopRun's do. An idle session
// is left as it is, but its live descendants are stopped all the same.
func (c *Coordinator) StopSession(ctx context.Context, id string, opts ...orchestrator.StopOpts) (*orchestrator.Session, error) {
	s, err := c.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	noCascade := len(opts) > 0 && opts[0].NoCascade
	if !noCascade {
		if err := c.stopTree(ctx, s.ID, orchestrator.CodeParentStopped, false); err != nil {
			return nil, err
		}
	}
	if !s.Status.Ended() && s.CurrentRunID != "" {
		if noCascade {
			// The session's end, which its runner may report much later, must not stop its tree either:
			// the event tells cascadeEnd so.
			if err := c.store.AppendEvents(ctx, s.ID, []*orchestrator.Event{eventOf(orchestrator.EventStopRequested, c.now(), treeStop{
				Reason: "stop", BySessionID: s.ID, NoCascade: true,
			})}); err != nil {
				return nil, err
			}
		}
		if _, err := c.StopRun(ctx, s.CurrentRunID); err != nil {
			return nil, err
		}
	}
	return c.GetSession(ctx, id)
}

// stopTree stops the live descendants of session id in one transaction (see stopDescendants).
func (c *Coordinator) stopTree(ctx context.Context, id, reason string, includeDetached bool) error {
	fx := &effects{}
	err := c.inTx(ctx, opStopTree, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		return c.stopDescendants(ctx, tx, fx, id, reason, includeDetached)
	})
	if err != nil {
		return err
	}
	c.apply(fx)
	return nil
}

// inTreeStop marks a context inside stopDescendants: the sessions it ends do not each look for their
// own descendants again, the stop of the whole tree takes care of them.
type inTreeStop struct{}

// stopDescendants stops, inside tx, every live descendant of session id (walking into detached
// children only with includeDetached): an event stop_requested with the reason on each, then a pending
// run ends stopped at once (with the reason as its error code) and a claimed or running one gets a stop
// request. Because it is part of the transaction that ended or stopped id, a crash leaves either the
// whole tree stopped or none of it; the runners' part — killing what they run — is driven by the stop
// requests, which the store keeps until each run has ended.
func (c *Coordinator) stopDescendants(ctx context.Context, tx store.Store, fx *effects, id, reason string, includeDetached bool) error {
	if ctx.Value(inTreeStop{}) != nil {
		return nil
	}
	members, err := tx.LiveDescendants(ctx, store.DescendantsParams{SessionID: id, IncludeDetached: includeDetached})
	if err != nil || len(members) == 0 {
		return err
	}
	ctx = context.WithValue(ctx, inTreeStop{}, true)
	now := c.now()
	msg := treeStopMessage(reason, id)
	for _, m := range members {
		if m.StopRequested || m.CurrentRunID == "" {
			continue // a stop already reached it
		}
		if err := tx.AppendEvents(ctx, m.SessionID, []*orchestrator.Event{eventOf(orchestrator.EventStopRequested, now, treeStop{
			Reason: reason, BySessionID: id,
		})}); err != nil {
			return err
		}
		fx.changed = append(fx.changed, m.SessionID)
		if m.RunStatus == orchestrator.RunPending {
			res := &orchestrator.Result{ResultType: string(m.AgentType), Error: msg, ErrorCode: reason}
			err := c.finishRun(ctx, tx, fx, m.CurrentRunID, "", orchestrator.RunStopped, res, msg)
			if err == nil {
				continue
			}
			if !errors.Is(err, orchestrator.ErrConflict) {
				return err
			}
			// Claimed meanwhile (another replica's claim committed first): ask its runner, below.
		}
		if _, err := tx.UpdateRun(ctx, m.CurrentRunID, []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}, "",
			store.RunUpdate{StopRequestedAt: &now}); err != nil {
			if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
				continue // it ended meanwhile
			}
			return err
		}
		if m.RunnerID != "" {
			fx.stopRunners = append(fx.stopRunners, m.RunnerID)
		} else if run, err := tx.GetRun(ctx, m.CurrentRunID); err == nil && run.RunnerID != "" {
			fx.stopRunners = append(fx.stopRunners, run.RunnerID)
		}
	}
	return nil
}

func treeStopMessage(reason, by string) string {
	switch reason {
	case orchestrator.CodeParentFailed:
		return fmt.Sprintf("stopped: ancestor session %s failed", by)
	case orchestrator.CodeParentStopped:
		return fmt.Sprintf("stopped: ancestor session %s was stopped", by)
	default:
		return fmt.Sprintf("stopped: %s (session %s)", reason, by)
	}
}

// cascadeEnd stops the live descendants of a session that has just ended failed or stopped, in the
// transaction that ended it.
func (c *Coordinator) cascadeEnd(ctx context.Context, tx store.Store, fx *effects, s *store.SessionBrief, stop *treeStop) error {
	var reason string
	switch s.Status {
	case orchestrator.SessionStopped:
		reason = orchestrator.CodeParentStopped
	case orchestrator.SessionFailed:
		reason = orchestrator.CodeParentFailed
	default:
		return nil
	}
	if stop != nil && stop.NoCascade {
		return nil // stopped with cascade=false
	}
	return c.stopDescendants(ctx, tx, fx, s.ID, reason, false)
}

// treeStop is the data of a stop_requested event.
type treeStop struct {
	// Reason is parent_stopped, parent_failed or budget_exceeded for a stop that came through the tree,
	// "stop" for the session's own stop without cascade.
	Reason      string `json:"reason"`
	BySessionID string `json:"by_session_id"`
	// NoCascade: the session's own stop asked to leave its descendants alone.
	NoCascade bool `json:"no_cascade,omitempty"`
}

// lastStopRequest returns the stop_requested event of the session's current run — the newest one since
// the session's previous run ended — or nil.
func lastStopRequest(ctx context.Context, tx store.Store, sessionID string) *treeStop {
	ev, err := tx.LastEvent(ctx, sessionID, []string{orchestrator.EventStopRequested, orchestrator.EventRunEnded}, 0)
	if err != nil || ev.Type != orchestrator.EventStopRequested {
		return nil
	}
	var st treeStop
	if ev.DecodeData(&st) != nil {
		return nil
	}
	return &st
}

// isTreeStop reports whether a callback tells of a child stopped because its tree was: such a callback
// is not delivered by resuming its parent, which was stopped (or is being stopped) itself.
func isTreeStop(cb *orchestrator.Callback) bool {
	return cb.Result != nil && cb.Type == "child_"+string(orchestrator.SessionStopped) &&
		slices.Contains([]string{orchestrator.CodeParentStopped, orchestrator.CodeParentFailed}, cb.Result.ErrorCode)
}

// dropTreeStops marks the callbacks of children stopped by their tree's stop delivered without a run
// (the parent is stopped, or being stopped: resuming it would undo the stop) and returns the others.
func (c *Coordinator) dropTreeStops(ctx context.Context, tx store.Store, pending []*orchestrator.Callback) ([]*orchestrator.Callback, error) {
	var drop []string
	keep := pending[:0:0]
	for _, cb := range pending {
		if isTreeStop(cb) {
			drop = append(drop, cb.ID)
		} else {
			keep = append(keep, cb)
		}
	}
	if len(drop) > 0 {
		if _, err := tx.MarkCallbacksDelivered(ctx, drop, "", c.now()); err != nil {
			return nil, err
		}
	}
	return keep, nil
}
