package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// effects collects what a transaction did that parked goroutines must hear about. They are notified after
// the commit, never before: a waiter woken early would read the old state and park again.
type effects struct {
	ended       []string // sessions whose run ended
	changed     []string // sessions with new events or status
	wakeRunners []string // runners that have new work pinned to them
	wakeAll     bool     // unpinned work that any runner may take
	webhooks    bool     // webhook deliveries were queued
}

func (fx *effects) wakeFor(r *Run) {
	if r.Demands.RunnerID != "" {
		fx.wakeRunners = append(fx.wakeRunners, r.Demands.RunnerID)
	} else {
		fx.wakeAll = true
	}
}

func (c *LocalCoordinator) apply(fx *effects) {
	if fx == nil {
		return
	}
	for _, id := range fx.ended {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	for _, id := range fx.changed {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	for _, id := range fx.wakeRunners {
		c.wake(runnerKey(id))
	}
	if fx.wakeAll {
		c.wake(anyRunnerKey)
	}
	if fx.webhooks {
		c.kickWebhooks()
	}
}

// StartRun validates the request, creates the session (or readies it for a resume) and its run in one
// transaction, and wakes a runner that can take it. See [StartRunParams] for the fields.
//
// Mode is how the caller learns the outcome (sync, async_poll, async_callback) and defaults to async_poll;
// Type is whether the run starts a session or resumes one. The legacy "mode": "resume" is read as "type":
// "resume", in sync mode when the request asks to wait (p.Wait > 0) and async_poll otherwise (see
// [legacyResume]). A resume's parameters are the new prompt and are checked against the implicit prompt
// schema; a resumed session keeps its first run's demands and is pinned to the runner of its last run,
// whose host holds the executor's conversation state.
func (c *LocalCoordinator) StartRun(ctx context.Context, p StartRunParams) (*StartRunResult, error) {
	if err := legacyResume(&p); err != nil {
		return nil, err
	}
	if p.Mode == "" {
		p.Mode = ModeAsyncPoll
	}
	if !p.Mode.Valid() {
		return nil, Errorf(ErrInvalid, "invalid_request",
			"mode must be sync, async_poll or async_callback (how you learn the outcome), not %q; start or resume is the type field", p.Mode)
	}
	if p.Type == "" {
		p.Type = RunTypeStart
	}
	params, err := c.promptSugar(p)
	if err != nil {
		return nil, err
	}
	env, err := c.checkRunInputs(&p)
	if err != nil {
		return nil, err
	}
	var (
		run *Run
		fx  = &effects{}
	)
	switch p.Type {
	case RunTypeStart:
		run, err = c.startSession(ctx, p, params, env, fx)
	case RunTypeResume:
		run, err = c.resumeSession(ctx, p, params, env, fx)
	default:
		return nil, Errorf(ErrInvalid, "invalid_request",
			"type must be start or resume, not %q; sync, async_poll and async_callback are modes (the mode field)", p.Type)
	}
	if err != nil {
		return nil, err
	}
	c.apply(fx)
	res := &StartRunResult{RunID: run.ID, SessionID: run.SessionID, Status: SessionPending}
	if p.Mode != ModeSync {
		return res, nil
	}
	wait := p.Wait
	if wait <= 0 || wait > c.cfg.SyncWait {
		wait = c.cfg.SyncWait
	}
	s, err := c.WaitSession(ctx, run.SessionID, wait)
	if err != nil {
		return nil, err
	}
	res.Status = s.Status
	if s.Status.Ended() {
		res.Result, res.Error = s.Result, s.Error
	}
	return res, nil
}

// legacyResume reads the legacy "mode": "resume" — what early API examples sent for a resume — as
// "type": "resume", with the mode the caller could not say: sync when it asked to wait (p.Wait, the
// HTTP API's ?wait=), async_poll otherwise.
func legacyResume(p *StartRunParams) error {
	if p.Mode != "resume" {
		return nil
	}
	if p.Type != "" && p.Type != RunTypeResume {
		return Errorf(ErrInvalid, "invalid_request",
			"mode \"resume\" (the legacy spelling of type resume) contradicts type %q; give type and mode (sync, async_poll or async_callback)", p.Type)
	}
	p.Type, p.Mode = RunTypeResume, ""
	if p.Wait > 0 {
		p.Mode = ModeSync
	}
	return nil
}

// promptSugar turns "prompt" into {"prompt": …} and checks the parameters' size and shape.
func (c *LocalCoordinator) promptSugar(p StartRunParams) (json.RawMessage, error) {
	params := bytes.TrimSpace(p.Parameters)
	if bytes.Equal(params, []byte("null")) {
		params = nil
	}
	if p.Prompt != "" {
		if len(params) > 0 {
			return nil, Errorf(ErrInvalid, "invalid_request", "give either prompt or parameters, not both")
		}
		params, _ = json.Marshal(map[string]string{"prompt": p.Prompt})
	}
	if len(params) > c.limits.MaxParametersBytes {
		return nil, Errorf(ErrTooLarge, "parameters_too_large", "parameters exceed %d bytes", c.limits.MaxParametersBytes)
	}
	if len(params) > 0 && params[0] != '{' {
		return nil, Errorf(ErrInvalid, "invalid_request", "parameters must be a JSON object")
	}
	return params, nil
}

// checkRunInputs checks what a request may carry whatever its agent, and returns its metadata.env, which
// the agent's blueprint must allow ([Blueprint.CheckRunEnv]).
func (c *LocalCoordinator) checkRunInputs(p *StartRunParams) (map[string]string, error) {
	if len(p.Metadata) > c.limits.MaxParametersBytes {
		return nil, Errorf(ErrTooLarge, "metadata_too_large", "metadata exceeds %d bytes", c.limits.MaxParametersBytes)
	}
	env, err := metadataEnv(p.Metadata)
	if err != nil {
		return nil, err
	}
	if m := bytes.TrimSpace(p.Metadata); len(m) == 0 || bytes.Equal(m, []byte("null")) {
		p.Metadata = nil
	}
	return env, c.checkRunOptions(p)
}

func (c *LocalCoordinator) checkRunOptions(p *StartRunParams) error {
	if len(p.OutputSchema) > c.limits.MaxSchemaBytes {
		return Errorf(ErrTooLarge, "schema_too_large", "output_schema exceeds %d bytes", c.limits.MaxSchemaBytes)
	}
	if os := bytes.TrimSpace(p.OutputSchema); len(os) > 0 && !bytes.Equal(os, []byte("null")) {
		if _, err := c.schemas.Compile(os); err != nil {
			return Errorf(ErrInvalid, "invalid_schema", "output_schema: %v", err)
		}
	} else {
		p.OutputSchema = nil
	}
	if p.CallbackURL != "" {
		u, err := url.Parse(p.CallbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || len(p.CallbackURL) > 2048 {
			return Errorf(ErrInvalid, "invalid_request", "callback_url must be an absolute http or https URL")
		}
		// What the URL shows is refused now; where a name leads is checked when the delivery connects.
		if err := c.egress.CheckURL(u); err != nil {
			return Errorf(ErrInvalid, "callback_url_refused", "callback_url: %v", err)
		}
		if len(c.cfg.WebhookSecret) == 0 {
			return Errorf(ErrInvalid, "callback_url_unavailable",
				"callback_url needs a webhook secret configured on the coordinator, to sign the deliveries")
		}
	}
	if len(p.ProjectDir) > 4096 || strings.ContainsRune(p.ProjectDir, 0) {
		return Errorf(ErrInvalid, "invalid_request", "project_dir is not valid")
	}
	if p.Demands != nil {
		if err := p.Demands.Validate(); err != nil {
			return Errorf(ErrInvalid, "invalid_request", "demands: %v", err)
		}
	}
	if p.Mode == ModeAsyncCallback && p.ParentSessionID == "" && p.Type != RunTypeResume {
		return Errorf(ErrInvalid, "invalid_request", "async_callback mode needs parent_session_id: the session to resume with the result")
	}
	return nil
}

func (c *LocalCoordinator) startSession(ctx context.Context, p StartRunParams, params json.RawMessage, env map[string]string, fx *effects) (*Run, error) {
	if p.AgentName == "" {
		return nil, Errorf(ErrInvalid, "invalid_request", "agent_name is required")
	}
	if p.SessionID != "" {
		return nil, Errorf(ErrInvalid, "invalid_request", "session_id is only for resume; a new session gets a fresh id")
	}
	agent, err := c.startAgent(ctx, p.AgentName)
	if err != nil {
		return nil, err
	}
	b := agent.Blueprint // shared with the agent cache: read only
	if b.Disabled {
		return nil, Errorf(ErrConflict, "agent_disabled", "agent %q is disabled", agent.Name)
	}
	if err := b.CheckRunEnv(env); err != nil {
		return nil, err
	}
	if err := c.checkParent(ctx, p); err != nil {
		return nil, err
	}
	normalized, err := c.validateParameters(agent.Name, b.EffectiveParametersSchema(), params)
	if err != nil {
		return nil, err
	}
	demands := Demands{}
	if b.Demands != nil {
		demands = *b.Demands
		demands.Tags = slices.Clone(demands.Tags) // the run's own, not the cached blueprint's
	}
	if agent.RunnerID != "" {
		demands.RunnerID = agent.RunnerID
	}
	if demands, err = mergeRequestDemands(demands, p); err != nil {
		return nil, err
	}
	outputSchema := p.OutputSchema
	if len(outputSchema) == 0 {
		outputSchema = b.OutputSchema
	}
	now := Now()
	s := &Session{
		ID:              NewID(SessionIDPrefix),
		AgentName:       agent.Name,
		AgentType:       b.Type,
		Status:          SessionPending,
		ParentSessionID: p.ParentSessionID,
		Callback:        p.Mode == ModeAsyncCallback,
		ProjectDir:      p.ProjectDir,
		Parameters:      normalized,
		OutputSchema:    outputSchema,
		Demands:         demands,
		Metadata:        p.Metadata,
		CreatedAt:       now,
		UpdatedAt:       now,
	}
	run := &Run{
		ID:           NewID(RunIDPrefix),
		SessionID:    s.ID,
		AgentName:    agent.Name,
		AgentType:    b.Type,
		Type:         RunTypeStart,
		Mode:         p.Mode,
		Status:       RunPending,
		Parameters:   normalized,
		Demands:      demands,
		ProjectDir:   p.ProjectDir,
		OutputSchema: outputSchema,
		Metadata:     p.Metadata,
		CallbackURL:  p.CallbackURL,
		CreatedAt:    now,
	}
	s.CurrentRunID = run.ID
	if err := c.store.CreateSessionWithRun(ctx, s, run); err != nil {
		return nil, err
	}
	fx.wakeFor(run)
	return run, nil
}

// checkParent enforces the callback rules: a parent must exist, and only an AI session can be resumed with
// a child's result (seed 001 §3: deterministic callers use sync).
func (c *LocalCoordinator) checkParent(ctx context.Context, p StartRunParams) error {
	if p.ParentSessionID == "" {
		return nil
	}
	parent, err := c.store.GetSession(ctx, p.ParentSessionID)
	if errors.Is(err, ErrNotFound) {
		return Errorf(ErrInvalid, "parent_session_not_found", "parent session %q not found", p.ParentSessionID)
	}
	if err != nil {
		return err
	}
	if p.Mode == ModeAsyncCallback && parent.AgentType == AgentTypeDeterministic {
		return Errorf(ErrInvalid, "callback_to_deterministic",
			"deterministic sessions cannot receive callbacks: they cannot be resumed; start the child in sync mode instead")
	}
	return nil
}

func mergeRequestDemands(d Demands, p StartRunParams) (Demands, error) {
	var err error
	if p.Demands != nil {
		if d, err = d.Merge(*p.Demands); err != nil {
			return d, err
		}
	}
	if p.ProjectDir != "" {
		if d, err = d.Merge(Demands{ProjectDir: p.ProjectDir}); err != nil {
			return d, err
		}
	}
	return d, nil
}

// validateParameters applies the schema's defaults and checks params against it. Without a schema any
// JSON object is accepted.
func (c *LocalCoordinator) validateParameters(agent string, schema, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if len(schema) == 0 {
		if !json.Valid(params) {
			return nil, Errorf(ErrInvalid, "invalid_json", "parameters are not valid JSON")
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
		return nil, &ValidationError{AgentName: agent, Errors: ferrs, Schema: schema}
	}
	return normalized, nil
}

func (c *LocalCoordinator) resumeSession(ctx context.Context, p StartRunParams, params json.RawMessage, env map[string]string, fx *effects) (*Run, error) {
	notResumable := func(agent string) error {
		return Errorf(ErrInvalid, "resume_not_supported", "Deterministic agents do not support resumption").With("agent_name", agent)
	}
	// Naming a deterministic agent is reason enough, whatever the session (seed 002's example).
	if p.AgentName != "" {
		if a, err := c.store.GetAgent(ctx, p.AgentName); err == nil && a.Type() == AgentTypeDeterministic {
			return nil, notResumable(a.Name)
		}
	}
	if p.SessionID == "" {
		return nil, Errorf(ErrInvalid, "invalid_request", "resume needs session_id")
	}
	s, err := lookup(c.store.GetSession(ctx, p.SessionID)).as("session", p.SessionID)
	if err != nil {
		return nil, err
	}
	if s.AgentType == AgentTypeDeterministic {
		return nil, notResumable(s.AgentName)
	}
	if p.AgentName != "" && p.AgentName != s.AgentName {
		return nil, Errorf(ErrInvalid, "invalid_request", "session %s belongs to agent %q, not %q", s.ID, s.AgentName, p.AgentName)
	}
	if (p.ParentSessionID != "" && p.ParentSessionID != s.ParentSessionID) || p.CallbackURL != "" || len(p.OutputSchema) > 0 {
		return nil, Errorf(ErrInvalid, "invalid_request", "a resume keeps the session's parent, callback and output schema")
	}
	if p.Mode == ModeAsyncCallback {
		// The resumed run calls back the session's own parent when it ends.
		if s.ParentSessionID == "" {
			return nil, Errorf(ErrInvalid, "invalid_request", "session %s has no parent session to call back", s.ID)
		}
		p.ParentSessionID = s.ParentSessionID
		if err := c.checkParent(ctx, p); err != nil {
			return nil, err
		}
	}
	if err := c.checkResumeEnv(ctx, s, p.Metadata, env); err != nil {
		return nil, err
	}
	normalized, err := c.validateParameters(s.AgentName, ImplicitPromptSchema, params)
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
	run := newResumeRun(s, normalized, p.Mode, demands, p.Metadata)
	err = c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		return c.queueResume(ctx, tx, s, run)
	})
	if errors.Is(err, ErrConflict) {
		return nil, Errorf(ErrConflict, "session_busy", "session %s is not idle; resume it after its current run ends", s.ID)
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
func (c *LocalCoordinator) checkResumeEnv(ctx context.Context, s *Session, metadata json.RawMessage, env map[string]string) error {
	if metadata == nil {
		var err error
		if env, err = metadataEnv(s.Metadata); err != nil {
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

func newResumeRun(s *Session, params json.RawMessage, mode Mode, demands Demands, metadata json.RawMessage) *Run {
	if metadata == nil {
		metadata = s.Metadata
	}
	return &Run{
		ID:           NewID(RunIDPrefix),
		SessionID:    s.ID,
		AgentName:    s.AgentName,
		AgentType:    s.AgentType,
		Type:         RunTypeResume,
		Mode:         mode,
		Status:       RunPending,
		Parameters:   params,
		Demands:      demands,
		ProjectDir:   s.ProjectDir,
		OutputSchema: s.OutputSchema,
		Metadata:     metadata,
		CreatedAt:    Now(),
	}
}

// queueResume moves an ended session back to pending with run as its current run. The guard on the
// session's status makes a concurrent second resume lose with ErrConflict.
func (c *LocalCoordinator) queueResume(ctx context.Context, tx Store, s *Session, run *Run) error {
	if _, err := tx.UpdateSession(ctx, s.ID, []SessionStatus{SessionCompleted, SessionFailed, SessionStopped}, SessionUpdate{
		Status: Ptr(SessionPending), CurrentRunID: &run.ID, ClearEndedAt: true, Error: Ptr(""), UpdatedAt: run.CreatedAt,
	}); err != nil {
		return err
	}
	return tx.CreateRun(ctx, run)
}

// finishRun ends run with status inside tx, guarded by the run's current status (and by runnerID, when
// given, so only the runner that holds it can end it). It records the session's result — the reported
// one, else the newest result event of the run, else its last assistant message — appends the result and
// run_ended events, and records and delivers callbacks.
func (c *LocalCoordinator) finishRun(ctx context.Context, tx Store, fx *effects, runID, runnerID string, status RunStatus, res *Result, errMsg string) error {
	now := Now()
	if errMsg == "" && res != nil && status != RunCompleted {
		errMsg = res.Error
	}
	if errMsg == "" && status == RunStopped {
		errMsg = "stopped"
	}
	if errMsg == "" && status == RunFailed {
		errMsg = "failed"
	}
	if status == RunCompleted {
		errMsg = ""
	}
	run, err := updateRunBrief(ctx, tx, runID, RunStatusesBefore(status), runnerID, RunUpdate{
		Status: &status, Error: &errMsg, EndedAt: &now,
	})
	if err != nil {
		return err
	}
	var events []*Event
	fromEvent := false
	if res == nil {
		res, fromEvent, err = c.deriveResult(ctx, tx, run)
		if err != nil {
			return err
		}
	}
	if res == nil {
		res = &Result{}
	}
	if res.ResultType == "" {
		res.ResultType = string(run.AgentType)
	}
	if status != RunCompleted && res.Error == "" {
		res.Error = errMsg
	}
	if !fromEvent {
		events = append(events, eventOf(EventResult, now, res))
	}
	events = append(events, eventOf(EventRunEnded, now, map[string]any{
		"run_id": run.ID, "status": status, "error": errMsg,
	}))
	sessionStatus := SessionStatus(status)
	upd := SessionUpdate{Status: &sessionStatus, Result: res, Error: &errMsg, EndedAt: &now, UpdatedAt: now, AppendEvents: events}
	if run.RunnerID != "" {
		upd.RunnerID = &run.RunnerID // a run that never reported started has not set it yet
	}
	s, err := updateSessionBrief(ctx, tx, run.SessionID, []SessionStatus{SessionPending, SessionRunning}, upd)
	if err != nil {
		return err
	}
	fx.ended = append(fx.ended, s.ID)
	if run.CallbackURL != "" {
		if err := c.queueWebhook(ctx, tx, fx, run, WebhookPayload{
			Event: "session.ended", SessionID: s.ID, RunID: run.ID, AgentName: s.AgentName,
			Status: s.Status, Result: res, Error: errMsg, EndedAt: now,
		}); err != nil {
			return err
		}
	}
	// The parent is called back when this run was started in async_callback mode (the session's first run,
	// a resume that asked for it, or a resume that delivered callbacks to a session started that way).
	if run.Mode == ModeAsyncCallback && s.ParentSessionID != "" && s.ParentSessionID != s.ID {
		cb := &Callback{
			ID:              NewID(CallbackPrefix),
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
		if err := c.deliverCallbacks(ctx, tx, fx, s.ParentSessionID); err != nil {
			return err
		}
	}
	// Callbacks that arrived while this session ran are delivered now, however the run ended. Only AI
	// sessions receive callbacks (checkParent), so deterministic ones spare the lookup.
	if s.AgentType != AgentTypeAgent {
		return nil
	}
	return c.deliverCallbacks(ctx, tx, fx, s.ID)
}

// deriveResult finds the result of a run that was reported without one: the newest result event the run
// wrote (through the gateway), else its last assistant message. The run's events are those after the
// previous run's run_ended marker (its own is not written yet): its executor may write before the
// runner's started report lands.
func (c *LocalCoordinator) deriveResult(ctx context.Context, tx Store, run *RunBrief) (*Result, bool, error) {
	sessionID := run.SessionID
	var since int64
	prev, err := tx.LastEvent(ctx, sessionID, []string{EventRunEnded}, 0)
	switch {
	case err == nil:
		since = prev.Seq
	case !errors.Is(err, ErrNotFound):
		return nil, false, err
	}
	start := &Event{Seq: since}
	ev, err := tx.LastEvent(ctx, sessionID, []string{EventResult, EventMessage}, start.Seq)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if ev.Type == EventResult {
		var r Result
		if err := ev.DecodeData(&r); err == nil {
			return &r, true, nil
		}
	}
	// The newest event is a message; a result event may still precede it.
	if rev, err := tx.LastEvent(ctx, sessionID, []string{EventResult}, start.Seq); err == nil {
		var r Result
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
	return &Result{ResultType: string(run.AgentType), ResultText: MessageText(msg.Content)}, false, nil
}

// MessageText extracts the text of a message's content: a string, or the text blocks of a content array
// ([{"type":"text","text":"…"}]) joined by newlines.
func MessageText(content json.RawMessage) string {
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

// deliverCallbacks resumes an idle parent with every pending callback addressed to it, in one run. A busy
// parent gets them when its current run ends (finishRun calls this again for it).
func (c *LocalCoordinator) deliverCallbacks(ctx context.Context, tx Store, fx *effects, parentID string) error {
	parent, err := tx.GetSession(ctx, parentID)
	if errors.Is(err, ErrNotFound) {
		return nil // the parent was deleted; its callbacks went with it
	}
	if err != nil {
		return err
	}
	if !parent.Status.Ended() || parent.AgentType != AgentTypeAgent {
		return nil
	}
	pending, err := tx.ListCallbacks(ctx, CallbackFilter{ParentSessionID: parentID, Pending: true})
	if err != nil || len(pending) == 0 {
		return err
	}
	// Take the parent's row (a guarded update that changes nothing; on PostgreSQL it holds the row lock
	// until the transaction ends) and read the callbacks again: whoever else delivers to this parent —
	// another child ending at the same moment, the sweep, another replica — must take the row first, so
	// what is read now is delivered by this transaction alone. A parent that was resumed since it was read
	// is busy: its callbacks are delivered when that run ends (finishRun) or by the sweep.
	parent, err = tx.UpdateSession(ctx, parentID, []SessionStatus{SessionCompleted, SessionFailed, SessionStopped},
		SessionUpdate{UpdatedAt: parent.UpdatedAt})
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if pending, err = tx.ListCallbacks(ctx, CallbackFilter{ParentSessionID: parentID, Pending: true}); err != nil || len(pending) == 0 {
		return err
	}
	prompt := CallbackPrompt(pending)
	params, _ := json.Marshal(map[string]string{"prompt": prompt})
	demands := parent.Demands
	if parent.RunnerID != "" && parent.ExecutorSessionID != "" {
		demands.RunnerID = parent.RunnerID
	}
	// A session started in async_callback mode keeps calling its own parent back after the runs its
	// children's callbacks cause.
	mode := ModeAsyncPoll
	if parent.Callback {
		mode = ModeAsyncCallback
	}
	run := newResumeRun(parent, params, mode, demands, nil)
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
	if err := tx.AppendEvents(ctx, parent.ID, []*Event{eventOf(EventCallback, run.CreatedAt, map[string]any{
		"run_id": run.ID, "callbacks": pending,
	})}); err != nil {
		return err
	}
	fx.changed = append(fx.changed, parent.ID)
	fx.wakeFor(run)
	return nil
}

// CallbackPrompt renders the message a parent session is resumed with: a sentence per child and, for the
// model to read exactly, the callbacks as JSON ({callback_type, child_session_id, result: {result_type,
// result_text, result_data, exit_code, error}}).
func CallbackPrompt(cbs []*Callback) string {
	var b strings.Builder
	if len(cbs) == 1 {
		b.WriteString("A child session you started has ended.\n")
	} else {
		fmt.Fprintf(&b, "%d child sessions you started have ended.\n", len(cbs))
	}
	type wire struct {
		CallbackType   string  `json:"callback_type"`
		ChildSessionID string  `json:"child_session_id"`
		ChildAgentName string  `json:"child_agent_name"`
		Result         *Result `json:"result"`
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

func eventOf(typ string, at time.Time, data any) *Event {
	e := NewEvent(typ, data)
	e.Time = at
	return &e
}

// GetRun returns a run.
func (c *LocalCoordinator) GetRun(ctx context.Context, id string) (*Run, error) {
	return lookup(c.store.GetRun(ctx, id)).as("run", id)
}

// ListRuns lists runs, oldest first.
func (c *LocalCoordinator) ListRuns(ctx context.Context, f RunFilter) ([]*Run, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 1000
	}
	return c.store.ListRuns(ctx, f)
}

// StopRun stops a run. A pending run is stopped at once without reaching a runner. A claimed or running
// run gets a stop request that its runner receives through its parked poll immediately; the runner kills
// the execution and reports the run stopped. Stopping an ended run changes nothing.
func (c *LocalCoordinator) StopRun(ctx context.Context, id string) (*Run, error) {
	run, err := lookup(c.store.GetRun(ctx, id)).as("run", id)
	if err != nil {
		return nil, err
	}
	switch run.Status {
	case RunPending:
		fx := &effects{}
		err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
			*fx = effects{}
			return c.finishRun(ctx, tx, fx, run.ID, "", RunStopped, nil, "stopped before it started")
		})
		if errors.Is(err, ErrConflict) {
			return c.StopRun(ctx, id) // it was claimed meanwhile: ask its runner
		}
		if err != nil {
			return nil, err
		}
		c.apply(fx)
	case RunClaimed, RunRunning:
		if run.StopRequestedAt == nil {
			now := Now()
			_, err := c.store.UpdateRun(ctx, id, []RunStatus{RunClaimed, RunRunning}, "", RunUpdate{StopRequestedAt: &now})
			if err != nil && !errors.Is(err, ErrConflict) {
				return nil, err
			}
			c.wake(runnerKey(run.RunnerID))
			c.wake(runnerStopsKey(run.RunnerID))
		}
	}
	return c.GetRun(ctx, id)
}
