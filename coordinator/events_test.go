package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestAppendEventsRefusesMalformedText: event data that is not UTF-8, or holds an escaped NUL or half a
// surrogate pair, is refused whole, so nothing a strict JSON reader (or PostgreSQL) rejects is stored.
func TestAppendEventsRefusesMalformedText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "helper")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	good := orchestrator.Event{Type: "progress", Data: json.RawMessage(`{"message":"fine \u00e9 \ud83c\udf89"}`)}
	for _, data := range []string{
		"{\"message\":\"\xff\"}",
		"{\"message\":\"caf\xc3\"}",
		`{"message":"a\u0000b"}`,
		`{"a\u0000":1}`,
		`{"message":"\ud83c"}`,
	} {
		_, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{good, {Type: "progress", Data: json.RawMessage(data)}})
		if orchestrator.ErrorCode(err) != "invalid_encoding" {
			t.Errorf("AppendEvents with data %q: %v, want invalid_encoding", data, err)
		}
	}
	evs, err := c.ListEvents(ctx, res.SessionID, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "progress" {
			t.Errorf("a refused append stored %s", e.Data)
		}
	}
	if _, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{good}); err != nil {
		t.Errorf("AppendEvents of well-formed text: %v", err)
	}
}
