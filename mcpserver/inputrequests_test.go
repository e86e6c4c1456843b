package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// TestAskHuman: an agent's ask_human waits, with progress notifications, until a person answers through
// answer_input_request, and returns the answer; the agent's own session cannot answer.
func TestAskHuman(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	endpoint := f.serveMCP(t, mcpserver.Config{ProgressInterval: 50 * time.Millisecond})
	key := t.Name()
	person := connectHTTP(t, endpoint, nil, nil)
	ok[mcpserver.RunOutput](t, call(t, person, "start_agent_session", map[string]any{
		"agent_name": "slow", "mode": "async_poll", "parameters": map[string]any{"key": key},
	}))
	sessionID := f.gates.waitStarted(t, key)
	// Only a running session asks: the task may run before its runner's started report lands.
	testkit.WaitFor(t, testTimeout, "the session running", func() bool { return getSession(t, f, sessionID).Status == orchestrator.SessionRunning })

	progress := make(progressLog, 64)
	agent := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderSessionID: sessionID}, progress.options())
	p := &mcp.CallToolParams{Name: "ask_human", Arguments: map[string]any{
		"prompt": "Deploy to which region?",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"enum": []string{"eu", "us"}}}, "required": []string{"region"}},
	}}
	p.SetProgressToken("tok")
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := agent.CallTool(context.Background(), p)
		if err != nil {
			t.Errorf("ask_human: %v", err)
		}
		answered <- res
	}()
	if n := progress.next(t); !strings.Contains(n.Message, "waiting for a person") {
		t.Fatalf("progress while waiting: %q", n.Message)
	}
	inbox := ok[mcpserver.InputRequestListOutput](t, call(t, person, "list_input_requests", map[string]any{}))
	if len(inbox.InputRequests) != 1 || inbox.InputRequests[0].SessionID != sessionID || inbox.InputRequests[0].Kind != orchestrator.InputQuestion {
		t.Fatalf("inbox: %+v", inbox)
	}
	id := inbox.InputRequests[0].ID
	if s := getSession(t, f, sessionID); s.Status != orchestrator.SessionWaiting {
		t.Fatalf("asking session: %s, want waiting", s.Status)
	}

	// The agent cannot answer its own question; a wrong answer is refused with its errors.
	if res := call(t, agent, "answer_input_request", map[string]any{"request_id": id, "answer": map[string]any{"region": "eu"}}); !res.IsError {
		t.Fatal("an agent's session answered a question")
	}
	if res := call(t, person, "answer_input_request", map[string]any{"request_id": id, "answer": map[string]any{"region": "mars"}}); !res.IsError ||
		!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "answer_validation_failed") {
		t.Fatalf("answer outside the schema: %+v", res)
	}
	got := ok[*orchestrator.InputRequest](t, call(t, person, "answer_input_request", map[string]any{"request_id": id, "answer": map[string]any{"region": "eu"}}))
	if got.Status != orchestrator.InputAnswered || got.AnsweredBy != "mcp" {
		t.Fatalf("answer: %+v", got)
	}
	select {
	case res := <-answered:
		var r orchestrator.InputRequest
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil || res.IsError || r.Status != orchestrator.InputAnswered || string(r.Answer) != `{"region":"eu"}` {
			t.Fatalf("ask_human returned %s", b)
		}
	case <-time.After(testTimeout):
		t.Fatal("ask_human did not return with the answer")
	}
	if s := getSession(t, f, sessionID); s.Status != orchestrator.SessionRunning {
		t.Fatalf("session after the answer: %s, want running", s.Status)
	}
	f.gates.get(key).open()

	// Without a calling session there is nobody to ask for.
	if res := call(t, person, "ask_human", map[string]any{"prompt": "?"}); !res.IsError {
		t.Fatal("ask_human without a session succeeded")
	}
}
