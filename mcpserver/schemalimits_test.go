package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// TestOverLimitOutputSchemaIsAToolError: start_agent_session and start_agent_sessions with an output_schema
// beyond a limit answer schema_too_complex naming the limit, with a hint the model can act on, and start
// nothing.
func TestOverLimitOutputSchemaIsAToolError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{}), nil, nil)
	// 201 levels deep: past the limit of 64, within the MCP transport's own limit of 1,000.
	var deep map[string]any
	if err := json.Unmarshal([]byte(strings.Repeat(`{"properties":{"a":`, 100)+`{}`+strings.Repeat(`}}`, 100)), &deep); err != nil {
		t.Fatal(err)
	}
	type limitBody struct {
		Measure  string `json:"measure"`
		Limit    int    `json:"limit"`
		Measured int    `json:"measured"`
	}
	var body limitBody
	e := failed(t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "echo-agent", "prompt": "x", "output_schema": deep}))
	if err := json.Unmarshal([]byte(e.Raw), &body); err != nil || e.Error != "schema_too_complex" ||
		body != (limitBody{"depth", orchestrator.MaxSchemaDepth, 201}) || !strings.Contains(e.Hint, "too costly") {
		t.Errorf("start_agent_session with a deep output_schema: %s (hint %q), want schema_too_complex for depth 201 and a hint", e.Raw, e.Hint)
	}
	e = failed(t, call(t, cs, "start_agent_sessions", map[string]any{"sessions": []any{
		map[string]any{"agent_name": "echo-agent", "prompt": "fine"},
		map[string]any{"agent_name": "echo-agent", "prompt": "x", "output_schema": deep},
	}}))
	if e.Error != "invalid_runs" || !strings.Contains(e.Raw, `"error":"schema_too_complex"`) || !strings.Contains(e.Raw, `"index":1`) {
		t.Errorf("start_agent_sessions with a deep output_schema: %s", e.Raw)
	}
	page, err := f.coord.ListSessions(t.Context(), orchestrator.SessionFilter{})
	if err != nil || len(page.Sessions) != 0 {
		t.Errorf("sessions after the refusals: %+v, %v; want none", page, err)
	}
}
