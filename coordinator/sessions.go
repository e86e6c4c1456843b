package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"
)

// GetSession returns a session; a pending one says why it waits when a rate limit holds its run or it
// waits for an identical start's result (WaitingReason).
func (c *Coordinator) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	s, err := c.getSession(ctx, id)
	if err != nil {
		return nil, err
	}
	c.waitingReason(ctx, s)
	return s, nil
}

// getSession is GetSession without the waiting reason: what the coordinator's own waits read.
func (c *Coordinator) getSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	return lookup(c.store.GetSession(ctx, id)).as("session", id)
}

// waitingReason sets s.WaitingReason when s is pending for a reason the store knows: its run waits for an
// identical start in flight (cache_in_flight), or its bucket's rate limit is full (rate_limited). A
// failed look leaves it empty: the reason is a hint, not a state.
func (c *Coordinator) waitingReason(ctx context.Context, s *orchestrator.Session) {
	if s.Status != orchestrator.SessionPending || s.CurrentRunID == "" {
		return
	}
	run, err := c.store.GetRun(ctx, s.CurrentRunID)
	if err != nil || run.Status != orchestrator.RunPending {
		return
	}
	now := c.now()
	switch {
	case run.CacheRole == cacheWait:
		s.WaitingReason = orchestrator.WaitingCacheInFlight
	case run.RateLimit > 0 && (run.RunAt == nil || !run.RunAt.After(now)):
		n, err := c.store.RateLimitStarts(ctx, run.AgentName, run.RateBucket, now.Add(-run.RatePeriod))
		if err == nil && n >= run.RateLimit {
			s.WaitingReason = orchestrator.WaitingRateLimited
		}
	}
}

// ListSessions returns a page of sessions, oldest first. Limit defaults to 100 and is capped at 1000;
// NextCursor continues the listing.
func (c *Coordinator) ListSessions(ctx context.Context, f orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "limit must be at most 1000")
	}
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	list, err := c.store.ListSessions(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &orchestrator.SessionPage{Sessions: list}
	if len(list) > want {
		page.Sessions = list[:want]
		page.NextCursor = list[want-1].ID
	}
	return page, nil
}

// WaitSession returns the session as soon as it has ended, or as it is when wait elapses. It parks on a
// notification, never a sleep loop.
func (c *Coordinator) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	var s *orchestrator.Session
	done, err := c.await(ctx, wait, sessionKey(id), "", func() (bool, error) {
		var err error
		s, err = c.getSession(ctx, id)
		return err == nil && s.Status.Ended(), err
	})
	if err != nil || done || wait <= 0 {
		if s != nil {
			c.waitingReason(ctx, s)
		}
		return s, err
	}
	return c.GetSession(ctx, id) // as it is when the wait ends
}

// DeleteSession deletes an ended session with its runs, events, callbacks and artifacts. A session with a run in
// progress is ErrConflict: stop it first.
func (c *Coordinator) DeleteSession(ctx context.Context, id string) error {
	err := c.inTx(ctx, opDeleteSession, func(ctx context.Context, tx store.Store) error {
		s, err := lookup(tx.GetSession(ctx, id)).as("session", id)
		if err != nil {
			return err
		}
		if !s.Status.Ended() {
			return orchestrator.Errorf(orchestrator.ErrConflict, "session_active", "session %s is %s; stop it before deleting it", id, s.Status)
		}
		return tx.DeleteSession(ctx, id)
	})
	if err == nil {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
		c.collectArtifactGarbage(ctx)
	}
	return err
}

func (c *Coordinator) startSession(ctx context.Context, p orchestrator.StartRunParams, params json.RawMessage, env map[string]string,
	due time.Time, key *store.IdempotencyKey, rerunOf string, fx *effects,
) (*orchestrator.Run, error) {
	s, run, gate, err := c.newSession(ctx, p, params, env, due)
	if err != nil {
		return nil, err
	}
	s.RerunOf = rerunOf
	if run.CacheKey != "" && (gate != nil || rerunOf != "") {
		// A gated start executes once approved, later, and a rerun asks to execute again: both fill the
		// cache and read nothing.
		run.CacheRole = cacheWrite
	}
	switch {
	case gate != nil:
		err = c.createGatedSession(ctx, key, s, run, gate, fx)
	case run.CacheKey != "" && run.CacheRole == "":
		if err := c.startCached(ctx, p, key, s, run, fx); err != nil {
			return nil, err
		}
		return run, nil
	default:
		err = c.createSession(ctx, key, s, run)
	}
	if err != nil {
		return nil, err
	}
	fx.wakeFor(run)
	return run, nil
}

// newSession checks a start request against its agent and returns the session and first run it creates,
// not yet stored, and the approval request that gates the run when the agent or the request asks for one
// (see gateSession).
func (c *Coordinator) newSession(ctx context.Context, p orchestrator.StartRunParams, params json.RawMessage, env map[string]string,
	due time.Time,
) (*orchestrator.Session, *orchestrator.Run, *orchestrator.InputRequest, error) {
	if p.AgentName == "" {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "agent_name is required")
	}
	if p.SessionID != "" {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "session_id is only for resume; a new session gets a fresh id")
	}
	agent, err := c.startAgent(ctx, p.AgentName)
	if err != nil {
		return nil, nil, nil, err
	}
	b := agent.Blueprint // shared with the agent cache: read only
	if b.Disabled {
		return nil, nil, nil, orchestrator.Errorf(orchestrator.ErrConflict, "agent_disabled", "agent %q is disabled", agent.Name)
	}
	if err := b.CheckRunEnv(env); err != nil {
		return nil, nil, nil, err
	}
	parent, err := c.checkParent(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	normalized, err := c.validateParameters(agent.Name, b.EffectiveParametersSchema(), params)
	if err != nil {
		return nil, nil, nil, err
	}
	demands := orchestrator.Demands{}
	if b.Demands != nil {
		demands = *b.Demands
		demands.Tags = slices.Clone(demands.Tags) // the run's own, not the cached blueprint's
	}
	if agent.RunnerID != "" {
		demands.RunnerID = agent.RunnerID
	}
	if demands, err = mergeRequestDemands(demands, p); err != nil {
		return nil, nil, nil, err
	}
	outputSchema := p.OutputSchema
	if len(outputSchema) == 0 {
		outputSchema = b.OutputSchema
	}
	now := c.now()
	s := &orchestrator.Session{
		ID:              ids.New(ids.Session),
		AgentName:       agent.Name,
		AgentType:       b.Type,
		Status:          orchestrator.SessionPending,
		ParentSessionID: p.ParentSessionID,
		Callback:        p.Mode == orchestrator.ModeAsyncCallback,
		ProjectDir:      p.ProjectDir,
		Parameters:      normalized,
		OutputSchema:    outputSchema,
		Demands:         demands,
		Metadata:        p.Metadata,
		CreatedAt:       now,
		UpdatedAt:       now,
	}
	run := &orchestrator.Run{
		ID:           ids.New(ids.Run),
		SessionID:    s.ID,
		AgentName:    agent.Name,
		AgentType:    b.Type,
		Type:         orchestrator.RunTypeStart,
		Mode:         p.Mode,
		Status:       orchestrator.RunPending,
		Parameters:   normalized,
		Demands:      demands,
		ProjectDir:   p.ProjectDir,
		OutputSchema: outputSchema,
		Metadata:     p.Metadata,
		CallbackURL:  p.CallbackURL,
		CreatedAt:    now,
	}
	if err := c.placeInTree(p, parent, s); err != nil {
		return nil, nil, nil, err
	}
	submit(run, &p, due, b)
	if err := cacheKeyOf(run, b, env, &p); err != nil {
		return nil, nil, nil, err
	}
	s.Retry, s.MaxAttempts = sessionRetry(&p, b)
	s.Attempt, run.Attempt, run.MaxAttempts = 1, 1, s.MaxAttempts
	run.TimeoutSeconds, run.StartDeadline = runTimeouts(&p, b, now, due)
	s.CurrentRunID = run.ID
	run.TraceParent, s.TraceID = traces.Format(ctx), traces.TraceID(ctx)
	gate, err := c.gateSession(s, run, b, p)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, run, gate, nil
}

// createSession creates the session and its first run, with the idempotency key when there is one, in
// one write of the store.
func (c *Coordinator) createSession(ctx context.Context, key *store.IdempotencyKey, s *orchestrator.Session, run *orchestrator.Run) error {
	if c.metrics != nil {
		defer c.timeStore(opStartRun, time.Now())
	}
	if s.Depth > 0 {
		return c.createChild(ctx, key, s, run)
	}
	if key == nil {
		return c.createSessionWithRun(ctx, s, run) // a schedule's firing writes its tick in the same transaction
	}
	key.RunID, key.SessionID, key.CreatedAt = run.ID, run.SessionID, run.CreatedAt
	err := c.store.CreateSessionWithRunOnce(ctx, s, run, key)
	if errors.Is(err, orchestrator.ErrConflict) {
		return errKeyTaken // StartRun tells a taken key from a clash of ids when it looks the key up
	}
	return err
}

// createSessionWithRun creates a new session and its run, together with the schedule write of a
// scheduled StartRun (see startFiring).
func (c *Coordinator) createSessionWithRun(ctx context.Context, s *orchestrator.Session, run *orchestrator.Run) error {
	write, _ := ctx.Value(firingKey{}).(firing)
	if write == nil {
		return c.store.CreateSessionWithRun(ctx, s, run)
	}
	return c.store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := write(ctx, tx, s); err != nil {
			return err
		}
		return tx.CreateSessionWithRun(ctx, s, run)
	})
}
