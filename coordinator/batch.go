package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// sessionsCreator is the store capability StartRuns uses to create a fan-out in one transaction with
// one statement per table (store/sqlstore has it). Without it the sessions are created one by one, still
// in one transaction.
type sessionsCreator interface {
	CreateSessionsWithRuns(ctx context.Context, sessions []*orchestrator.Session, runs []*orchestrator.Run) error
}

// StartRuns starts a new session with its run for each item, as StartRun does, in one call (fan-out).
// It validates every item first: when any is invalid, it creates nothing and returns an
// [orchestrator.ErrInvalid] error (code invalid_runs) whose "items" detail lists, for each invalid item,
// its "index" in ps beside the error StartRun would have returned (its code, message and details). Else
// it creates every session and run in one transaction, all or none, and returns their ids in the order
// of ps.
//
// A batch starts new sessions only (type start); a resume goes through StartRun. Sync mode is refused:
// a caller that waits watches each session (WaitSession). Priority, run_at and concurrency keys apply
// to each item as in StartRun; an idempotency_key is refused (retry a batch whole instead).
func (c *Coordinator) StartRuns(ctx context.Context, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	if len(ps) == 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "runs must hold at least one run")
	}
	sessions := make([]*orchestrator.Session, 0, len(ps))
	runs := make([]*orchestrator.Run, 0, len(ps))
	gates := make([]*orchestrator.InputRequest, 0, len(ps))
	gated := false
	var invalid []any
	for i := range ps {
		// Each item's output_schema compile is bounded (orchestrator.CompileSchema); a client that has gone
		// does not make the coordinator check the rest.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := ps[i]
		s, run, gate, err := c.newBatchSession(ctx, &p)
		if err != nil {
			item, ok := itemError(err)
			if !ok {
				return nil, err // the coordinator's own failure, not the item's
			}
			item["index"] = i
			invalid = append(invalid, item)
			continue
		}
		if run.CacheKey != "" {
			run.CacheRole = cacheWrite // a fan-out executes every item; its results fill the cache
		}
		sessions, runs, gates = append(sessions, s), append(runs, run), append(gates, gate)
		gated = gated || gate != nil
	}
	if len(invalid) > 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_runs",
			"%d of %d runs are invalid; none was created", len(invalid), len(ps)).With("items", invalid)
	}
	var err error
	fx := &effects{}
	// Children are admitted to their trees in the transaction that creates them (createChild).
	hasChild := slices.ContainsFunc(sessions, func(s *orchestrator.Session) bool { return s.Depth > 0 })
	if sc, ok := c.store.(sessionsCreator); ok && !gated && !hasChild {
		err = sc.CreateSessionsWithRuns(ctx, sessions, runs)
	} else {
		// Approval gates are written beside their sessions, in the same transaction.
		err = c.store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
			*fx = effects{}
			for i := range sessions {
				if sessions[i].Depth > 0 {
					if err := admitChild(ctx, tx, sessions[i]); err != nil {
						return err
					}
				}
				if err := tx.CreateSessionWithRun(ctx, sessions[i], runs[i]); err != nil {
					return err
				}
				if gates[i] != nil {
					if err := c.openGate(ctx, tx, fx, runs[i], gates[i]); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	out := make([]*orchestrator.StartRunResult, len(runs))
	for i, run := range runs {
		fx.created = append(fx.created, run.AgentName) // counted as StartRun counts its run
		if run.Demands.RunnerID == "" {
			fx.wakeAll = true
		} else if !slices.Contains(fx.wakeRunners, run.Demands.RunnerID) {
			fx.wakeRunners = append(fx.wakeRunners, run.Demands.RunnerID)
		}
		out[i] = &orchestrator.StartRunResult{RunID: run.ID, SessionID: run.SessionID, Status: sessions[i].Status}
	}
	c.apply(fx)
	for _, gate := range gates {
		if gate != nil {
			c.countInput("opened", gate.Kind)
		}
	}
	for _, run := range runs {
		if run.RunAt != nil {
			c.armDue(*run.RunAt, true)
		}
	}
	return out, nil
}

// newBatchSession checks one item of a batch and returns the session and run it creates.
func (c *Coordinator) newBatchSession(ctx context.Context, p *orchestrator.StartRunParams) (*orchestrator.Session, *orchestrator.Run, *orchestrator.InputRequest, error) {
	params, env, err := c.runInputs(p)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.Type != orchestrator.RunTypeStart {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"a batch starts new sessions (type start); resume a session with a request of its own")
	}
	if p.Mode == orchestrator.ModeSync {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"a batch does not wait (mode sync); start it async_poll and wait on each session")
	}
	if p.IdempotencyKey != "" {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"idempotency_key is not available in a batch: a batch is created all or none, so retry it whole, or start keyed runs one at a time")
	}
	due, err := c.checkSubmission(p)
	if err != nil {
		return nil, nil, nil, err
	}
	return c.newSession(ctx, *p, params, env, due)
}

// itemError renders the error of one invalid item as the body StartRun's error would have over HTTP, and
// reports whether err is the item's fault (invalid, unknown agent, disabled, too large) rather than the
// coordinator's.
func itemError(err error) (map[string]any, bool) {
	var (
		ve *orchestrator.ValidationError
		oe *orchestrator.Error
		b  []byte
	)
	switch {
	case errors.As(err, &ve):
		b, _ = json.Marshal(ve)
	case !errors.Is(err, orchestrator.ErrInvalid) && !errors.Is(err, orchestrator.ErrNotFound) &&
		!errors.Is(err, orchestrator.ErrConflict) && !errors.Is(err, orchestrator.ErrTooLarge):
		return nil, false
	case errors.As(err, &oe):
		b, _ = oe.MarshalJSON()
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		m = map[string]any{"error": orchestrator.ErrorCode(err), "message": err.Error()}
	}
	return m, true
}
