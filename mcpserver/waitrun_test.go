package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/callbackcase"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// TestSyncStartAnswersItsOwnRun: a sync start_agent_session answers with the outcome of the run it
// started, even when a callback from the session's child resumed the session the moment that run ended
// (the session's result is by then the resumed run's). With a progress token, the wait goes on beside
// the notifications.
func TestSyncStartAnswersItsOwnRun(t *testing.T) {
	for _, progress := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "with progress"}[progress], func(t *testing.T) {
			coord := newCoordinator(t)
			served := callbackcase.NewStartSignal(coord)
			played := callbackcase.Play(t, coord, served.Answered())
			var opts *mcp.ClientOptions
			if progress {
				opts = &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {}}
			}
			cs := connectInMemory(t, mcpserver.New(served, mcpserver.Config{ProgressInterval: 10 * time.Millisecond}), opts)
			p := &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{"agent_name": callbackcase.Parent, "prompt": "delegate"}}
			if progress {
				p.SetProgressToken("tok")
			}
			out := ok[mcpserver.RunOutput](t, callParams(t, cs, p))
			callbackcase.CheckAnswer(t, coord, "the sync start",
				&orchestrator.StartRunResult{RunID: out.RunID, SessionID: out.SessionID, Status: out.Status, Result: out.Result},
				callbackcase.FirstRun(t, played))
		})
	}
}
