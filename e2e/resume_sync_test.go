//go:build linux

package e2e

import (
	"net/http"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// A resume that waits for its answer over HTTP, on the real binaries: an AI agent run by the claude-code
// executor (e2e/internal/fakeclaude standing in for claude) is resumed with POST /runs?wait=, both as
// {"type": "resume", "mode": "sync"} and with the legacy {"mode": "resume"}, which ?wait= makes a sync
// resume too. Each answers 201 only once the resumed run has ended, with its result; claude ran again with
// --resume and the new prompt.
func TestSyncResumeOverHTTP(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const adminToken, clientToken, runnerToken = "e2e-admin-token", "e2e-client-token", "e2e-runner-token"
	co := c.startCoordinator(coordOpts{adminToken: adminToken, clientToken: clientToken, runnerToken: runnerToken})
	ai := c.startClaudeRunner(co, runnerToken)
	co.admin().json("POST", "/agents", map[string]any{
		"name": "writer", "type": "agent", "description": "an AI agent that answers prompts",
	}, http.StatusCreated, nil)
	client := co.api(clientToken)

	first := client.startRun(map[string]any{"agent_name": "writer", "prompt": "Write a haiku."})
	if r := client.result(first.SessionID); r.Status != "completed" {
		t.Fatalf("the first run: %s", mustJSON(t, r))
	}
	calls := ai.calls(t, first.SessionID)
	if len(calls) != 1 {
		t.Fatalf("claude ran %d times for the first run", len(calls))
	}
	claudeSession := calls[0].ClaudeSessionID

	for i, tc := range []struct {
		name string
		body map[string]any
	}{
		{"type resume, mode sync", map[string]any{"type": "resume", "mode": "sync", "session_id": first.SessionID, "prompt": "Now a limerick."}},
		{"legacy mode resume", map[string]any{"mode": "resume", "session_id": first.SessionID, "prompt": "Now a sonnet."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res struct {
				RunID     string               `json:"run_id"`
				SessionID string               `json:"session_id"`
				Status    string               `json:"status"`
				Result    *orchestrator.Result `json:"result"`
			}
			client.with(t).json("POST", "/runs?wait=60s", tc.body, http.StatusCreated, &res)
			// The answer came when the resumed run had ended: with its result, claude's answer to a resume.
			if res.SessionID != first.SessionID || res.Status != "completed" || res.Result == nil ||
				res.Result.ResultText != "Resumed; the prompt carries no callback." {
				t.Fatalf("POST /runs?wait=60s %v: %s, want the session completed with claude's answer", tc.body, mustJSON(t, res))
			}
			var run orchestrator.Run
			client.with(t).json("GET", "/runs/"+res.RunID, nil, http.StatusOK, &run)
			if run.Type != orchestrator.RunTypeResume || run.Mode != orchestrator.ModeSync {
				t.Errorf("the resumed run: type %s mode %s, want resume sync", run.Type, run.Mode)
			}
			calls := ai.calls(t, first.SessionID)
			if len(calls) != i+2 {
				t.Fatalf("claude ran %d times, want %d", len(calls), i+2)
			}
			last := calls[len(calls)-1]
			if last.Resume != claudeSession || last.Stdin != tc.body["prompt"] || last.Env["AGENT_RUN_ID"] != res.RunID {
				t.Errorf("claude's resume: --resume %q stdin %q run %s, want %s, the new prompt, run %s",
					last.Resume, last.Stdin, last.Env["AGENT_RUN_ID"], claudeSession, res.RunID)
			}
		})
	}

	// Without ?wait= the legacy form answers at once (async_poll), as it always did.
	var res struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	client.json("POST", "/runs", map[string]any{"mode": "resume", "session_id": first.SessionID, "prompt": "One more."}, http.StatusCreated, &res)
	var run orchestrator.Run
	client.json("GET", "/runs/"+res.RunID, nil, http.StatusOK, &run)
	if run.Mode != orchestrator.ModeAsyncPoll || run.Type != orchestrator.RunTypeResume {
		t.Errorf("legacy resume without ?wait=: run type %s mode %s, want resume async_poll", run.Type, run.Mode)
	}
	if r := client.result(first.SessionID); r.Status != "completed" {
		t.Errorf("the last resume: %s", mustJSON(t, r))
	}
}
