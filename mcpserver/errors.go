package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// fixParametersHint follows a parameter validation error: the model's cue to correct itself.
const fixParametersHint = "The parameters do not match the agent's parameters_schema. Each entry of validation_errors " +
	"names the JSON path of a wrong value ($ is the parameters object itself) and what is wrong with it; " +
	"parameters_schema is the full schema. Fix the parameters to match it and call the tool again."

// hints are the next step suggested after an error, by code.
var hints = map[string]string{
	"output_validation_failed": "The agent's output does not match the output_schema; see validation_errors.",
	"agent_not_found":          "Call list_agent_blueprints to see the agents you can start, and use one of their names.",
	"session_not_found":        "Check the session_id; list_agent_sessions lists the sessions.",
	"parent_session_not_found": "The calling session named by the " + HeaderSessionID + " header is unknown to the coordinator. " +
		"That header comes from this MCP client's configuration (the headers of its orchestrator MCP server), not from your arguments, " +
		"so calling again will fail the same way: tell the user to fix the client's MCP server configuration. Tools that start no agent still work.",
	"resume_not_supported":      "Deterministic agents cannot be resumed: start a new session with start_agent_session instead.",
	"session_busy":              "The session is still running. Wait for it with get_agent_session_result (wait_seconds), then resume it.",
	"callback_to_deterministic": "Use mode sync (or async_poll) to start agents from a deterministic session.",
	"agent_disabled":            "This agent is disabled; choose another one from list_agent_blueprints.",
	"invalid_schema":            "The output_schema is not a valid JSON Schema; fix it or leave it out.",
	"schema_too_complex": "The output_schema is too costly to compile or to validate against (measure, limit and measured say which " +
		"limit it passed): nest it less deeply, use fewer subschemas and references, or leave it out.",
	"cancelled":   "The run this call started was stopped. Call start_agent_session (or resume_agent_session) again to run it anew.",
	"client_gone": "The session keeps running: get_agent_session_result with its session_id waits for its result.",
	"demands_conflict": "The run's demands contradict each other: project_dir must agree with the demands this MCP client's " +
		"configuration adds (" + HeaderDemands + ") and with the agent's own. Leave project_dir out, or give the one they name.",
}

// invalidHeaderHint follows an invalid_header error: the model cannot fix it, the user can.
const invalidHeaderHint = "This is not a problem with your arguments: the %s header comes from this MCP client's configuration " +
	"(the headers of its orchestrator MCP server), so calling again will fail the same way. Tell the user to fix that header " +
	"in the client's MCP server configuration. Tools that do not read it still work."

// toolError renders err as a tool error (IsError): the model sees it and can act on it, where a protocol
// error would only break the call. The first text block holds the HTTP API's JSON error body; a second
// text block says what to do next.
//
// An error result carries no structured content: the tools declare an output schema for their answers,
// and clients validate any structured content against it, error or not (the TypeScript SDK's callTool
// does, and rejects the call) — the specification asks it only of successful results.
func (s *server) toolError(err error) *mcp.CallToolResult {
	var body json.RawMessage
	hint := ""
	var ve *orchestrator.ValidationError
	var ae *argumentsError
	switch {
	case errors.As(err, &ae):
		body, hint = ae.body(), ae.hint()
	case errors.As(err, &ve):
		body = validationBody(ve)
		hint = hints[ve.Code()]
		if !ve.Output {
			hint = fixParametersHint
		}
	case errors.Is(err, context.DeadlineExceeded):
		body = errorBody("timeout", "the call timed out: "+err.Error(), nil)
	case errors.Is(err, context.Canceled):
		body = errorBody("cancelled", "the call was cancelled", nil)
	default:
		code := orchestrator.ErrorCode(err)
		var e *orchestrator.Error
		switch {
		case errors.As(err, &e):
			body = errorBody(code, e.Error(), e.Details)
		case code != "internal_error":
			body = errorBody(code, err.Error(), nil)
		default:
			// An unexpected failure (the store, a bug): logged in full, reported without internals.
			s.log.Error("mcp tool call failed", "err", err)
			body = errorBody("internal_error", "internal error: the coordinator could not complete the call; try again later", nil)
		}
		hint = hints[code]
		if code == "invalid_header" && e != nil {
			hint = fmt.Sprintf(invalidHeaderHint, e.Details["header"])
		}
		if hint == "" && errors.Is(err, orchestrator.ErrInvalid) {
			hint = "Correct the arguments and call the tool again."
		}
	}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
	if hint != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: hint})
	}
	return res
}

// validationBody is the HTTP API's body for a validation error (ValidationError marshals to it).
func validationBody(ve *orchestrator.ValidationError) json.RawMessage {
	b, err := json.Marshal(ve)
	if err != nil {
		return errorBody(ve.Code(), ve.Error(), nil)
	}
	return b
}

// errorBody is the HTTP API's error body, {"error": code, "message": msg, …details}.
func errorBody(code, msg string, details map[string]any) json.RawMessage {
	b, _ := (&orchestrator.Error{Code: code, Message: msg, Details: details}).MarshalJSON()
	return b
}
