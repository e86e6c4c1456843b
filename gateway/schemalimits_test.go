package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// TestGatewayRefusesOverLimitSchemas: an agent that starts a child with an output_schema beyond a limit,
// through its gateway's HTTP API or its MCP tools, gets schema_too_complex naming the limit, and no child
// is created.
func TestGatewayRefusesOverLimitSchemas(t *testing.T) {
	t.Parallel()
	coord, parent, env := mcpGateway(t)
	ctx := ctxT(t)
	deep := strings.Repeat(`{"properties":{"a":`, 800) + `{}` + strings.Repeat(`}}`, 800)

	_, err := executorClient(t, env).StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "child",
		OutputSchema: json.RawMessage(deep)})
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "schema_too_complex" || oe.Details["measure"] != "depth" ||
		oe.Details["measured"] != float64(1601) || oe.Details["limit"] != float64(orchestrator.MaxSchemaDepth) {
		t.Errorf("StartRun through the gateway with a deep output_schema: %v (%+v), want schema_too_complex for depth 1601", err, oe)
	}

	cs := connectMCP(t, env, env[orchestrator.EnvAPIToken], parent.SessionID, nil)
	// The MCP transport refuses JSON nested past 1,000 levels itself; 100 levels (201 deep) reach the tool.
	var schema map[string]any
	if err := json.Unmarshal([]byte(strings.Repeat(`{"properties":{"a":`, 100)+`{}`+strings.Repeat(`}}`, 100)), &schema); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{
		"agent_name": "helper", "prompt": "child", "mode": "async_poll", "output_schema": schema,
	}})
	if err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("start_agent_session with a deep output_schema: %v %+v, want a tool error", err, res)
	}
	var body map[string]any
	text, _ := res.Content[0].(*mcp.TextContent)
	if text == nil || json.Unmarshal([]byte(text.Text), &body) != nil || body["error"] != "schema_too_complex" ||
		body["measure"] != "depth" || body["measured"] != float64(201) {
		t.Errorf("start_agent_session's error: %+v, want schema_too_complex for depth 201", res.Content)
	}

	page := must[*orchestrator.SessionPage](t, "ListSessions")(coord.ListSessions(ctx, orchestrator.SessionFilter{ParentSessionID: parent.SessionID}))
	if len(page.Sessions) != 0 {
		t.Errorf("children after the refusals: %d, want none", len(page.Sessions))
	}
}
