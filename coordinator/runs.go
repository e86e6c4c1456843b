package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// StartRun validates the request, creates the session (or readies it for a resume) and its run in one
// transaction, and wakes a runner that can take it. See [orchestrator.StartRunParams] for the fields.
//
// Mode is how the caller learns the outcome (sync, async_poll, async_callback) and defaults to async_poll;
// Type is whether the run starts a session or resumes one. The legacy "mode": "resume" is read as "type":
// "resume", in sync mode when the request asks to wait (p.Wait > 0) and async_poll otherwise (see
// [legacyResume]). A resume's parameters are the new prompt and are checked against the implicit prompt
// schema; a resumed session keeps its first run's demands and is pinned to the runner of its last run,
// whose host holds the executor's conversation state.
func (c *Coordinator) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	return c.startRun(ctx, p, "")
}

// startRun is StartRun; a start whose rerunOf is set creates a session that re-runs that one.
func (c *Coordinator) startRun(ctx context.Context, p orchestrator.StartRunParams, rerunOf string) (*orchestrator.StartRunResult, error) {
	params, env, err := c.runInputs(&p)
	if err != nil {
		return nil, err
	}
	due, err := c.checkSubmission(&p)
	if err != nil {
		return nil, err
	}
	var key *store.IdempotencyKey
	if p.IdempotencyKey != "" {
		// The key is looked up only when the create fails: a first request (the common case) costs one
		// write, a retry the failed create and the look-up.
		key = &store.IdempotencyKey{Key: p.IdempotencyKey, RequestHash: requestHash(p)}
	}
	var (
		run *orchestrator.Run
		fx  = &effects{}
	)
	ctx, span := c.tracer.Start(ctx, spanCreate, trace.WithAttributes(attrAgent.String(p.AgentName)))
	switch p.Type {
	case orchestrator.RunTypeStart:
		run, err = c.startSession(ctx, p, params, env, due, key, rerunOf, fx)
	case orchestrator.RunTypeResume:
		run, err = c.resumeSession(ctx, p, params, env, due, key, fx)
	default:
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"type must be start or resume, not %q; sync, async_poll and async_callback are modes (the mode field)", p.Type)
	}
	endSpan(span, run, err)
	if err != nil && key != nil {
		// The key may be recorded: by the first try of this request, or by a concurrent one (the create
		// failed with errKeyTaken), or — when the request was refused — by a request that was accepted
		// before something changed (the agent was disabled since): the first answer stands.
		if res, rerr := c.replay(ctx, p, key); res != nil || rerr != nil {
			return res, rerr
		}
		if errors.Is(err, errKeyTaken) {
			return nil, orchestrator.Errorf(orchestrator.ErrConflict, "conflict", "the session's or the run's id is taken; retry")
		}
	}
	if err != nil {
		return nil, err
	}
	c.apply(fx)
	if run.RunAt != nil {
		c.armDue(*run.RunAt, true)
	}
	status := orchestrator.SessionPending
	if run.Held {
		status = orchestrator.SessionWaiting
	}
	return c.answer(ctx, p, &orchestrator.StartRunResult{RunID: run.ID, SessionID: run.SessionID, Status: status})
}

// answer completes StartRun's answer: in sync mode, it waits for the run to end (up to p.Wait) and adds
// its outcome (see [Coordinator.WaitRun]).
func (c *Coordinator) answer(ctx context.Context, p orchestrator.StartRunParams, res *orchestrator.StartRunResult) (*orchestrator.StartRunResult, error) {
	if p.Mode != orchestrator.ModeSync {
		if res.Replayed {
			if s, err := c.store.GetSession(ctx, res.SessionID); err == nil {
				res.Status = s.Status
			}
		}
		return res, nil
	}
	wait := p.Wait
	if wait <= 0 || wait > c.cfg.SyncWait {
		wait = c.cfg.SyncWait
	}
	out, err := c.waitRun(ctx, res.RunID, res.SessionID, wait)
	if err != nil {
		return nil, err
	}
	out.Replayed = res.Replayed
	return out, nil
}

// WaitRun returns the run's outcome once it has ended, or its session's current status when wait elapses
// first. It waits for the run, not for the session: a callback can resume the session the moment the run
// ends (a child started in async_callback mode that ended first), and the answer is this run's outcome,
// read from the session's log when the session has moved on. It parks on a notification, never a sleep
// loop.
func (c *Coordinator) WaitRun(ctx context.Context, id string, wait time.Duration) (*orchestrator.StartRunResult, error) {
	run, err := c.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.Status.Terminal() {
		wait = 0 // an end is final: one look answers
	}
	return c.waitRun(ctx, run.ID, run.SessionID, wait)
}

// waitRun is WaitRun for a run whose session is known (a sync start knows it). Each look reads the
// session: while the run is the session's current run, the session's status is the run's (a run's end
// ends its session in the same transaction) and an ended session holds the run's outcome, so that one
// consistent read answers. Only a session that has moved on to a later run makes a look read the run too;
// that run's result is then read from the session's log.
func (c *Coordinator) waitRun(ctx context.Context, runID, sessionID string, wait time.Duration) (*orchestrator.StartRunResult, error) {
	var (
		s   *orchestrator.Session
		run *orchestrator.Run // read only once the session has moved on
	)
	// A run's end is told on its session's key, like the session's own.
	if _, err := c.await(ctx, wait, sessionKey(sessionID), "", func() (bool, error) {
		var err error
		if s, err = c.getSession(ctx, sessionID); err != nil {
			return false, err
		}
		if s.CurrentRunID == runID {
			run = nil
			return s.Status.Ended(), nil
		}
		// A retried run's outcome is its last attempt's.
		if run, err = c.lastAttempt(ctx, sessionID, runID); err != nil {
			return false, err
		}
		if run.ID == s.CurrentRunID {
			run = nil
			return s.Status.Ended(), nil
		}
		return run.Status.Terminal(), nil
	}); err != nil {
		return nil, err
	}
	res := &orchestrator.StartRunResult{RunID: runID, SessionID: sessionID, Status: s.Status}
	switch {
	case run == nil:
		if s.Status.Ended() {
			res.Result, res.Error = s.Result, s.Error
		}
		return res, nil // ended, or still going when the wait ended
	case !run.Status.Terminal():
		return res, nil
	}
	// The session has moved on to a later run: this run's result is the last result event before its
	// run_ended marker.
	res.Status, res.Error = orchestrator.SessionStatus(run.Status), run.Error
	var err error
	if res.Result, err = c.resultOfRun(ctx, sessionID, run.ID); err != nil {
		return nil, err
	}
	return res, nil
}

// resultOfRun reads a past run's result from its session's log: the last result event before the run's
// run_ended marker.
func (c *Coordinator) resultOfRun(ctx context.Context, sessionID, runID string) (*orchestrator.Result, error) {
	var last *orchestrator.Event
	for after := int64(0); ; {
		events, err := c.store.ListEvents(ctx, sessionID, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, ev := range events {
			after = ev.Seq
			switch ev.Type {
			case orchestrator.EventResult:
				last = ev
			case orchestrator.EventRunEnded:
				var end struct {
					RunID string `json:"run_id"`
				}
				if json.Unmarshal(ev.Data, &end) == nil && end.RunID == runID {
					if last == nil {
						return nil, nil
					}
					res := new(orchestrator.Result)
					if err := json.Unmarshal(last.Data, res); err != nil {
						return nil, fmt.Errorf("run %s: result event: %w", runID, err)
					}
					return res, nil
				}
			}
		}
		if len(events) < 1000 {
			return nil, nil
		}
	}
}

// runInputs fills p's defaults (mode async_poll, type start; the legacy resume mode read as a type) and
// checks what a request may carry whatever its agent. It returns the parameters (prompt sugar applied)
// and metadata.env.
func (c *Coordinator) runInputs(p *orchestrator.StartRunParams) (json.RawMessage, map[string]string, error) {
	if err := legacyResume(p); err != nil {
		return nil, nil, err
	}
	if p.Mode == "" {
		p.Mode = orchestrator.ModeAsyncPoll
	}
	if !p.Mode.Valid() {
		return nil, nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"mode must be sync, async_poll or async_callback (how you learn the outcome), not %q; start or resume is the type field", p.Mode)
	}
	if p.Type == "" {
		p.Type = orchestrator.RunTypeStart
	}
	params, err := c.promptSugar(*p)
	if err != nil {
		return nil, nil, err
	}
	env, err := c.checkRunInputs(p)
	if err != nil {
		return nil, nil, err
	}
	return params, env, nil
}

// legacyResume reads the legacy "mode": "resume" — what early API examples sent for a resume — as
// "type": "resume", with the mode the caller could not say: sync when it asked to wait (p.Wait, the
// HTTP API's ?wait=), async_poll otherwise.
func legacyResume(p *orchestrator.StartRunParams) error {
	if p.Mode != "resume" {
		return nil
	}
	if p.Type != "" && p.Type != orchestrator.RunTypeResume {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"mode \"resume\" (the legacy spelling of type resume) contradicts type %q; give type and mode (sync, async_poll or async_callback)", p.Type)
	}
	p.Type, p.Mode = orchestrator.RunTypeResume, ""
	if p.Wait > 0 {
		p.Mode = orchestrator.ModeSync
	}
	return nil
}

// promptSugar turns "prompt" into {"prompt": …} and checks the parameters' size and shape.
func (c *Coordinator) promptSugar(p orchestrator.StartRunParams) (json.RawMessage, error) {
	params := bytes.TrimSpace(p.Parameters)
	if bytes.Equal(params, []byte("null")) {
		params = nil
	}
	if p.Prompt != "" {
		if len(params) > 0 {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "give either prompt or parameters, not both")
		}
		params, _ = json.Marshal(map[string]string{"prompt": p.Prompt})
	}
	if len(params) > c.limits.MaxParametersBytes {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "parameters_too_large", "parameters exceed %d bytes", c.limits.MaxParametersBytes)
	}
	if len(params) > 0 && params[0] != '{' {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "parameters must be a JSON object")
	}
	return params, nil
}

// checkRunInputs checks what a request may carry whatever its agent, and returns its metadata.env, which
// the agent's blueprint must allow ([orchestrator.Blueprint.CheckRunEnv]).
func (c *Coordinator) checkRunInputs(p *orchestrator.StartRunParams) (map[string]string, error) {
	if len(p.Metadata) > c.limits.MaxParametersBytes {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "metadata_too_large", "metadata exceeds %d bytes", c.limits.MaxParametersBytes)
	}
	env, err := orchestrator.MetadataEnv(p.Metadata)
	if err != nil {
		return nil, err
	}
	if m := bytes.TrimSpace(p.Metadata); len(m) == 0 || bytes.Equal(m, []byte("null")) {
		p.Metadata = nil
	}
	return env, c.checkRunOptions(p)
}

func (c *Coordinator) checkRunOptions(p *orchestrator.StartRunParams) error {
	if len(p.OutputSchema) > c.limits.MaxSchemaBytes {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "schema_too_large", "output_schema exceeds %d bytes", c.limits.MaxSchemaBytes)
	}
	if os := bytes.TrimSpace(p.OutputSchema); len(os) > 0 && !bytes.Equal(os, []byte("null")) {
		// An over-limit schema is "schema_too_complex", refused before anything costly (CompileSchema).
		if _, err := c.schemas.CompileOutput(os); err != nil {
			return err
		}
	} else {
		p.OutputSchema = nil
	}
	if p.CallbackURL != "" {
		u, err := url.Parse(p.CallbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || len(p.CallbackURL) > 2048 {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "callback_url must be an absolute http or https URL")
		}
		// What the URL shows is refused now; where a name leads is checked when the delivery connects.
		if err := c.egress.CheckURL(u); err != nil {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "callback_url_refused", "callback_url: %v", err)
		}
		if len(c.cfg.WebhookSecret) == 0 {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "callback_url_unavailable",
				"callback_url needs a webhook secret configured on the coordinator, to sign the deliveries")
		}
	}
	if err := p.Retry.Validate(); err != nil {
		return err
	}
	if err := checkTimeouts(p); err != nil {
		return err
	}
	if len(p.ProjectDir) > 4096 || strings.ContainsRune(p.ProjectDir, 0) {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "project_dir is not valid")
	}
	if p.Demands != nil {
		if err := p.Demands.Validate(); err != nil {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "demands: %v", err)
		}
	}
	if err := checkCacheMode(p); err != nil {
		return err
	}
	if p.Mode == orchestrator.ModeAsyncCallback && p.ParentSessionID == "" && p.Type != orchestrator.RunTypeResume {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "async_callback mode needs parent_session_id: the session to resume with the result")
	}
	return nil
}

// checkParent enforces the callback rules: a parent must exist, and only an AI session can be resumed with
// a child's result (a deterministic session cannot be resumed, so its children run in sync mode). It
// returns the parent, nil when there is none.
func (c *Coordinator) checkParent(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.Session, error) {
	if p.ParentSessionID == "" {
		return nil, nil
	}
	parent, err := c.store.GetSession(ctx, p.ParentSessionID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "parent_session_not_found", "parent session %q not found", p.ParentSessionID)
	}
	if err != nil {
		return nil, err
	}
	if p.Mode == orchestrator.ModeAsyncCallback && parent.AgentType == orchestrator.AgentTypeDeterministic {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "callback_to_deterministic",
			"deterministic sessions cannot receive callbacks: they cannot be resumed; start the child in sync mode instead")
	}
	return parent, nil
}

func mergeRequestDemands(d orchestrator.Demands, p orchestrator.StartRunParams) (orchestrator.Demands, error) {
	var err error
	if p.Demands != nil {
		if d, err = d.Merge(*p.Demands); err != nil {
			return d, err
		}
	}
	if p.ProjectDir != "" {
		if d, err = d.Merge(orchestrator.Demands{ProjectDir: p.ProjectDir}); err != nil {
			return d, err
		}
	}
	return d, nil
}

// validateParameters applies the schema's defaults and checks params against it. Without a schema any
// JSON object is accepted.
func (c *Coordinator) validateParameters(agent string, schema, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if len(schema) == 0 {
		if !json.Valid(params) {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_json", "parameters are not valid JSON")
		}
		return params, nil
	}
	compiled, err := c.schemas.Compile(schema)
	if err != nil {
		return nil, fmt.Errorf("agent %q has an unusable parameters_schema: %w", agent, err)
	}
	normalized, ferrs, err := compiled.Normalize(params)
	if err != nil {
		return nil, err
	}
	if len(ferrs) > 0 {
		return nil, &orchestrator.ValidationError{AgentName: agent, Errors: ferrs, Schema: schema}
	}
	return normalized, nil
}

func (c *Coordinator) resumeSession(ctx context.Context, p orchestrator.StartRunParams, params json.RawMessage, env map[string]string,
	due time.Time, key *store.IdempotencyKey, fx *effects,
) (*orchestrator.Run, error) {
	notResumable := func(agent string) error {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "resume_not_supported", "Deterministic agents do not support resumption").With("agent_name", agent)
	}
	// Naming a deterministic agent is reason enough, whatever the session: such an agent is never resumable.
	if p.AgentName != "" {
		if a, err := c.store.GetAgent(ctx, p.AgentName); err == nil && a.Type() == orchestrator.AgentTypeDeterministic {
			return nil, notResumable(a.Name)
		}
	}
	if p.SessionID == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "resume needs session_id")
	}
	s, err := lookup(c.store.GetSession(ctx, p.SessionID)).as("session", p.SessionID)
	if err != nil {
		return nil, err
	}
	if s.AgentType == orchestrator.AgentTypeDeterministic {
		return nil, notResumable(s.AgentName)
	}
	if p.AgentName != "" && p.AgentName != s.AgentName {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "session %s belongs to agent %q, not %q", s.ID, s.AgentName, p.AgentName)
	}
	if (p.ParentSessionID != "" && p.ParentSessionID != s.ParentSessionID) || p.CallbackURL != "" || len(p.OutputSchema) > 0 || p.Retry != nil || p.Detached || p.Limits != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "a resume keeps the session's parent, callback, output schema, retry policy, detachment and tree limits")
	}
	if p.Mode == orchestrator.ModeAsyncCallback {
		// The resumed run calls back the session's own parent when it ends.
		if s.ParentSessionID == "" {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "session %s has no parent session to call back", s.ID)
		}
		p.ParentSessionID = s.ParentSessionID
		if _, err := c.checkParent(ctx, p); err != nil {
			return nil, err
		}
	}
	if err := c.checkResumeEnv(ctx, s, p.Metadata, env); err != nil {
		return nil, err
	}
	normalized, err := c.validateParameters(s.AgentName, json.RawMessage(orchestrator.ImplicitPromptSchema), params)
	if err != nil {
		return nil, err
	}
	demands := s.Demands
	if s.RunnerID != "" && s.ExecutorSessionID != "" {
		demands.RunnerID = s.RunnerID // the conversation state lives on that runner's host
	}
	if demands, err = mergeRequestDemands(demands, p); err != nil {
		return nil, err
	}
	run := c.newResumeRun(s, normalized, p.Mode, demands, p.Metadata)
	run.TraceParent = traces.Format(ctx)
	var b *orchestrator.Blueprint
	if agent, err := c.startAgent(ctx, s.AgentName); err == nil {
		b = agent.Blueprint // the agent's limits as they are now
	}
	submit(run, &p, due, b)
	if b != nil && b.RateLimit != nil {
		run.RateBucket = b.RateLimit.Bucket(s.Parameters) // a resume's parameters are its prompt: the session's say whose it is
	}
	run.TimeoutSeconds, _ = runTimeouts(&p, b, run.CreatedAt, due) // a resume has no start deadline
	err = c.commitRun(ctx, key, run, func(ctx context.Context, tx store.Store) error {
		return tx.InTx(ctx, func(ctx context.Context, tx store.Store) error { return c.queueResume(ctx, tx, s, run) })
	})
	if errors.Is(err, orchestrator.ErrConflict) {
		return nil, orchestrator.Errorf(orchestrator.ErrConflict, "session_busy", "session %s is not idle; resume it after its current run ends", s.ID)
	}
	if err != nil {
		return nil, err
	}
	fx.wakeFor(run)
	return run, nil
}

// checkResumeEnv checks the metadata.env a resume runs with — the request's, or the session's when the
// request has no metadata — against the agent's blueprint as it is now: allowed_env may have shrunk since
// the session started.
func (c *Coordinator) checkResumeEnv(ctx context.Context, s *orchestrator.Session, metadata json.RawMessage, env map[string]string) error {
	if metadata == nil {
		var err error
		if env, err = orchestrator.MetadataEnv(s.Metadata); err != nil {
			return err
		}
	}
	if len(env) == 0 {
		return nil
	}
	agent, err := c.startAgent(ctx, s.AgentName)
	if err != nil {
		return err
	}
	return agent.Blueprint.CheckRunEnv(env)
}

func (c *Coordinator) newResumeRun(s *orchestrator.Session, params json.RawMessage, mode orchestrator.Mode, demands orchestrator.Demands, metadata json.RawMessage) *orchestrator.Run {
	if metadata == nil {
		metadata = s.Metadata
	}
	return &orchestrator.Run{
		ID:           ids.New(ids.Run),
		SessionID:    s.ID,
		AgentName:    s.AgentName,
		AgentType:    s.AgentType,
		Type:         orchestrator.RunTypeResume,
		Mode:         mode,
		Status:       orchestrator.RunPending,
		Parameters:   params,
		Demands:      demands,
		ProjectDir:   s.ProjectDir,
		OutputSchema: s.OutputSchema,
		Metadata:     metadata,
		Attempt:      1,
		MaxAttempts:  max(s.MaxAttempts, 1),
		CreatedAt:    c.now(),
	}
}

// queueResume moves an ended session back to pending with run as its current run. The guard on the
// session's status makes a concurrent second resume lose with ErrConflict.
func (c *Coordinator) queueResume(ctx context.Context, tx store.Store, s *orchestrator.Session, run *orchestrator.Run) error {
	if _, err := tx.UpdateSession(ctx, s.ID, []orchestrator.SessionStatus{orchestrator.SessionCompleted, orchestrator.SessionFailed, orchestrator.SessionStopped}, store.SessionUpdate{
		Status: new(orchestrator.SessionPending), CurrentRunID: &run.ID, ClearEndedAt: true, Error: new(""), UpdatedAt: run.CreatedAt,
		Attempt: &run.Attempt, ClearNextAttemptAt: true, // a resume's attempts count afresh
	}); err != nil {
		return err
	}
	return tx.CreateRun(ctx, run)
}

// GetRun returns a run.
func (c *Coordinator) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	return lookup(c.store.GetRun(ctx, id)).as("run", id)
}

// ListRuns lists runs, oldest first.
func (c *Coordinator) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 1000
	}
	return c.store.ListRuns(ctx, f)
}

// StopRun stops a run. A pending run is stopped at once without reaching a runner. A claimed or running
// run gets a stop request that its runner receives through its parked poll immediately; the runner kills
// the execution and reports the run stopped. Stopping an ended run changes nothing.
func (c *Coordinator) StopRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	run, err := lookup(c.store.GetRun(ctx, id)).as("run", id)
	if err != nil {
		return nil, err
	}
	switch run.Status {
	case orchestrator.RunPending:
		fx := &effects{}
		err := c.inTx(ctx, opRunEnd, func(ctx context.Context, tx store.Store) error {
			*fx = effects{}
			if err := c.finishRun(ctx, tx, fx, run.ID, "", orchestrator.RunStopped, nil, "stopped before it started"); err != nil {
				return err
			}
			if run.Held {
				return c.cancelInputs(ctx, tx, fx, run.SessionID) // nobody need approve it any more
			}
			return nil
		})
		if errors.Is(err, orchestrator.ErrConflict) {
			return c.StopRun(ctx, id) // it was claimed meanwhile: ask its runner
		}
		if err != nil {
			return nil, err
		}
		c.apply(fx)
	case orchestrator.RunClaimed, orchestrator.RunRunning:
		if run.StopRequestedAt == nil {
			now := c.now()
			_, err := c.store.UpdateRun(ctx, id, []orchestrator.RunStatus{orchestrator.RunClaimed, orchestrator.RunRunning}, "", store.RunUpdate{StopRequestedAt: &now})
			if err != nil && !errors.Is(err, orchestrator.ErrConflict) {
				return nil, err
			}
			c.wake(runnerKey(run.RunnerID))
			c.wake(runnerStopsKey(run.RunnerID))
		}
	}
	return c.GetRun(ctx, id)
}
