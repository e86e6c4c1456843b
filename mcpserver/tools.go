package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// --- inputs ----------------------------------------------------------------------------------------------
//
// Each tool's input schema is inferred from its input struct (descriptions from the jsonschema tags), with
// json.RawMessage fields read as free-form JSON objects and enums, defaults and bounds added by hand where
// tags cannot say them. The arguments are checked against it before the handler runs (see schema.go), and
// a mismatch is a tool error listing every problem.

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
	// Submission control.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key of your choosing: calling again with the same key and arguments returns the first session instead of starting another"`
	Priority       int    `json:"priority,omitempty" jsonschema:"1 (the highest, the default) to 4: runners take higher priorities first"`
	Delay          string `json:"delay,omitempty" jsonschema:"start no sooner than this from now, a duration such as 30s or 1h"`
	ConcurrencyKey string `json:"concurrency_key,omitempty" jsonschema:"counts the run under the agent's max_concurrent_per_key with its other runs carrying this key"`
	// Tree governance.
	Detached bool                     `json:"detached,omitempty" jsonschema:"the session outlives yours: stopping your session, or its failure, does not stop it"`
	Limits   *orchestrator.TreeLimits `json:"limits,omitempty" jsonschema:"for a session started without a calling session (a root): bounds on its tree's depth (max_depth, the root being 0) and size (max_sessions, the root included)"`
}

// StopAgentSessionInput is the input of stop_agent_session.
type StopAgentSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the session's id (ses_...)"`
	Cascade   *bool  `json:"cascade,omitempty" jsonschema:"also stop every live session below it (the sessions it started, theirs in turn) but detached ones; default true"`
}

// StartAgentSessionsInput is the input of start_agent_sessions.
type StartAgentSessionsInput struct {
	Sessions []StartAgentSessionsItem `json:"sessions" jsonschema:"the sessions to start, each an agent with its parameters"`
	Mode     string                   `json:"mode,omitempty" jsonschema:"async_poll returns the session_ids at once (follow them with get_agent_session_result); async_callback resumes your own session with each result as its agent ends"`
}

// StartAgentSessionsItem is one session of start_agent_sessions.
type StartAgentSessionsItem struct {
	AgentName  string          `json:"agent_name" jsonschema:"name of the agent to invoke, as listed by list_agent_blueprints"`
	Parameters json.RawMessage `json:"parameters,omitempty" jsonschema:"input object matching the agent's parameters_schema"`
	Prompt     string          `json:"prompt,omitempty" jsonschema:"shorthand for parameters {\"prompt\": ...}; give either prompt or parameters, not both"`
	ProjectDir string          `json:"project_dir,omitempty" jsonschema:"working directory the agent should run in"`
	// OutputSchema is the JSON Schema the result_data must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty" jsonschema:"JSON Schema the agent's result_data must match"`
}

// ResumeAgentSessionInput is the input of resume_agent_session.
type ResumeAgentSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the AI agent session to continue"`
	Prompt    string `json:"prompt" jsonschema:"the next instructions for the agent"`
	Mode      string `json:"mode,omitempty" jsonschema:"sync waits for the result; async_poll returns at once (follow the session with get_agent_session_result)"`
}

// SessionInput is the input of get_agent_session_status.
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
//
// Each tool's output schema is inferred from its answer type, with enums added (see outputSchemas), and
// every answer is checked against it before it is sent: clients validate structured content against the
// declared schema and reject an answer that does not match.

// AgentOutput is one agent in list_agent_blueprints.
type AgentOutput struct {
	Name        string                 `json:"name" jsonschema:"the name to start it by"`
	Type        orchestrator.AgentType `json:"type" jsonschema:"agent (an AI agent, resumable) or deterministic (a program with typed parameters)"`
	Description string                 `json:"description,omitempty"`
	Tags        []string               `json:"tags,omitempty"`
	// ParametersSchema is inline for deterministic agents and for AI agents that declare one; an AI agent
	// without one takes {"prompt": "..."}.
	ParametersSchema json.RawMessage `json:"parameters_schema,omitempty" jsonschema:"the JSON Schema its parameters must match; absent for AI agents that take {\"prompt\": ...}"`
	OutputSchema     json.RawMessage `json:"output_schema,omitempty" jsonschema:"the JSON Schema of its result_data, when it declares one"`
	Disabled         bool            `json:"disabled,omitempty" jsonschema:"true when it cannot be started now"`
}

// AgentListOutput is the answer of list_agent_blueprints.
type AgentListOutput struct {
	Agents []AgentOutput `json:"agents"`
}

// AgentSchemaOutput is the answer of get_agent_schema (the HTTP API's GET /agents/{name}/schema, with the
// description). A schema that does not exist is null.
type AgentSchemaOutput struct {
	Name             string                 `json:"name"`
	Type             orchestrator.AgentType `json:"type" jsonschema:"agent (an AI agent, resumable) or deterministic (a program with typed parameters)"`
	Description      string                 `json:"description,omitempty"`
	ParametersSchema json.RawMessage        `json:"parameters_schema" jsonschema:"the JSON Schema start_agent_session's parameters must match"`
	OutputSchema     json.RawMessage        `json:"output_schema" jsonschema:"the JSON Schema of the result_data it returns; null when it declares none"`
}

// RunOutput is the answer of start_agent_session and resume_agent_session, and (without RunID) of
// get_agent_session_result.
type RunOutput struct {
	SessionID string                     `json:"session_id"`
	RunID     string                     `json:"run_id,omitempty"`
	Status    orchestrator.SessionStatus `json:"status" jsonschema:"the session's status; the result is final once it is completed, failed or stopped"`
	// Result is set once the session has ended: for a sync start or resume, the result of the run it
	// started, even when a callback has resumed the session since.
	Result *orchestrator.Result `json:"result,omitempty" jsonschema:"the result, once ended: of the run a sync start or resume started, else the session's"`
	// Error says why the session failed or stopped.
	Error string `json:"error,omitempty" jsonschema:"why the session failed or stopped"`
	// Note tells the model what to do next when the answer is not final.
	Note string `json:"note,omitempty" jsonschema:"what to do next, when the answer is not final"`
}

// RunsOutput is the answer of start_agent_sessions: the sessions started, in the order asked.
type RunsOutput struct {
	Sessions []RunOutput `json:"sessions"`
	Note     string      `json:"note,omitempty" jsonschema:"what to do next"`
}

// SessionOutput is a session's status and basic fields (get_agent_session_status, stop_agent_session,
// list_agent_sessions).
type SessionOutput struct {
	SessionID       string                     `json:"session_id"`
	AgentName       string                     `json:"agent_name"`
	AgentType       orchestrator.AgentType     `json:"agent_type"`
	Status          orchestrator.SessionStatus `json:"status"`
	ParentSessionID string                     `json:"parent_session_id,omitempty" jsonschema:"the session that started this one"`
	Callback        bool                       `json:"callback,omitempty" jsonschema:"true when its parent is resumed with its result"`
	ProjectDir      string                     `json:"project_dir,omitempty"`
	RunID           string                     `json:"run_id,omitempty" jsonschema:"its current (latest) run"`
	// HasResult says get_agent_session_result has a result to give.
	HasResult bool   `json:"has_result" jsonschema:"true when get_agent_session_result has a result to give"`
	Error     string `json:"error,omitempty" jsonschema:"why the session failed or stopped"`
	ErrorCode string `json:"error_code,omitempty" jsonschema:"a machine code for why it failed or stopped (timeout, start_timeout, runner_lost, api_overloaded, …)"`
	// Attempts under the session's retry policy.
	Attempt       int        `json:"attempt,omitempty" jsonschema:"its current attempt, from 1; a failed attempt its retry policy allows is followed by the next"`
	MaxAttempts   int        `json:"max_attempts,omitempty" jsonschema:"how many attempts its retry policy allows (1: no retry)"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty" jsonschema:"when the next attempt is due, while the session waits pending for a retry"`
	CachedFrom    string     `json:"cached_from,omitempty" jsonschema:"the session whose result it shares: answered from its agent's result cache, or it waited for an identical start"`
	WaitingReason string     `json:"waiting_reason,omitempty" jsonschema:"why it is still pending, when not just for a runner: rate_limited or cache_in_flight"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
	Note          string     `json:"note,omitempty" jsonschema:"what to do next, when there is something to do"`
}

// SessionListOutput is the answer of list_agent_sessions.
type SessionListOutput struct {
	Sessions   []SessionOutput `json:"sessions"`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema:"pass it as cursor to get the next page; absent on the last page"`
}

func sessionOutput(s *orchestrator.Session) SessionOutput {
	return SessionOutput{
		SessionID: s.ID, AgentName: s.AgentName, AgentType: s.AgentType, Status: s.Status,
		ParentSessionID: s.ParentSessionID, Callback: s.Callback, ProjectDir: s.ProjectDir,
		RunID: s.CurrentRunID, HasResult: s.Status.Ended() && s.Result != nil, Error: s.Error, ErrorCode: s.ErrorCode,
		Attempt: s.Attempt, MaxAttempts: s.MaxAttempts, NextAttemptAt: s.NextAttemptAt,
		CachedFrom: s.CachedFrom, WaitingReason: s.WaitingReason,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, EndedAt: s.EndedAt,
	}
}

// --- tool table ------------------------------------------------------------------------------------------

var modes = []any{string(orchestrator.ModeSync), string(orchestrator.ModeAsyncPoll), string(orchestrator.ModeAsyncCallback)}

var (
	sessionStatuses = []any{string(orchestrator.SessionPending), string(orchestrator.SessionRunning),
		string(orchestrator.SessionCompleted), string(orchestrator.SessionFailed), string(orchestrator.SessionStopped), string(orchestrator.SessionWaiting)}
	agentTypes = []any{string(orchestrator.AgentTypeAgent), string(orchestrator.AgentTypeDeterministic)}
)

// completeOutput adds to an inferred output schema what the Go types cannot say, by property name, at any
// depth: the enums of statuses and agent types, the format of times, and that an agent's schemas are JSON
// Schemas (objects or booleans; null where the field is always present, as in get_agent_schema).
func completeOutput(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		switch name {
		case "status":
			p.Enum = sessionStatuses
		case "type", "agent_type":
			p.Enum = agentTypes
		case "created_at", "updated_at", "ended_at":
			p.Format = "date-time"
		case "parameters_schema", "output_schema":
			p.Types = []string{"object", "boolean"}
			if slices.Contains(s.Required, name) {
				p.Types = append(p.Types, "null")
			}
		}
		completeOutput(p)
	}
	completeOutput(s.Items)
}

func boolPtr(b bool) *bool { return &b }

// readOnly annotates a tool that only reads.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}
}

// addTools adds the server's tools, group by group, in the order a client lists them: finding agents,
// starting them, following and stopping their sessions, and reading schedules.
func (s *server) addTools(srv *mcp.Server) {
	s.addAgentTools(srv)
	s.addStartTools(srv)
	s.addSessionTools(srv)
	s.addScheduleTools(srv)
	s.addTreeTool(srv)
	s.addInputTools(srv)
	s.addRerunTool(srv)
}

// addAgentTools adds list_agent_blueprints and get_agent_schema: what a model reads before it starts an
// agent.
func (s *server) addAgentTools(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:  "list_agent_blueprints",
		Title: "List agents",
		Description: `List the agents you can start (agent blueprints), with their type and parameters_schema.

Returns {agents: [{name, type, description, tags, parameters_schema, output_schema}]}. type is "agent" (an AI agent) or "deterministic" (a program with typed parameters and structured output).
For deterministic agents, use parameters_schema to construct valid parameters for start_agent_session.
For AI agents without a parameters_schema, use parameters={"prompt": "your instructions"} (or the prompt argument).
output_schema, when present, describes the result_data the agent returns.
tags (optional): only agents carrying all of these tags.`,
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["tags"].Type, p["tags"].Types = "array", nil // not ["null","array"]: an omitted list is the same
	}, completeOutput, s.listAgentBlueprints)

	addTool(s, srv, &mcp.Tool{
		Name:  "get_agent_schema",
		Title: "Get an agent's schemas",
		Description: `Get one agent's schemas: {name, type, description, parameters_schema, output_schema}.

parameters_schema is what start_agent_session's parameters must match (AI agents without a declared schema show the implicit {"prompt": string} schema); output_schema describes the result_data the agent returns (null when it declares none).`,
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["agent_name"].MinLength = jsonschema.Ptr(1)
	}, completeOutput, s.getAgentSchema)
}

// addStartTools adds start_agent_session, start_agent_sessions (a fan-out) and resume_agent_session.
func (s *server) addStartTools(srv *mcp.Server) {
	wait := s.cfg.SyncWait.Round(time.Second).String()
	addTool(s, srv, &mcp.Tool{
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
Parameters are validated against the schema before anything runs - invalid parameters return an error listing every problem (validation_errors with the JSON path of each wrong value) together with the full parameters_schema: use them to correct the parameters and call again.
Cancelling a sync call stops the session it started.`,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, func(p map[string]*jsonschema.Schema) {
		p["agent_name"].MinLength = jsonschema.Ptr(1)
		p["parameters"].Type = "object"
		p["output_schema"].Type = "object"
		p["mode"].Enum = modes
		p["mode"].Default = json.RawMessage(`"sync"`)
	}, completeOutput, s.startAgentSession)

	addTool(s, srv, &mcp.Tool{
		Name:  "start_agent_sessions",
		Title: "Start several agents",
		Description: fmt.Sprintf(`Start several agent sessions at once (fan-out): up to %d, all or none, without waiting for them.

Args:
    sessions: [{agent_name, parameters or prompt, project_dir, output_schema}] — each as start_agent_session takes them.
    mode: async_poll (default) or async_callback.
          async_poll returns {sessions: [{session_id, run_id, status}]} at once, in the order asked: follow each with get_agent_session_result (wait_seconds waits for the end).
          async_callback returns at once too; your own session is resumed with each result as its agent ends (only when you are yourself an orchestrated agent session).

Every session is validated before any starts: if one is invalid, none starts, and the error lists each invalid session by its index in sessions with its own error (validation_errors for parameters that do not match the schema): correct them and call again.`, maxStartSessions),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, func(p map[string]*jsonschema.Schema) {
		p["sessions"].Type, p["sessions"].Types = "array", nil
		p["sessions"].MinItems = jsonschema.Ptr(1)
		p["sessions"].MaxItems = jsonschema.Ptr(maxStartSessions)
		item := p["sessions"].Items.Properties
		item["agent_name"].MinLength = jsonschema.Ptr(1)
		item["parameters"].Type = "object"
		item["output_schema"].Type = "object"
		p["mode"].Enum = modes[1:]
		p["mode"].Default = json.RawMessage(`"async_poll"`)
	}, completeOutput, s.startAgentSessions)

	addTool(s, srv, &mcp.Tool{
		Name:  "resume_agent_session",
		Title: "Resume an AI agent",
		Description: `Continue an AI agent session that has ended (completed, failed or stopped) with a new prompt; the agent keeps its conversation so far.

mode: sync (default) waits for the agent to finish (up to ` + wait + `) and returns {session_id, status, result}; async_poll returns {session_id, run_id, status} at once (follow it with get_agent_session_result).
Deterministic agents cannot be resumed: start a new session with start_agent_session instead. A session that is still running must end first (wait with get_agent_session_result).
Cancelling a sync call stops the run it started.`,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, func(p map[string]*jsonschema.Schema) {
		p["session_id"].MinLength = jsonschema.Ptr(1)
		p["prompt"].MinLength = jsonschema.Ptr(1)
		p["mode"].Enum = modes[:2]
		p["mode"].Default = json.RawMessage(`"sync"`)
	}, completeOutput, s.resumeAgentSession)
}

// addSessionTools adds the tools that follow sessions (status, result, listing) and stop them.
func (s *server) addSessionTools(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:        "get_agent_session_status",
		Title:       "Get a session's status",
		Description: `Get a session's status — pending, waiting (for a person to answer an input request: see list_input_requests), running, completed, failed or stopped — and its basic fields (agent, parent session, current run, error, times), without waiting and without its result (use get_agent_session_result for that).`,
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["session_id"].MinLength = jsonschema.Ptr(1)
	}, completeOutput, s.getAgentSessionStatus)

	maxWait := int(s.cfg.MaxResultWait / time.Second)
	addTool(s, srv, &mcp.Tool{
		Name:  "get_agent_session_result",
		Title: "Get a session's result",
		Description: fmt.Sprintf(`Get a session's result: {session_id, status, result: {result_type, result_text, result_data, exit_code, error}} once the session has ended (completed, failed or stopped).

wait_seconds (optional, up to %d) first waits for the session to end; without it the current state is returned at once. If status is still pending or running, call again (with wait_seconds) later.`, maxWait),
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["session_id"].MinLength = jsonschema.Ptr(1)
		p["wait_seconds"].Minimum = jsonschema.Ptr(0.0)
	}, completeOutput, s.getAgentSessionResult)

	addTool(s, srv, &mcp.Tool{
		Name:  "list_agent_sessions",
		Title: "List sessions",
		Description: fmt.Sprintf(`List agent sessions, oldest first, in pages: {sessions: [{session_id, agent_name, agent_type, status, parent_session_id, run_id, has_result, error, created_at, updated_at, ended_at}], next_cursor}.

Filters (all optional): status, agent_name, parent_session_id. limit is the page size (default %d, at most %d); pass next_cursor as cursor to get the next page.`, DefaultListLimit, MaxListLimit),
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["status"].Enum = sessionStatuses
		p["limit"].Minimum = jsonschema.Ptr(1.0)
		p["limit"].Maximum = jsonschema.Ptr(float64(MaxListLimit))
	}, completeOutput, s.listAgentSessions)

	addTool(s, srv, &mcp.Tool{
		Name:        "stop_agent_session",
		Title:       "Stop a session",
		Description: `Stop a session's current run: a queued run stops at once, a running one is stopped by its runner (its processes are terminated). Every live session below it - the sessions it started, theirs in turn - is stopped too, except detached ones; cascade false stops this session alone. Returns the session's status; when it is not yet "stopped", the stop is on its way (get_agent_session_result with wait_seconds waits for it). Stopping an ended session changes nothing but its live descendants.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, func(p map[string]*jsonschema.Schema) {
		p["session_id"].MinLength = jsonschema.Ptr(1)
	}, completeOutput, s.stopAgentSession)
}

// --- handlers --------------------------------------------------------------------------------------------
//
// A handler returns its answer, or an error the model should see (see [server.toolError]).

func (s *server) listAgentBlueprints(ctx context.Context, req *mcp.CallToolRequest, in ListAgentBlueprintsInput) (AgentListOutput, error) {
	c := s.caller(req)
	if c.tagsErr != nil {
		return AgentListOutput{}, c.tagsErr
	}
	// The caller's tags and the argument's both filter: an agent must carry all of them.
	tags := ParseTags(strings.Join(append(c.tags, in.Tags...), ","))
	agents, err := s.coord.ListAgents(ctx, orchestrator.ListAgentsParams{Tags: tags})
	if err != nil {
		return AgentListOutput{}, err
	}
	out := AgentListOutput{Agents: make([]AgentOutput, 0, len(agents))}
	for _, a := range agents {
		out.Agents = append(out.Agents, AgentOutput{
			Name: a.Name, Type: a.Type, Description: a.Description, Tags: a.Tags,
			ParametersSchema: nullToEmpty(a.ParametersSchema), OutputSchema: nullToEmpty(a.OutputSchema), Disabled: a.Disabled,
		})
	}
	return out, nil
}

func (s *server) getAgentSchema(ctx context.Context, req *mcp.CallToolRequest, in GetAgentSchemaInput) (AgentSchemaOutput, error) {
	a, err := s.coord.GetAgent(ctx, in.AgentName)
	if err != nil {
		return AgentSchemaOutput{}, err
	}
	out := AgentSchemaOutput{Name: a.Name, Type: a.Type, Description: a.Description}
	out.ParametersSchema, out.OutputSchema = a.Schemas()
	return out, nil
}

func (s *server) startAgentSession(ctx context.Context, req *mcp.CallToolRequest, in StartAgentSessionInput) (RunOutput, error) {
	c := s.caller(req)
	if c.demandsErr != nil {
		return RunOutput{}, c.demandsErr
	}
	mode := orchestrator.Mode(in.Mode)
	if mode == "" {
		mode = orchestrator.ModeSync
	}
	if mode == orchestrator.ModeAsyncCallback && c.sessionID == "" {
		return RunOutput{}, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"mode async_callback resumes the calling session with the result, but this call names no calling session "+
				"(the %s header, or the server's configured session id); use mode sync or async_poll", HeaderSessionID)
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
		IdempotencyKey:  in.IdempotencyKey,
		Priority:        in.Priority,
		ConcurrencyKey:  in.ConcurrencyKey,
		Detached:        in.Detached,
		Limits:          in.Limits,
	}
	if in.Delay != "" {
		d, err := time.ParseDuration(in.Delay)
		if err != nil {
			return RunOutput{}, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_delay", "delay must be a duration such as 30s or 1h, not %q", in.Delay)
		}
		p.Delay = d
	}
	return s.run(ctx, req, c, p)
}

func (s *server) resumeAgentSession(ctx context.Context, req *mcp.CallToolRequest, in ResumeAgentSessionInput) (RunOutput, error) {
	c := s.caller(req)
	if c.demandsErr != nil {
		return RunOutput{}, c.demandsErr
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
	return s.run(ctx, req, c, p)
}

// startWait is how long the coordinator's StartRun waits in sync mode before it answers: as good as not
// at all, so that the session id is known at once (the run is still recorded as sync). The tool waits for
// the end itself, telling the client the session id in its first progress notification.
const startWait = time.Millisecond

// startTimeout bounds the StartRun call, which runs to its end even when the client cancels meanwhile:
// a session it creates must be known, to be stopped.
const startTimeout = time.Minute

// run starts or resumes a session. A sync run is waited for up to SyncWait — the run, not its session,
// which a callback may resume the moment the run ends — after which the answer says how to go on (the
// session keeps running). When the client cancels a sync call, the run it started is stopped; when the
// client goes away without cancelling, the call stops waiting and the session runs on.
func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, c caller, p orchestrator.StartRunParams) (RunOutput, error) {
	deadline := time.Now().Add(s.cfg.SyncWait)
	sync := p.Mode == orchestrator.ModeSync
	if sync {
		p.Wait = startWait
	}
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		ctx = traces.FromHeader(ctx, req.Extra.Header) // a traceparent header: the run joins the caller's trace
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	res, err := s.coord.StartRun(sctx, p)
	cancel()
	if err != nil {
		return RunOutput{}, err
	}
	out := RunOutput{SessionID: res.SessionID, RunID: res.RunID, Status: res.Status}
	if sync && !res.Status.Ended() {
		prog := s.progress(req, res.SessionID)
		prog.send(ctx, fmt.Sprintf("started (run %s); waiting for it to end", res.RunID))
		ended, err := s.waitRun(ctx, prog, res.RunID, time.Until(deadline))
		if err != nil {
			if ctx.Err() != nil {
				return RunOutput{}, s.interrupted(ctx, req, c, res)
			}
			return RunOutput{}, err
		}
		out.Status, res.Result, res.Error = ended.Status, ended.Result, ended.Error
	}
	switch {
	case out.Status.Ended():
		out.Result, out.Error = res.Result, res.Error
	case sync:
		out.Note = fmt.Sprintf("The agent is still %s after %s. Call get_agent_session_result with this session_id "+
			"(and wait_seconds) to wait for its result.", out.Status, s.cfg.SyncWait.Round(time.Second))
	case p.Mode == orchestrator.ModeAsyncPoll:
		out.Note = "Started. Call get_agent_session_result with this session_id (and wait_seconds) to get the result."
	case p.Mode == orchestrator.ModeAsyncCallback:
		out.Note = "Started. Your session will be resumed with the result when the agent ends; no need to poll."
	}
	return out, nil
}

// maxStartSessions bounds start_agent_sessions: the HTTP API's default batch limit.
const maxStartSessions = 1000

func (s *server) startAgentSessions(ctx context.Context, req *mcp.CallToolRequest, in StartAgentSessionsInput) (RunsOutput, error) {
	c := s.caller(req)
	if c.demandsErr != nil {
		return RunsOutput{}, c.demandsErr
	}
	mode := orchestrator.Mode(in.Mode)
	if mode == "" {
		mode = orchestrator.ModeAsyncPoll
	}
	if mode == orchestrator.ModeAsyncCallback && c.sessionID == "" {
		return RunsOutput{}, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"mode async_callback resumes the calling session with the results, but this call names no calling session "+
				"(the %s header, or the server's configured session id); use mode async_poll", HeaderSessionID)
	}
	bs, ok := s.coord.(orchestrator.BatchStarter)
	if !ok {
		return RunsOutput{}, orchestrator.Errorf(orchestrator.ErrInvalid, "batch_unavailable",
			"this coordinator starts sessions one at a time: call start_agent_session for each")
	}
	ps := make([]orchestrator.StartRunParams, len(in.Sessions))
	for i, it := range in.Sessions {
		ps[i] = orchestrator.StartRunParams{
			AgentName:       it.AgentName,
			Parameters:      nullToEmpty(it.Parameters),
			Prompt:          it.Prompt,
			Mode:            mode,
			Type:            orchestrator.RunTypeStart,
			ParentSessionID: c.sessionID,
			ProjectDir:      it.ProjectDir,
			Demands:         c.demands,
			OutputSchema:    nullToEmpty(it.OutputSchema),
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	res, err := bs.StartRuns(sctx, ps)
	cancel()
	if err != nil {
		return RunsOutput{}, err
	}
	out := RunsOutput{Sessions: make([]RunOutput, len(res))}
	for i, r := range res {
		out.Sessions[i] = RunOutput{SessionID: r.SessionID, RunID: r.RunID, Status: r.Status}
	}
	out.Note = "Started. Call get_agent_session_result with each session_id (and wait_seconds) to get its result."
	if mode == orchestrator.ModeAsyncCallback {
		out.Note = "Started. Your session will be resumed with each result as its agent ends; no need to poll."
	}
	return out, nil
}

func (s *server) getAgentSessionStatus(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (SessionOutput, error) {
	sess, err := s.coord.GetSession(ctx, in.SessionID)
	if err != nil {
		return SessionOutput{}, err
	}
	return sessionOutput(sess), nil
}

func (s *server) getAgentSessionResult(ctx context.Context, req *mcp.CallToolRequest, in GetAgentSessionResultInput) (RunOutput, error) {
	wait := min(time.Duration(in.WaitSeconds)*time.Second, s.cfg.MaxResultWait)
	var (
		sess *orchestrator.Session
		err  error
	)
	if wait > 0 {
		sess, err = s.wait(ctx, s.progress(req, in.SessionID), in.SessionID, wait)
	} else {
		sess, err = s.coord.GetSession(ctx, in.SessionID)
	}
	if err != nil {
		return RunOutput{}, err
	}
	out := RunOutput{SessionID: sess.ID, Status: sess.Status}
	if sess.Status.Ended() {
		out.Result, out.Error = sess.Result, sess.Error
	} else {
		out.Note = fmt.Sprintf("The session is still %s; call again (with wait_seconds) to wait for its result.", sess.Status)
	}
	return out, nil
}

func (s *server) listAgentSessions(ctx context.Context, req *mcp.CallToolRequest, in ListAgentSessionsInput) (SessionListOutput, error) {
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
		return SessionListOutput{}, err
	}
	out := SessionListOutput{Sessions: make([]SessionOutput, 0, len(page.Sessions)), NextCursor: page.NextCursor}
	for _, sess := range page.Sessions {
		out.Sessions = append(out.Sessions, sessionOutput(sess))
	}
	return out, nil
}

func (s *server) stopAgentSession(ctx context.Context, req *mcp.CallToolRequest, in StopAgentSessionInput) (SessionOutput, error) {
	sess, err := s.coord.StopSession(ctx, in.SessionID, orchestrator.StopOpts{NoCascade: in.Cascade != nil && !*in.Cascade})
	if err != nil {
		return SessionOutput{}, err
	}
	out := sessionOutput(sess)
	if !sess.Status.Ended() {
		out.Note = "Stop requested; the runner is stopping the agent. get_agent_session_result with wait_seconds waits for the session to end."
	}
	return out, nil
}

// nullToEmpty treats an explicit JSON null as absent.
func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return raw
}
