package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
)

// AskHumanInput is the arguments of ask_human.
type AskHumanInput struct {
	Prompt         string          `json:"prompt" jsonschema:"the question, in plain words: what you need decided or known, and why"`
	Schema         json.RawMessage `json:"schema,omitempty" jsonschema:"JSON Schema of the answer (an object); default {\"answer\": string}"`
	TimeoutSeconds float64         `json:"timeout_seconds,omitempty" jsonschema:"give up after this long (the answer is then status expired); default: wait until answered"`
}

// InputRequestInput names one input request.
type InputRequestInput struct {
	RequestID   string  `json:"request_id" jsonschema:"the request's id (inp_…)"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait up to this long for an answer while the request is open (default 0: answer at once)"`
}

// ListInputRequestsInput is the arguments of list_input_requests.
type ListInputRequestsInput struct {
	Status    string `json:"status,omitempty" jsonschema:"open (the default), answered, expired, cancelled or all"`
	SessionID string `json:"session_id,omitempty" jsonschema:"only the requests of this session"`
	Limit     int    `json:"limit,omitempty" jsonschema:"page size"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page, to continue the listing"`
}

// AnswerInputRequestInput is the arguments of answer_input_request.
type AnswerInputRequestInput struct {
	RequestID string          `json:"request_id" jsonschema:"the request's id (inp_…)"`
	Answer    json.RawMessage `json:"answer" jsonschema:"an object matching the request's schema; an approval's is {\"approved\": true|false, \"comment\": \"why\"}"`
}

// InputRequestListOutput is the answer of list_input_requests.
type InputRequestListOutput struct {
	InputRequests []*orchestrator.InputRequest `json:"input_requests"`
	NextCursor    string                       `json:"next_cursor,omitempty" jsonschema:"pass it as cursor to get the next page; absent on the last page"`
}

// addInputTools adds ask_human and get_input_request (an agent asks a person and waits for the answer),
// and list_input_requests and answer_input_request (a person's MCP client answers). Through a runner's
// gateway answer_input_request is always refused: agents ask, people answer.
func (s *server) addInputTools(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:  "ask_human",
		Title: "Ask a person",
		Description: `Ask a person a question and wait for the answer: {request_id, status, answer, answered_by, …}.

Use it when you need a decision or a fact only a person has — an approval before a risky action, a choice between options, a missing credential name — not for what you can find out yourself. Your session shows as waiting while the question is open; people see it in their inbox (ao inbox, the dashboard, list_input_requests) and answer with an object matching schema, which is validated before it reaches you. The call waits (with progress notifications) until the answer comes; status "answered" carries it in answer. If it returns with status "open" (the wait's limit passed), call get_input_request with its request_id and wait_seconds to keep waiting. Status "expired" means nobody answered within timeout_seconds: go on without it, or ask again. Needs the calling session (the X-Agent-Session-Id header, set for agents the orchestrator runs).`,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true)},
	}, func(p map[string]*jsonschema.Schema) {
		p["timeout_seconds"].Minimum = jsonschema.Ptr(0.0)
	}, inputOutput, s.askHuman)
	addTool(s, srv, &mcp.Tool{
		Name:        "get_input_request",
		Title:       "Read an input request",
		Description: `Read a question or approval request: {request_id, session_id, kind, prompt, schema, status, answer, answered_by, created_at, expires_at, closed_at}. With wait_seconds, wait up to that long for it to be answered while it is open. status is open, answered, expired or cancelled.`,
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["wait_seconds"].Minimum = jsonschema.Ptr(0.0)
	}, inputOutput, s.getInputRequest)
	addTool(s, srv, &mcp.Tool{
		Name:  "list_input_requests",
		Title: "List input requests",
		Description: fmt.Sprintf(`List what waits for a person: approval gates (kind approval: a run held until someone approves it) and questions agents asked (kind question), oldest first: {input_requests: [{request_id, session_id, run_id, agent_name, kind, prompt, schema, status, …}], next_cursor}.
status (default open) filters; session_id narrows to one session; limit is the page size (default %d, at most %d).`, DefaultListLimit, MaxListLimit),
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["status"].Enum = []any{"open", "answered", "expired", "cancelled", "all"}
		p["limit"].Minimum = jsonschema.Ptr(1.0)
		p["limit"].Maximum = jsonschema.Ptr(float64(MaxListLimit))
	}, inputOutput, s.listInputRequests)
	addTool(s, srv, &mcp.Tool{
		Name:        "answer_input_request",
		Title:       "Answer an input request",
		Description: `Answer an open input request on a person's behalf: approve or reject a held run ({"approved": true} or {"approved": false, "comment": "why"}), or answer an agent's question with an object matching its schema. A refused approval fails the session (error code rejected) and its command never runs. An answer that does not match the schema is refused with every error; a request already answered is refused (request_closed): each is answered once. Agents cannot answer requests (this tool refuses calls made for an agent's session).`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
	}, nil, inputOutput, s.answerInputRequest)
}

func (s *server) humanInput() (orchestrator.HumanInput, error) {
	h, ok := s.coord.(orchestrator.HumanInput)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "input_requests_unavailable", "this coordinator takes no input requests")
	}
	return h, nil
}

func (s *server) askHuman(ctx context.Context, req *mcp.CallToolRequest, in AskHumanInput) (*orchestrator.InputRequest, error) {
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	c := s.caller(req)
	if c.sessionID == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "session_required",
			"ask_human asks for the calling agent's session, and this call names none (header %s)", HeaderSessionID)
	}
	r, err := h.AskHuman(ctx, orchestrator.AskParams{SessionID: c.sessionID, Prompt: in.Prompt, Schema: in.Schema, TimeoutSeconds: in.TimeoutSeconds})
	if err != nil {
		return nil, err
	}
	return s.awaitAnswer(ctx, req, h, r, s.cfg.SyncWait)
}

// awaitAnswer waits up to d for r to close, sending a progress notification every ProgressInterval to a
// client that asked for them, and returns it as it is then.
func (s *server) awaitAnswer(ctx context.Context, req *mcp.CallToolRequest, h orchestrator.HumanInput, r *orchestrator.InputRequest, d time.Duration) (*orchestrator.InputRequest, error) {
	prog := s.progress(req, r.SessionID)
	deadline := time.Now().Add(d)
	for r.Status == orchestrator.InputOpen && time.Until(deadline) > 0 {
		prog.send(ctx, fmt.Sprintf("waiting for a person to answer input request %s (%s)", r.ID, time.Since(prog.start).Round(time.Second)))
		next, err := h.GetInputRequest(ctx, r.ID, min(time.Until(deadline), s.cfg.ProgressInterval))
		if err != nil {
			return nil, err
		}
		r = next
	}
	return r, nil
}

func (s *server) getInputRequest(ctx context.Context, req *mcp.CallToolRequest, in InputRequestInput) (*orchestrator.InputRequest, error) {
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	r, err := h.GetInputRequest(ctx, in.RequestID, 0)
	if err != nil {
		return nil, err
	}
	wait := min(time.Duration(in.WaitSeconds*float64(time.Second)), s.cfg.SyncWait)
	return s.awaitAnswer(ctx, req, h, r, wait)
}

func (s *server) listInputRequests(ctx context.Context, _ *mcp.CallToolRequest, in ListInputRequestsInput) (InputRequestListOutput, error) {
	h, err := s.humanInput()
	if err != nil {
		return InputRequestListOutput{}, err
	}
	f := orchestrator.InputRequestFilter{SessionID: in.SessionID, AfterID: in.Cursor, Limit: in.Limit}
	switch in.Status {
	case "":
		f.Statuses = []orchestrator.InputRequestStatus{orchestrator.InputOpen}
	case "all":
	default:
		f.Statuses = []orchestrator.InputRequestStatus{orchestrator.InputRequestStatus(in.Status)}
	}
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	f.Limit = min(f.Limit, MaxListLimit)
	list, err := h.ListInputRequests(ctx, f)
	if err != nil {
		return InputRequestListOutput{}, err
	}
	out := InputRequestListOutput{InputRequests: list}
	if out.InputRequests == nil {
		out.InputRequests = []*orchestrator.InputRequest{}
	}
	if len(list) == f.Limit {
		out.NextCursor = list[len(list)-1].ID
	}
	return out, nil
}

func (s *server) answerInputRequest(ctx context.Context, req *mcp.CallToolRequest, in AnswerInputRequestInput) (*orchestrator.InputRequest, error) {
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	if c := s.caller(req); c.sessionID != "" {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "agents_cannot_answer",
			"this call is made for agent session %s: agents ask, people answer", c.sessionID)
	}
	return h.AnswerInputRequest(ctx, in.RequestID, orchestrator.AnswerParams{Answer: in.Answer, AnsweredBy: "mcp"})
}

// inputOutput completes the output schema of the input request tools: their status and kind enums, the
// times, and the schema and answer objects.
func inputOutput(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		switch name {
		case "status":
			p.Enum = []any{"open", "answered", "expired", "cancelled"}
		case "kind":
			p.Enum = []any{"approval", "question"}
		case "created_at", "expires_at", "closed_at":
			p.Format = "date-time"
		case "schema":
			p.Types = []string{"object", "boolean"}
		case "answer":
			p.Type = "object"
		}
		inputOutput(p)
	}
	inputOutput(s.Items)
}
