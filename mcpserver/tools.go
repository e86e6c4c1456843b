package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// --- inputs ----------------------------------------------------------------------------------------------
//
// Each tool's input schema is inferred from its input struct (descriptions from the jsonschema tags), with
// json.RawMessage fields read as free-form JSON objects and enums, defaults and bounds added by hand where
// tags cannot say them. The SDK validates arguments against it (unknown keys included) and answers a
// mismatch with a tool error the model can correct.

// ListAgentBlueprintsInput is the input of list_agent_blueprints.
type ListAgentBlueprintsInput struct {
	Tags []string `json:"tags,omitempty" jsonschema:"only agents carrying all of these tags"`
}

// GetAgentSchemaInput is the input of get_agent_schema.
type GetAgentSchemaInput struct {
	AgentName string `json:"agent_name" jsonschema:"the agent's name, as listed by list_agent_blueprints"`
}

// StartAgentSessionInput is the input of start_agent_session.
type StartAgentSessionInput struct {
	AgentName  string          `json:"agent_name" jsonschema:"name of the agent to invoke, as listed by list_agent_blueprints"`
	Parameters json.RawMessage `json:"parameters,omitempty" jsonschema:"input object matching the agent's parameters_schema; for AI agents without a declared schema: {\"prompt\": \"your instructions\"}"`
	Prompt     string          `json:"prompt,omitempty" jsonschema:"shorthand for parameters {\"prompt\": ...}; give either prompt or parameters, not both"`
	Mode       string          `json:"mode,omitempty" jsonschema:"sync waits for the result; async_poll returns the session_id at once (follow it with get_agent_session_result); async_callback returns at once and resumes your own session with the result when the agent ends"`
	ProjectDir string          `json:"project_dir,omitempty" jsonschema:"working directory the agent should run in; only runners serving that directory take the run"`
	// OutputSchema is the JSON Schema the result_data must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty" jsonschema:"JSON Schema the agent's result_data must match (overrides the agent's own output_schema)"`
}

// ResumeAgentSessionInput is the input of resume_agent_session.
type ResumeAgentSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the AI agent session to continue"`
	Prompt    string `json:"prompt" jsonschema:"the next instructions for the agent"`
	Mode      string `json:"mode,omitempty" jsonschema:"sync waits for the result; async_poll returns at once (follow the session with get_agent_session_result)"`
}

// SessionInput is the input of get_agent_session_status and stop_agent_session.
type SessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the session's id (ses_...)"`
}

// GetAgentSessionResultInput is the input of get_agent_session_result.
type GetAgentSessionResultInput struct {
	SessionID   string `json:"session_id" jsonschema:"the session's id (ses_...)"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds for the session to end before answering; 0 answers at once"`
}

// ListAgentSessionsInput is the input of list_agent_sessions.
type ListAgentSessionsInput struct {
	Status          string `json:"status,omitempty" jsonschema:"only sessions in this status"`
	AgentName       string `json:"agent_name,omitempty" jsonschema:"only sessions of this agent"`
	ParentSessionID string `json:"parent_session_id,omitempty" jsonschema:"only sessions started by this session"`
	Limit           int    `json:"limit,omitempty" jsonschema:"page size"`
	Cursor          string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page, to continue the listing"`
}

// --- outputs ---------------------------------------------------------------------------------------------

// AgentOutput is one agent in list_agent_blueprints.
type AgentOutput struct {
	Name        string                 `json:"name"`
	Type        orchestrator.AgentType `json:"type"`
	Description string                 `json:"description,omitempty"`
	Tags        []string               `json:"tags,omitempty"`
	// ParametersSchema is inline for deterministic agents and for AI agents that declare one; an AI agent
	// without one takes {"prompt": "..."}.
	ParametersSchema json.RawMessage `json:"parameters_schema,omitempty"`
	OutputSchema     json.RawMessage `json:"output_schema,omitempty"`
	Disabled         bool            `json:"disabled,omitempty"`
}

// AgentListOutput is the answer of list_agent_blueprints.
type AgentListOutput struct {
	Agents []AgentOutput `json:"agents"`
}

// AgentSchemaOutput is the answer of get_agent_schema (the HTTP API's GET /agents/{name}/schema, with the
// description). A schema that does not exist is null.
type AgentSchemaOutput struct {
	Name             string                 `json:"name"`
	Type             orchestrator.AgentType `json:"type"`
	Description      string                 `json:"description,omitempty"`
	ParametersSchema json.RawMessage        `json:"parameters_schema"`
	OutputSchema     json.RawMessage        `json:"output_schema"`
}

// RunOutput is the answer of start_agent_session and resume_agent_session, and (without RunID) of
// get_agent_session_result.
type RunOutput struct {
	SessionID string                     `json:"session_id"`
	RunID     string                     `json:"run_id,omitempty"`
	Status    orchestrator.SessionStatus `json:"status"`
	// Result is set once the session has ended.
	Result *orchestrator.Result `json:"result,omitempty"`
	// Error says why the session failed or stopped.
	Error string `json:"error,omitempty"`
	// Note tells the model what to do next when the answer is not final.
	Note string `json:"note,omitempty"`
}

// SessionOutput is a session's status and basic fields (get_agent_session_status, stop_agent_session,
// list_agent_sessions).
type SessionOutput struct {
	SessionID       string                     `json:"session_id"`
	AgentName       string                     `json:"agent_name"`
	AgentType       orchestrator.AgentType     `json:"agent_type"`
	Status          orchestrator.SessionStatus `json:"status"`
	ParentSessionID string                     `json:"parent_session_id,omitempty"`
	Callback        bool                       `json:"callback,omitempty"`
	ProjectDir      string                     `json:"project_dir,omitempty"`
	RunID           string                     `json:"run_id,omitempty"`
	// HasResult says get_agent_session_result has a result to give.
	HasResult bool       `json:"has_result"`
	Error     string     `json:"error,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Note      string     `json:"note,omitempty"`
}

// SessionListOutput is the answer of list_agent_sessions.
type SessionListOutput struct {
	Sessions   []SessionOutput `json:"sessions"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

func sessionOutput(s *orchestrator.Session) SessionOutput {
	return SessionOutput{
		SessionID: s.ID, AgentName: s.AgentName, AgentType: s.AgentType, Status: s.Status,
		ParentSessionID: s.ParentSessionID, Callback: s.Callback, ProjectDir: s.ProjectDir,
		RunID: s.CurrentRunID, HasResult: s.Status.Ended() && s.Result != nil, Error: s.Error,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, EndedAt: s.EndedAt,
	}
}

// --- tool table ------------------------------------------------------------------------------------------

var modes = []any{string(orchestrator.ModeSync), string(orchestrator.ModeAsyncPoll), string(orchestrator.ModeAsyncCallback)}

// inputSchema infers T's schema and lets adjust add what tags cannot say.
func inputSchema[T any](adjust func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Type: "object"},
	}})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema of %v: %v", reflect.TypeFor[T](), err))
	}
	if adjust != nil {
		adjust(s.Properties)
	}
	return s
}

func boolPtr(b bool) *bool { return &b }

func (s *server) addTools(srv *mcp.Server) {
	wait := s.cfg.SyncWait.Round(time.Second).String()
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}

	mcp.AddTool(srv, &mcp.Tool{
		Name:  "list_agent_blueprints",
		Title: "List agents",
		Description: `List the agents you can start (agent blueprints), with their type and parameters_schema.

Returns {agents: [{name, type, description, tags, parameters_schema, output_schema}]}. type is "agent" (an AI agent) or "deterministic" (a program with typed parameters and structured output).
For deterministic agents, use parameters_schema to construct valid parameters for start_agent_session.
For AI agents without a parameters_schema, use parameters={"prompt": "your instructions"} (or the prompt argument).
output_schema, when present, describes the result_data the agent returns.
tags (optional): only agents carrying all of these tags.`,
		InputSchema: inputSchema[ListAgentBlueprintsInput](func(p map[string]*jsonschema.Schema) {
			p["tags"].Type, p["tags"].Types = "array", nil // not ["null","array"]: an omitted list is the same
		}),
		Annotations: readOnly,
	}, s.listAgentBlueprints)

	mcp.AddTool(srv, &mcp.Tool{
		Name:  "get_agent_schema",
		Title: "Get an agent's schemas",
		Description: `Get one agent's schemas: {name, type, description, parameters_schema, output_schema}.

parameters_schema is what start_agent_session's parameters must match (AI agents without a declared schema show the implicit {"prompt": string} schema); output_schema describes the result_data the agent returns (null when it declares none).`,
		InputSchema: inputSchema[GetAgentSchemaInput](func(p map[string]*jsonschema.Schema) {
			p["agent_name"].MinLength = jsonschema.Ptr(1)
		}),
		Annotations: readOnly,
	}, s.getAgentSchema)

	mcp.AddTool(srv, &mcp.Tool{
		Name:  "start_agent_session",
		Title: "Start an agent",
		Description: `Start an agent session: invoke an agent — an AI agent or a deterministic program — by name with parameters, and get its result.

Args:
    agent_name: name of the agent to invoke.
    parameters: input parameters matching the agent's parameters_schema.
                - For AI agents: {"prompt": "your instructions"} (unless the agent declares a richer schema)
                - For deterministic agents: see the agent's parameters_schema
    prompt: shorthand for parameters={"prompt": "..."}; give either prompt or parameters, not both.
    mode: execution mode — sync (default), async_poll or async_callback.
          sync waits for the agent to finish (up to ` + wait + `) and returns {session_id, status, result: {result_type, result_text, result_data, exit_code, error}}; if the agent is still running then, you get its session_id and status: continue with get_agent_session_result.
          async_poll returns {session_id, run_id, status} at once: follow it with get_agent_session_result (wait_seconds waits for the end).
          async_callback returns at once too; when the agent ends, your own session is resumed with its result (only when you are yourself an orchestrated agent session).
    project_dir: working directory the agent should run in (optional).
    output_schema: JSON Schema the agent's result_data must match (optional).

Discover agent schemas via list_agent_blueprints (or get_agent_schema) before calling, and construct parameters matching the schema yourself.
Parameters are validated against the schema before anything runs - invalid parameters return an error listing every problem (validation_errors with the JSON path of each wrong value) together with the full parameters_schema: use them to correct the parameters and call again.`,
		InputSchema: inputSchema[StartAgentSessionInput](func(p map[string]*jsonschema.Schema) {
			p["agent_name"].MinLength = jsonschema.Ptr(1)
			p["mode"].Enum = modes
			p["mode"].Default = json.RawMessage(`"sync"`)
		}),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, s.startAgentSession)

	mcp.AddTool(srv, &mcp.Tool{
		Name:  "resume_agent_session",
		Title: "Resume an AI agent",
		Description: `Continue an AI agent session that has ended (completed, failed or stopped) with a new prompt; the agent keeps its conversation so far.

mode: sync (default) waits for the agent to finish (up to ` + wait + `) and returns {session_id, status, result}; async_poll returns {session_id, run_id, status} at once (follow it with get_agent_session_result).
Deterministic agents cannot be resumed: start a new session with start_agent_session instead. A session that is still running must end first (wait with get_agent_session_result).`,
		InputSchema: inputSchema[ResumeAgentSessionInput](func(p map[string]*jsonschema.Schema) {
			p["session_id"].MinLength = jsonschema.Ptr(1)
			p["prompt"].MinLength = jsonschema.Ptr(1)
			p["mode"].Enum = modes[:2]
			p["mode"].Default = json.RawMessage(`"sync"`)
		}),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, s.resumeAgentSession)

	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_agent_session_status",
		Title:       "Get a session's status",
		Description: `Get a session's status — pending, running, completed, failed or stopped — and its basic fields (agent, parent session, current run, error, times), without waiting and without its result (use get_agent_session_result for that).`,
		InputSchema: inputSchema[SessionInput](func(p map[string]*jsonschema.Schema) {
			p["session_id"].MinLength = jsonschema.Ptr(1)
		}),
		Annotations: readOnly,
	}, s.getAgentSessionStatus)

	maxWait := int(s.cfg.MaxResultWait / time.Second)
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "get_agent_session_result",
		Title: "Get a session's result",
		Description: fmt.Sprintf(`Get a session's result: {session_id, status, result: {result_type, result_text, result_data, exit_code, error}} once the session has ended (completed, failed or stopped).

wait_seconds (optional, up to %d) first waits for the session to end; without it the current state is returned at once. If status is still pending or running, call again (with wait_seconds) later.`, maxWait),
		InputSchema: inputSchema[GetAgentSessionResultInput](func(p map[string]*jsonschema.Schema) {
			p["session_id"].MinLength = jsonschema.Ptr(1)
			p["wait_seconds"].Minimum = jsonschema.Ptr(0.0)
		}),
		Annotations: readOnly,
	}, s.getAgentSessionResult)

	mcp.AddTool(srv, &mcp.Tool{
		Name:  "list_agent_sessions",
		Title: "List sessions",
		Description: fmt.Sprintf(`List agent sessions, oldest first, in pages: {sessions: [{session_id, agent_name, agent_type, status, parent_session_id, run_id, has_result, error, created_at, updated_at, ended_at}], next_cursor}.

Filters (all optional): status, agent_name, parent_session_id. limit is the page size (default %d, at most %d); pass next_cursor as cursor to get the next page.`, DefaultListLimit, MaxListLimit),
		InputSchema: inputSchema[ListAgentSessionsInput](func(p map[string]*jsonschema.Schema) {
			p["status"].Enum = []any{"pending", "running", "completed", "failed", "stopped"}
			p["limit"].Minimum = jsonschema.Ptr(1.0)
			p["limit"].Maximum = jsonschema.Ptr(float64(MaxListLimit))
		}),
		Annotations: readOnly,
	}, s.listAgentSessions)

	mcp.AddTool(srv, &mcp.Tool{
		Name:        "stop_agent_session",
		Title:       "Stop a session",
		Description: `Stop a session's current run: a queued run stops at once, a running one is stopped by its runner (its processes are terminated). Returns the session's status; when it is not yet "stopped", the stop is on its way (get_agent_session_result with wait_seconds waits for it). Stopping an ended session changes nothing.`,
		InputSchema: inputSchema[SessionInput](func(p map[string]*jsonschema.Schema) {
			p["session_id"].MinLength = jsonschema.Ptr(1)
		}),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.stopAgentSession)
}

// --- handlers --------------------------------------------------------------------------------------------
//
// Handlers return (nil, output, nil) on success — the SDK sends the output as structured content and as
// its JSON text — and (toolError, nil, nil) on failure, never a Go error: every failure is something the
// model should see.

func (s *server) listAgentBlueprints(ctx context.Context, req *mcp.CallToolRequest, in ListAgentBlueprintsInput) (*mcp.CallToolResult, any, error) {
	c, err := s.caller(req)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	// The caller's tags and the argument's both filter: an agent must carry all of them.
	tags := ParseTags(strings.Join(append(c.tags, in.Tags...), ","))
	agents, err := s.coord.ListAgents(ctx, orchestrator.ListAgentsParams{Tags: tags})
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := AgentListOutput{Agents: make([]AgentOutput, 0, len(agents))}
	for _, a := range agents {
		out.Agents = append(out.Agents, AgentOutput{
			Name: a.Name, Type: a.Type, Description: a.Description, Tags: a.Tags,
			ParametersSchema: a.ParametersSchema, OutputSchema: a.OutputSchema, Disabled: a.Disabled,
		})
	}
	return nil, out, nil
}

func (s *server) getAgentSchema(ctx context.Context, req *mcp.CallToolRequest, in GetAgentSchemaInput) (*mcp.CallToolResult, any, error) {
	a, err := s.coord.GetAgent(ctx, in.AgentName)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := AgentSchemaOutput{Name: a.Name, Type: a.Type, Description: a.Description}
	out.ParametersSchema, out.OutputSchema = a.Schemas()
	return nil, out, nil
}

func (s *server) startAgentSession(ctx context.Context, req *mcp.CallToolRequest, in StartAgentSessionInput) (*mcp.CallToolResult, any, error) {
	c, err := s.caller(req)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	mode := orchestrator.Mode(in.Mode)
	if mode == "" {
		mode = orchestrator.ModeSync
	}
	if mode == orchestrator.ModeAsyncCallback && c.sessionID == "" {
		return s.toolError(orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"mode async_callback resumes the calling session with the result, but this call names no calling session "+
				"(the %s header, or the server's configured session id); use mode sync or async_poll", HeaderSessionID)), nil, nil
	}
	p := orchestrator.StartRunParams{
		AgentName:       in.AgentName,
		Parameters:      nullToEmpty(in.Parameters),
		Prompt:          in.Prompt,
		Mode:            mode,
		Type:            orchestrator.RunTypeStart,
		ParentSessionID: c.sessionID,
		ProjectDir:      in.ProjectDir,
		Demands:         c.demands,
		OutputSchema:    nullToEmpty(in.OutputSchema),
	}
	return s.run(ctx, req, p)
}

func (s *server) resumeAgentSession(ctx context.Context, req *mcp.CallToolRequest, in ResumeAgentSessionInput) (*mcp.CallToolResult, any, error) {
	c, err := s.caller(req)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	mode := orchestrator.Mode(in.Mode)
	if mode == "" {
		mode = orchestrator.ModeSync
	}
	p := orchestrator.StartRunParams{
		Type:      orchestrator.RunTypeResume,
		SessionID: in.SessionID,
		Prompt:    in.Prompt,
		Mode:      mode,
		Demands:   c.demands,
	}
	return s.run(ctx, req, p)
}

// run starts or resumes a session. A sync run is waited for up to SyncWait in all, even when the
// coordinator caps its own wait lower; then the answer says how to go on.
func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, p orchestrator.StartRunParams) (*mcp.CallToolResult, any, error) {
	deadline := time.Now().Add(s.cfg.SyncWait)
	if p.Mode == orchestrator.ModeSync {
		p.Wait = s.cfg.SyncWait
	}
	var res *orchestrator.StartRunResult
	err := s.withProgress(ctx, req, "waiting for the agent to finish", func(ctx context.Context) error {
		var err error
		if res, err = s.coord.StartRun(ctx, p); err != nil {
			return err
		}
		if p.Mode != orchestrator.ModeSync || res.Status.Ended() {
			return nil
		}
		rest := time.Until(deadline)
		if rest <= 0 {
			return nil
		}
		sess, err := s.coord.WaitSession(ctx, res.SessionID, rest)
		if err != nil {
			return err
		}
		res.Status = sess.Status
		if sess.Status.Ended() {
			res.Result, res.Error = sess.Result, sess.Error
		}
		return nil
	})
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := RunOutput{SessionID: res.SessionID, RunID: res.RunID, Status: res.Status}
	switch {
	case res.Status.Ended():
		out.Result, out.Error = res.Result, res.Error
	case p.Mode == orchestrator.ModeSync:
		out.Note = fmt.Sprintf("The agent is still %s after %s. Call get_agent_session_result with this session_id "+
			"(and wait_seconds) to wait for its result.", res.Status, s.cfg.SyncWait.Round(time.Second))
	case p.Mode == orchestrator.ModeAsyncPoll:
		out.Note = "Started. Call get_agent_session_result with this session_id (and wait_seconds) to get the result."
	case p.Mode == orchestrator.ModeAsyncCallback:
		out.Note = "Started. Your session will be resumed with the result when the agent ends; no need to poll."
	}
	return nil, out, nil
}

func (s *server) getAgentSessionStatus(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, any, error) {
	sess, err := s.coord.GetSession(ctx, in.SessionID)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	return nil, sessionOutput(sess), nil
}

func (s *server) getAgentSessionResult(ctx context.Context, req *mcp.CallToolRequest, in GetAgentSessionResultInput) (*mcp.CallToolResult, any, error) {
	wait := min(time.Duration(in.WaitSeconds)*time.Second, s.cfg.MaxResultWait)
	var sess *orchestrator.Session
	err := s.withProgress(ctx, req, "waiting for the session to end", func(ctx context.Context) error {
		var err error
		if wait > 0 {
			sess, err = s.coord.WaitSession(ctx, in.SessionID, wait)
		} else {
			sess, err = s.coord.GetSession(ctx, in.SessionID)
		}
		return err
	})
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := RunOutput{SessionID: sess.ID, Status: sess.Status}
	if sess.Status.Ended() {
		out.Result, out.Error = sess.Result, sess.Error
	} else {
		out.Note = fmt.Sprintf("The session is still %s; call again (with wait_seconds) to wait for its result.", sess.Status)
	}
	return nil, out, nil
}

func (s *server) listAgentSessions(ctx context.Context, req *mcp.CallToolRequest, in ListAgentSessionsInput) (*mcp.CallToolResult, any, error) {
	f := orchestrator.SessionFilter{
		AgentName:       in.AgentName,
		ParentSessionID: in.ParentSessionID,
		AfterID:         in.Cursor,
		Limit:           in.Limit,
	}
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	if in.Status != "" {
		f.Statuses = []orchestrator.SessionStatus{orchestrator.SessionStatus(in.Status)}
	}
	page, err := s.coord.ListSessions(ctx, f)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := SessionListOutput{Sessions: make([]SessionOutput, 0, len(page.Sessions)), NextCursor: page.NextCursor}
	for _, sess := range page.Sessions {
		out.Sessions = append(out.Sessions, sessionOutput(sess))
	}
	return nil, out, nil
}

func (s *server) stopAgentSession(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, any, error) {
	sess, err := s.coord.StopSession(ctx, in.SessionID)
	if err != nil {
		return s.toolError(err), nil, nil
	}
	out := sessionOutput(sess)
	if !sess.Status.Ended() {
		out.Note = "Stop requested; the runner is stopping the agent. get_agent_session_result with wait_seconds waits for the session to end."
	}
	return nil, out, nil
}

// nullToEmpty treats an explicit JSON null as absent.
func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return raw
}

// withProgress runs fn. When the client sent a progress token, it also sends a progress notification
// every ProgressInterval until fn returns, so clients that reset their timeout on progress keep waiting.
func (s *server) withProgress(ctx context.Context, req *mcp.CallToolRequest, msg string, fn func(context.Context) error) error {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	if token == nil || req.Session == nil {
		return fn(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	tick := time.NewTicker(s.cfg.ProgressInterval)
	defer tick.Stop()
	start := time.Now()
	for n := 1; ; n++ {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			elapsed := time.Since(start).Round(time.Second)
			// A failed notification (the client went away) is not the call's failure.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n),
				Message:       fmt.Sprintf("%s (%s)", msg, elapsed),
			})
		}
	}
}
