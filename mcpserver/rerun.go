package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
)

// RerunSessionInput is the input of rerun_session.
type RerunSessionInput struct {
	SessionID  string          `json:"session_id" jsonschema:"the ended session to run again (ses_...)"`
	Parameters json.RawMessage `json:"parameters,omitempty" jsonschema:"changes to the original's parameters, as a JSON merge patch: a key replaces the original's value, null removes it, the rest is kept"`
}

// addRerunTool adds rerun_session.
func (s *server) addRerunTool(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:        "rerun_session",
		Title:       "Re-run a session",
		Description: `Run an ended session (completed, failed or stopped) again as a new session of the same agent with the same parameters, after applying parameters (optional) to them as a JSON merge patch. The parameters are validated again. Returns {session_id, run_id, status} of the new session at once (follow it with get_agent_session_result); it records the original as rerun_of. A session still pending or running cannot be re-run: stop it or wait for it first.`,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true), DestructiveHint: boolPtr(false)},
	}, func(p map[string]*jsonschema.Schema) {
		p["session_id"].MinLength = jsonschema.Ptr(1)
		p["parameters"].Type = "object"
	}, completeOutput, s.rerunSession)
}

func (s *server) rerunSession(ctx context.Context, _ *mcp.CallToolRequest, in RerunSessionInput) (RunOutput, error) {
	rr, ok := s.coord.(orchestrator.Rerunner)
	if !ok {
		return RunOutput{}, orchestrator.Errorf(orchestrator.ErrNotFound, "rerun_unavailable", "this coordinator cannot re-run sessions")
	}
	res, err := rr.RerunSession(ctx, in.SessionID, orchestrator.RerunParams{Parameters: in.Parameters})
	if err != nil {
		return RunOutput{}, err
	}
	return RunOutput{SessionID: res.SessionID, RunID: res.RunID, Status: res.Status,
		Note: "The re-run is queued; get_agent_session_result with wait_seconds waits for its result."}, nil
}
