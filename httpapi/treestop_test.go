package httpapi

import (
	"net/http"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestTreeOverHTTP covers a tree's governance through the HTTP API and its client: a child's place in its
// tree, a stop with and without cascade, and the refusal of a start beyond a tree's limits.
func TestTreeOverHTTP(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	admin := env.client(t, adminTok)
	client := env.client(t, clientTok)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(admin.CreateAgent(ctx, aiAgent("helper")))
	startIn := func(parent string, limits *orchestrator.TreeLimits, detached bool) (*orchestrator.StartRunResult, error) {
		return client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "hi", ParentSessionID: parent, Limits: limits, Detached: detached})
	}
	root := must[*orchestrator.StartRunResult](t, "start root")(startIn("", &orchestrator.TreeLimits{MaxDepth: 1, MaxSessions: 4}, false))
	child := must[*orchestrator.StartRunResult](t, "start child")(startIn(root.SessionID, nil, false))
	detached := must[*orchestrator.StartRunResult](t, "start detached child")(startIn(root.SessionID, nil, true))
	s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, detached.SessionID))
	if s.RootSessionID != root.SessionID || s.Depth != 1 || !s.Detached || s.Limits == nil || s.Limits.MaxDepth != 1 {
		t.Fatalf("detached child = root %q depth %d detached %v limits %+v", s.RootSessionID, s.Depth, s.Detached, s.Limits)
	}

	rec := serve(env.handler, "POST", "/runs", clientTok, []byte(`{"agent_name":"helper","prompt":"hi","parent_session_id":"`+child.SessionID+`"}`))
	body := errorBody(t, rec, http.StatusConflict)
	if body["error"] != orchestrator.CodeTreeLimitExceeded || body["limit"] != "max_depth" || body["max"] != 1.0 {
		t.Errorf("a grandchild under max_depth 1: %v, want tree_limit_exceeded naming max_depth 1", body)
	}
	errorBody(t, serve(env.handler, "POST", "/sessions/"+root.SessionID+"/stop?cascade=maybe", clientTok, nil), http.StatusBadRequest)

	// Without cascade the child lives on; with it (the default) it stops, the detached child excepted.
	must[*orchestrator.Session](t, "StopSession")(client.StopSession(ctx, root.SessionID, orchestrator.StopOpts{NoCascade: true}))
	if s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, child.SessionID)); s.Status != orchestrator.SessionPending {
		t.Fatalf("child after a stop without cascade = %s, want pending", s.Status)
	}
	must[*orchestrator.Session](t, "StopSession")(client.StopSession(ctx, root.SessionID))
	if s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, child.SessionID)); s.Status != orchestrator.SessionStopped || s.ErrorCode != orchestrator.CodeParentStopped {
		t.Fatalf("child after a cascading stop = %s (%q), want stopped (parent_stopped)", s.Status, s.ErrorCode)
	}
	if s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, detached.SessionID)); s.Status != orchestrator.SessionPending {
		t.Fatalf("detached child after a cascading stop = %s, want pending", s.Status)
	}
}
