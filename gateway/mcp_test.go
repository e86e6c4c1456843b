package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// headerTransport adds the run's token and session to every MCP request, as the Claude Code executor
// configures its MCP server.
type headerTransport struct {
	header http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayMCP: an AI agent's MCP calls through its runner's gateway start children of its own session,
// with its run's token, and cannot reach other sessions.
func TestGatewayMCP(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	parent := must[*orchestrator.StartRunResult](t, "StartRun parent")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	other := must[*orchestrator.StartRunResult](t, "StartRun other")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "o"}))

	gw := gateway.New(coord, gateway.Config{MCP: func(c orchestrator.Coordinator) http.Handler {
		return mcpserver.NewHandler(c, mcpserver.Config{})
	}})
	t.Cleanup(func() { gw.Close() })
	env, closeRun := gw.Open(assignment(parent))
	defer closeRun()

	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		h := http.Header{}
		h.Set("Authorization", "Bearer "+token)
		h.Set(mcpserver.HeaderSessionID, parent.SessionID)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: env[orchestrator.EnvAPIURL] + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{h}},
			DisableStandaloneSSE: true,
		}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(env[orchestrator.EnvAPIToken])
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{
		"agent_name": "helper", "prompt": "child", "mode": "async_poll",
	}})
	if err != nil || res.IsError {
		t.Fatalf("start_agent_session through the gateway: %v %+v", err, res)
	}
	var started struct {
		SessionID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &started); err != nil || started.SessionID == "" {
		t.Fatalf("start result %s", b)
	}
	child := must[*orchestrator.Session](t, "GetSession child")(coord.GetSession(ctx, started.SessionID))
	if child.ParentSessionID != parent.SessionID {
		t.Errorf("child's parent = %q, want the run's session %q", child.ParentSessionID, parent.SessionID)
	}
	// Another run's session is out of scope.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "stop_agent_session", Arguments: map[string]any{"session_id": other.SessionID}})
	if err != nil || !res.IsError {
		t.Errorf("stop another run's session through the gateway: %v %+v, want a tool error", err, res)
	}
	// Without the run's token, nothing.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: env[orchestrator.EnvAPIURL] + "/mcp", DisableStandaloneSSE: true}, nil); err == nil {
		t.Error("an MCP client without the run's token connected")
	}
}
