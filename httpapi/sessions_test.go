package httpapi

import (
	"slices"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestListSessionsNewestFirst: ?order=newest lists the newest sessions first, and its cursor pages on
// toward older ones, over HTTP and through the Client.
func TestListSessionsNewestFirst(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	var ids []string // oldest first
	for range 5 {
		res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
		ids = append(ids, res.SessionID)
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	client := env.client(t, clientTok)
	var got []string
	cursor := ""
	for range 5 {
		page := must[*orchestrator.SessionPage](t, "ListSessions")(client.ListSessions(ctx, orchestrator.SessionFilter{NewestFirst: true, Limit: 2, AfterID: cursor}))
		for _, s := range page.Sessions {
			got = append(got, s.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages of ListSessions newest first = %v, want %v", got, want)
	}
	page := must[*orchestrator.SessionPage](t, "ListSessions oldest first")(client.ListSessions(ctx, orchestrator.SessionFilter{Limit: 1}))
	if len(page.Sessions) != 1 || page.Sessions[0].ID != ids[0] {
		t.Errorf("ListSessions oldest first = %+v, want %s first", page.Sessions, ids[0])
	}
	rec := serve(env.handler, "GET", "/sessions?order=oldest&limit=1", clientTok, nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), ids[0]) {
		t.Errorf("GET /sessions?order=oldest: %d %s, want %s", rec.Code, rec.Body, ids[0])
	}
}
