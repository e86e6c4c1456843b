package httpapi

import (
	"encoding/json"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestSessionTreeRoute: GET /sessions/{id}/tree over HTTP and through the Client, its bounds, and its
// errors: a bad bound is 400 and an unknown session 404.
func TestSessionTreeRoute(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	start := func(parent string) string {
		return must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx,
			orchestrator.StartRunParams{AgentName: "helper", Prompt: "p", ParentSessionID: parent})).SessionID
	}
	root := start("")
	child := start(root)
	grandchild := start(child)
	must[[]*orchestrator.Event](t, "AppendEvents")(env.coord.AppendEvents(ctx, grandchild, []orchestrator.Event{
		{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"input_tokens":7,"cost_usd":0.5}`)}}))

	client := env.client(t, clientTok)
	tree := must[*orchestrator.SessionTree](t, "SessionTree")(client.SessionTree(ctx, root, orchestrator.TreeParams{}))
	if tree.Root.SessionID != root || len(tree.Root.Children) != 1 || len(tree.Root.Children[0].Children) != 1 ||
		tree.Root.Children[0].Children[0].Usage.InputTokens != 7 || tree.Root.SubtreeUsage.CostUSD != 0.5 || tree.Root.SubtreeUsage.Sessions != 3 {
		t.Errorf("tree: %+v", tree.Root)
	}
	only := must[*orchestrator.SessionTree](t, "SessionTree root only")(client.SessionTree(ctx, root, orchestrator.TreeParams{Depth: -1}))
	if len(only.Root.Children) != 0 || only.Root.ChildrenOmitted != 1 || only.Root.SubtreeUsage.Sessions != 3 {
		t.Errorf("tree with depth 0: %+v", only.Root)
	}
	rec := serve(env.handler, "GET", "/sessions/"+root+"/tree?depth=1", clientTok, nil)
	var body struct {
		Root struct {
			Children []struct {
				Children        []any `json:"children"`
				ChildrenOmitted int   `json:"children_omitted"`
			} `json:"children"`
		} `json:"root"`
	}
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &body) != nil || len(body.Root.Children) != 1 ||
		body.Root.Children[0].Children == nil || body.Root.Children[0].ChildrenOmitted != 1 {
		t.Errorf("GET …/tree?depth=1: %d %s", rec.Code, rec.Body)
	}
	for _, q := range []string{"depth=-1", "depth=x", "max_children=0", "max_children=1001", "max_nodes=10001"} {
		rec := serve(env.handler, "GET", "/sessions/"+root+"/tree?"+q, clientTok, nil)
		if b := errorBody(t, rec, 400); b["error"] != "invalid_query" {
			t.Errorf("?%s: %v", q, b)
		}
	}
	rec = serve(env.handler, "GET", "/sessions/ses_missing/tree", clientTok, nil)
	if b := errorBody(t, rec, 404); b["error"] != "session_not_found" {
		t.Errorf("tree of a missing session: %v", b)
	}
}
