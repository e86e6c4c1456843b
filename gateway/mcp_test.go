package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
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

// mcpGateway returns a coordinator with the helper agent, a run of it (the parent) and the environment of
// that run, whose gateway serves MCP.
func mcpGateway(t *testing.T) (*coordinator.Coordinator, *orchestrator.StartRunResult, map[string]string) {
	t.Helper()
	coord := newCoordinator(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctxT(t), helper()))
	parent := must[*orchestrator.StartRunResult](t, "StartRun parent")(coord.StartRun(ctxT(t), orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	gw := gateway.New(coord, gateway.Config{MCP: func(c orchestrator.Coordinator) http.Handler {
		return mcpserver.NewHandler(c, mcpserver.Config{})
	}})
	t.Cleanup(func() { gw.Close() })
	env, closeRun := gw.Open(assignment(parent))
	t.Cleanup(closeRun)
	return coord, parent, env
}

// connectMCP connects an MCP client to the run's gateway with token, as the parent's session.
func connectMCP(t *testing.T, env map[string]string, token, sessionID string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	h.Set(mcpserver.HeaderSessionID, sessionID)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(ctxT(t), &mcp.StreamableClientTransport{
		Endpoint: env[orchestrator.EnvAPIURL] + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{h}},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestGatewayMCP: an AI agent's MCP calls through its runner's gateway start children of its own session,
// with its run's token, and cannot reach other sessions.
func TestGatewayMCP(t *testing.T) {
	t.Parallel()
	coord, parent, env := mcpGateway(t)
	ctx := ctxT(t)
	other := must[*orchestrator.StartRunResult](t, "StartRun other")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "o"}))
	cs := connectMCP(t, env, env[orchestrator.EnvAPIToken], parent.SessionID, nil)
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

// TestGatewayMCPCancel: an AI agent that cancels a sync start_agent_session made through its gateway stops
// the child. The gateway lets a run write events to its own session only, so the cancellation is recorded
// there, naming the child.
func TestGatewayMCPCancel(t *testing.T) {
	t.Parallel()
	coord, parent, env := mcpGateway(t)
	ctx := ctxT(t)
	progress := make(chan string, 8)
	cs := connectMCP(t, env, env[orchestrator.EnvAPIToken], parent.SessionID, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params.Message:
			default:
			}
		},
	})

	// No runner takes the child: the sync call waits until it is cancelled.
	callCtx, cancel := context.WithCancel(ctx)
	p := &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{"agent_name": "helper", "prompt": "child"}}
	p.SetProgressToken("t")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, p)
		done <- err
	}()
	var first string
	select {
	case first = <-progress:
	case <-ctx.Done():
		t.Fatal("no progress notification")
	}
	childID, _, _ := strings.Cut(strings.TrimPrefix(first, "session "), " ")
	cancel()
	<-done
	child := must[*orchestrator.Session](t, "WaitSession")(coord.WaitSession(ctx, childID, 30*time.Second))
	if child.Status != orchestrator.SessionStopped || child.ParentSessionID != parent.SessionID {
		t.Fatalf("child %s after the cancelled call: %s, parent %q; want stopped, %s", childID, child.Status, child.ParentSessionID, parent.SessionID)
	}
	evs := must[[]*orchestrator.Event](t, "ListEvents")(coord.ListEvents(ctx, parent.SessionID, 0, 100, 0))
	var data map[string]string
	for _, e := range evs {
		if e.Type == mcpserver.EventCallCancelled {
			_ = e.DecodeData(&data)
		}
	}
	if data["child_session_id"] != childID || data["tool"] != "start_agent_session" {
		t.Errorf("the parent's events %v: want an %s naming child %s", evs, mcpserver.EventCallCancelled, childID)
	}
}
