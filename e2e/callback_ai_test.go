//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// fakeClaudeCall is one line of e2e/internal/fakeclaude's FAKECLAUDE_LOG: one run of the stand-in claude.
type fakeClaudeCall struct {
	Pid             int               `json:"pid"`
	Args            []string          `json:"args"`
	Stdin           string            `json:"stdin"`
	Resume          string            `json:"resume"`
	ClaudeSessionID string            `json:"claude_session_id"`
	MCPConfig       json.RawMessage   `json:"mcp_config"`
	Env             map[string]string `json:"env"`
	ToolCalls       []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		IsError   bool            `json:"is_error"`
		Result    json.RawMessage `json:"result"`
		Text      string          `json:"text"`
	} `json:"tool_calls"`
	Answer string `json:"answer"`
	Error  string `json:"error"`
	Exit   int    `json:"exit"`
}

// claudeRunner is examples/runner with the claude-code executor running e2e/internal/fakeclaude, which
// records its runs in log.
type claudeRunner struct {
	*proc
	id  string
	log string
}

// startClaudeRunner starts an AI runner (no blueprints folder: it announces nothing and takes AI agents'
// runs) and waits until the coordinator lists it online.
func (c *cluster) startClaudeRunner(co *coordinator, token string) *claudeRunner {
	c.t.Helper()
	dir := c.path("claude", "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	r := &claudeRunner{log: c.path("fakeclaude.jsonl")}
	args := []string{
		"-coordinator", co.url,
		"-executor", "claude-code",
		"-claude", filepath.Join(binDir, "fakeclaude"),
		"-project-dir", dir,
		"-max-concurrent", "4",
		"-stop-grace", "1s",
		"-shutdown-grace", "10s",
	}
	if token != "" {
		args = append(args, "-token", token)
	}
	// The runner's environment reaches the programs its executor runs: that is how the log path gets to
	// fakeclaude. The runner's token must come from the flag only.
	r.proc = c.start("claude-runner", "runner", args, "FAKECLAUDE_LOG="+r.log, "ORCHESTRATOR_RUNNER_TOKEN=")
	r.id = c.waitRunnerOnline(co, r.proc, dir)
	return r
}

// calls returns fakeclaude's recorded runs for one orchestrator session, in order.
func (r *claudeRunner) calls(t *testing.T, sessionID string) []fakeClaudeCall {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []fakeClaudeCall
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c fakeClaudeCall
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("%s: %q: %v", r.log, line, err)
		}
		if c.Env["AGENT_SESSION_ID"] == sessionID {
			out = append(out, c)
		}
	}
	return out
}

// flagValues returns the values that follow flag in args, one per occurrence.
func flagValues(args []string, flag string) []string {
	var v []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			v = append(v, args[i+1])
		}
	}
	return v
}

var promptJSONBlock = regexp.MustCompile("(?s)```json\n(.*?)\n```")

// Issue 5, item 6: the callback path with a real AI session's shape. An AI agent runs on examples/runner
// through the claude-code executor; its "claude" (e2e/internal/fakeclaude) reads the --mcp-config the
// executor wrote, reaches the orchestrator's MCP server through the runner's gateway with the headers it
// names, and starts a deterministic child (testagent, on a second runner) with start_agent_session in
// async_callback mode. When the child ends, the coordinator resumes the parent: the runner runs claude
// again with --resume <the session id claude printed at init> and the callback prompt on stdin — once —
// whether the callback finds the parent idle (its run completed before the child ended) or busy (the child
// ended while the parent ran, and the parent's run then failed).
func TestCallbackResumesClaudeCodeSession(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const adminToken, clientToken, runnerToken = "e2e-admin-token", "e2e-client-token", "e2e-runner-token"
	co := c.startCoordinator(coordOpts{adminToken: adminToken, clientToken: clientToken, runnerToken: runnerToken})
	ai := c.startClaudeRunner(co, runnerToken)
	tools := c.startRunner(co, runnerOpts{name: "tools", token: runnerToken, blueprints: []string{testAgent("child")}})
	co.admin().json("POST", "/agents", map[string]any{
		"name": "orchestrator", "type": "agent", "description": "an AI agent that delegates to deterministic tools",
		"system_prompt": "Delegate the work to the agents list_agent_blueprints shows.",
	}, http.StatusCreated, nil)
	admin := co.admin()

	for _, tc := range []struct {
		name       string
		parentFail bool // the parent's first run waits for the child to end, then fails
	}{
		{name: "parent completes before the child ends"},
		{name: "parent fails after the child ended", parentFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			defer func() { t.Logf("took %s", time.Since(began).Round(time.Millisecond)) }()
			a := admin.with(t)
			client := co.api(clientToken).with(t)
			release := c.path(strings.ReplaceAll(tc.name, " ", "_") + ".release")
			childParams := map[string]any{"tag": "from-claude " + tc.name}
			if !tc.parentFail {
				childParams["release"] = release // the child ends when the test says so
			}
			parent := client.startRun(map[string]any{
				"agent_name": "orchestrator",
				"parameters": map[string]any{
					"prompt":           "Start the child agent in async_callback mode and report what it returns.",
					"child_agent":      "child",
					"child_parameters": childParams,
					"wait_child":       tc.parentFail,
					"fail":             tc.parentFail,
				},
			})

			// The parent's first run: claude started the child through MCP and ended.
			var first fakeClaudeCall
			waitFor(t, runTimeout, "fakeclaude's first run for the parent", func() (bool, string) {
				calls := ai.calls(t, parent.SessionID)
				if len(calls) > 0 {
					first = calls[0]
				}
				return len(calls) > 0, mustJSON(t, calls)
			})
			if first.Resume != "" || len(flagValues(first.Args, "--resume")) != 0 {
				t.Errorf("the first run resumed %q: %q", first.Resume, first.Args)
			}
			for _, want := range [][]string{{"-p"}, {"--output-format", "stream-json"}, {"--verbose"}} {
				if !containsSeq(first.Args, want) {
					t.Errorf("claude's argv %q lacks %q", first.Args, want)
				}
			}
			if !strings.HasPrefix(first.Stdin, "Start the child agent") || !strings.Contains(first.Stdin, "<inputs>") {
				t.Errorf("the first prompt (stdin) is not the rendered parameters:\n%s", first.Stdin)
			}
			if first.Env["AGENT_RUN_ID"] != parent.RunID {
				t.Errorf("the first run's AGENT_RUN_ID %q, want %s", first.Env["AGENT_RUN_ID"], parent.RunID)
			}
			checkMCPConfig(t, first, parent.SessionID, runnerToken)
			var childID string
			for _, call := range first.ToolCalls {
				if call.Name == "start_agent_session" {
					var out struct {
						SessionID string `json:"session_id"`
					}
					_ = json.Unmarshal(call.Result, &out)
					childID = out.SessionID
				}
			}
			if childID == "" || first.Exit != 0 && !tc.parentFail {
				t.Fatalf("fakeclaude did not start the child (exit %d, error %q): %s", first.Exit, first.Error, mustJSON(t, first.ToolCalls))
			}
			if tc.parentFail && (first.Exit != 1 || !strings.Contains(first.Error, "told to fail")) {
				t.Errorf("the failing first run: exit %d error %q", first.Exit, first.Error)
			}

			// The child is the parent's, with a callback, and it is the only child.
			child := a.session(childID)
			if child.ParentSessionID != parent.SessionID || !child.Callback || child.AgentName != "child" {
				t.Errorf("child %s: parent %q callback %v agent %q, want parent %s with a callback", childID, child.ParentSessionID, child.Callback, child.AgentName, parent.SessionID)
			}
			var kids struct {
				Sessions []*orchestrator.Session `json:"sessions"`
			}
			a.json("GET", "/sessions?parent_session_id="+parent.SessionID, nil, http.StatusOK, &kids)
			if len(kids.Sessions) != 1 || kids.Sessions[0].ID != childID {
				t.Errorf("the parent's children: %s, want only %s", mustJSON(t, kids.Sessions), childID)
			}
			if !tc.parentFail {
				// The parent's run ended while the child blocks: nothing to deliver yet.
				p := a.waitStatus(parent.SessionID, runTimeout, "completed", "failed", "stopped")
				if p.Status != orchestrator.SessionCompleted || p.ExecutorSessionID != first.ClaudeSessionID {
					t.Fatalf("parent after its first run: %s (error %q), executor session %q; want completed, %s", p.Status, p.Error, p.ExecutorSessionID, first.ClaudeSessionID)
				}
				if st := a.session(childID).Status; st != orchestrator.SessionRunning && st != orchestrator.SessionPending {
					t.Fatalf("child is %s before its release", st)
				}
				touch(t, release)
			}
			childRes := a.result(childID)
			if childRes.Status != "completed" {
				t.Fatalf("child: %s", mustJSON(t, childRes))
			}
			out := decodeAgentOutput(t, childRes.Result)
			if out.SessionID != childID || !strings.Contains(string(out.Params), "from-claude") {
				t.Errorf("child's result_data %s: not the child's own run with claude's parameters", childRes.Result.ResultData)
			}

			// The resume: claude ran again, once, with --resume and the callback prompt.
			var calls []fakeClaudeCall
			waitFor(t, runTimeout, "the parent's callback resume", func() (bool, string) {
				calls = ai.calls(t, parent.SessionID)
				return len(calls) >= 2, mustJSON(t, calls)
			})
			final := a.waitStatus(parent.SessionID, runTimeout, "completed", "failed", "stopped")
			calls = ai.calls(t, parent.SessionID)
			if len(calls) != 2 {
				t.Fatalf("claude ran %d times for the parent, want its first run and one resume: %s", len(calls), mustJSON(t, calls))
			}
			resume := calls[1]
			if got := flagValues(resume.Args, "--resume"); len(got) != 1 || got[0] != first.ClaudeSessionID || resume.Resume != first.ClaudeSessionID {
				t.Errorf("the resume's --resume %q, want exactly [%s] (the session id claude printed at init); argv %q", got, first.ClaudeSessionID, resume.Args)
			}
			if resume.ClaudeSessionID != first.ClaudeSessionID {
				t.Errorf("the resumed claude session is %s, want %s", resume.ClaudeSessionID, first.ClaudeSessionID)
			}
			resumeRun := resume.Env["AGENT_RUN_ID"]
			if resumeRun == "" || resumeRun == parent.RunID {
				t.Errorf("the resume ran as run %q, want a new run (the first was %s)", resumeRun, parent.RunID)
			}
			checkMCPConfig(t, resume, parent.SessionID, runnerToken)
			checkCallbackPrompt(t, resume.Stdin, childID, childRes.Result)
			if resume.Exit != 0 {
				t.Errorf("the resumed claude exited %d: %s", resume.Exit, resume.Error)
			}

			// The parent ended completed by the resume, and its answer is what claude read in the prompt.
			if final.Status != orchestrator.SessionCompleted || final.CurrentRunID != resumeRun {
				t.Errorf("parent after the resume: %s (error %q) run %s, want completed by run %s", final.Status, final.Error, final.CurrentRunID, resumeRun)
			}
			if final.ParentSessionID != "" {
				t.Errorf("the parent has a parent: %q", final.ParentSessionID)
			}
			pres := a.result(parent.SessionID)
			var answer struct {
				Received []struct {
					CallbackType   string               `json:"callback_type"`
					ChildSessionID string               `json:"child_session_id"`
					Result         *orchestrator.Result `json:"result"`
				} `json:"received"`
			}
			if pres.Result == nil || json.Unmarshal(pres.Result.ResultData, &answer) != nil || len(answer.Received) != 1 {
				t.Fatalf("the parent's result is not claude's reading of the callback: %s", mustJSON(t, pres))
			}
			if got := answer.Received[0]; got.CallbackType != "child_completed" || got.ChildSessionID != childID || got.Result == nil ||
				!jsonEqual(got.Result.ResultData, childRes.Result.ResultData) {
				t.Errorf("claude read the callback as %s, want child_completed of %s with result_data %s", mustJSON(t, got), childID, childRes.Result.ResultData)
			}

			// The parent's runs: its start (completed or failed) and one resume.
			var runs struct {
				Runs []*orchestrator.Run `json:"runs"`
			}
			a.json("GET", "/runs?session_id="+parent.SessionID, nil, http.StatusOK, &runs)
			var got []string
			for _, r := range runs.Runs {
				got = append(got, string(r.Type)+":"+string(r.Status))
			}
			want := []string{"start:completed", "resume:completed"}
			if tc.parentFail {
				want[0] = "start:failed"
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the parent's runs: %v, want %v", got, want)
			}
			if runs.Runs[1].ID != resumeRun || runs.Runs[1].RunnerID != ai.id || runs.Runs[0].RunnerID != ai.id {
				t.Errorf("the parent's runs %s, want the resume %s and both on the claude runner %s", mustJSON(t, runs.Runs), resumeRun, ai.id)
			}
			if tc.parentFail {
				if !strings.Contains(runs.Runs[0].Error, "error_during_execution") || !strings.Contains(runs.Runs[0].Error, "told to fail") {
					t.Errorf("the failed first run's error: %q", runs.Runs[0].Error)
				}
				// The child ended while the parent's first run was still running: the callback waited for it.
				if child := a.session(childID); child.EndedAt == nil || runs.Runs[0].EndedAt == nil || child.EndedAt.After(*runs.Runs[0].EndedAt) {
					t.Errorf("the child ended at %v, after the parent's first run (%v)", child.EndedAt, runs.Runs[0].EndedAt)
				}
			}
			if cr := a.session(childID); cr.RunnerID != tools.id {
				t.Errorf("the child ran on %s, want the tools runner %s", cr.RunnerID, tools.id)
			}

			checkParentEvents(t, a.events(parent.SessionID), first.ClaudeSessionID, childID, resumeRun)
		})
	}
}

// checkMCPConfig checks the --mcp-config file claude got: the orchestrator server, over HTTP at the
// runner's gateway, with the parent's session id and a run-scoped token that is not the runner's.
func checkMCPConfig(t *testing.T, call fakeClaudeCall, sessionID, runnerToken string) {
	t.Helper()
	if got := flagValues(call.Args, "--mcp-config"); len(got) != 1 {
		t.Errorf("claude got --mcp-config %q, want one file", got)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(call.MCPConfig, &cfg); err != nil {
		t.Fatalf("--mcp-config %s: %v", call.MCPConfig, err)
	}
	srv, ok := cfg.MCPServers["orchestrator"]
	gateway := call.Env["AGENT_ORCHESTRATOR_API_URL"]
	if !ok || srv.Type != "http" || gateway == "" || srv.URL != strings.TrimSuffix(gateway, "/")+"/mcp" {
		t.Errorf("--mcp-config %s: want the orchestrator server over http at %s/mcp", call.MCPConfig, gateway)
	}
	if srv.Headers["X-Agent-Session-Id"] != sessionID {
		t.Errorf("X-Agent-Session-Id %q, want %s", srv.Headers["X-Agent-Session-Id"], sessionID)
	}
	if tok, ok := strings.CutPrefix(srv.Headers["Authorization"], "Bearer "); !ok || tok == "" || tok == runnerToken {
		t.Errorf("Authorization %q: want a bearer token of the run's own", srv.Headers["Authorization"])
	}
	if !containsSeq(call.Args, []string{"--allowedTools", "mcp__orchestrator"}) {
		t.Errorf("claude's argv %q does not allow the orchestrator's tools", call.Args)
	}
}

// checkCallbackPrompt checks the prompt a parent is resumed with: it names the child, says
// child_completed, and carries the child's result — result_data as the structured JSON it is.
func checkCallbackPrompt(t *testing.T, prompt, childID string, childResult *orchestrator.Result) {
	t.Helper()
	if !strings.Contains(prompt, childID) || !strings.Contains(prompt, "child_completed") {
		t.Errorf("the resume prompt does not name child %s as child_completed:\n%s", childID, prompt)
	}
	m := promptJSONBlock.FindStringSubmatch(prompt)
	if m == nil {
		t.Fatalf("the resume prompt has no ```json block:\n%s", prompt)
	}
	var cbs []struct {
		CallbackType   string `json:"callback_type"`
		ChildSessionID string `json:"child_session_id"`
		ChildAgentName string `json:"child_agent_name"`
		Result         struct {
			ResultType string          `json:"result_type"`
			ResultText string          `json:"result_text"`
			ResultData json.RawMessage `json:"result_data"`
			ExitCode   *int            `json:"exit_code"`
			Error      string          `json:"error"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(m[1]), &cbs); err != nil {
		t.Fatalf("the resume prompt's JSON block: %v\n%s", err, m[1])
	}
	if len(cbs) != 1 {
		t.Fatalf("the resume prompt carries %d callbacks, want 1:\n%s", len(cbs), prompt)
	}
	cb := cbs[0]
	if cb.CallbackType != "child_completed" || cb.ChildSessionID != childID || cb.ChildAgentName != "child" {
		t.Errorf("callback %s, want child_completed of %s (agent child)", m[1], childID)
	}
	if !jsonEqual(cb.Result.ResultData, childResult.ResultData) || cb.Result.ResultType != childResult.ResultType ||
		cb.Result.ResultText != childResult.ResultText || cb.Result.Error != "" {
		t.Errorf("the callback's result %s, want the child's %s", mustJSON(t, cb.Result), mustJSON(t, childResult))
	}
	if cb.Result.ExitCode == nil || *cb.Result.ExitCode != 0 {
		t.Errorf("the callback's exit_code %v, want 0", cb.Result.ExitCode)
	}
}

// checkParentEvents checks the parent's event log: Claude Code's session id, the MCP tool call that
// started the child, and one callback event for the resume run, naming the child.
func checkParentEvents(t *testing.T, events []*orchestrator.Event, claudeID, childID, resumeRun string) {
	t.Helper()
	var sessionIDs, tools []string
	var callbacks int
	for _, ev := range events {
		switch ev.Type {
		case orchestrator.EventExecutorSession:
			var d struct {
				ID string `json:"executor_session_id"`
			}
			_ = ev.DecodeData(&d)
			sessionIDs = append(sessionIDs, d.ID)
		case orchestrator.EventToolCall:
			var d struct {
				Name string `json:"name"`
			}
			_ = ev.DecodeData(&d)
			tools = append(tools, d.Name)
		case orchestrator.EventCallback:
			callbacks++
			var d struct {
				RunID     string                   `json:"run_id"`
				Callbacks []*orchestrator.Callback `json:"callbacks"`
			}
			if err := ev.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			if d.RunID != resumeRun || len(d.Callbacks) != 1 || d.Callbacks[0].ChildSessionID != childID ||
				d.Callbacks[0].Type != "child_completed" || d.Callbacks[0].Result == nil {
				t.Errorf("callback event %s, want run %s with child_completed of %s", ev.Data, resumeRun, childID)
			}
		}
	}
	if callbacks != 1 {
		t.Errorf("the parent has %d callback events, want 1", callbacks)
	}
	// The resume keeps the session id, so only the first run reports one.
	if !slices.Equal(sessionIDs, []string{claudeID}) {
		t.Errorf("executor_session events %q, want [%s]", sessionIDs, claudeID)
	}
	if !slices.Contains(tools, "mcp__orchestrator__start_agent_session") {
		t.Errorf("the parent's tool_call events %q lack mcp__orchestrator__start_agent_session", tools)
	}
}

// containsSeq reports whether seq appears in args as consecutive elements.
func containsSeq(args, seq []string) bool {
	for i := 0; i+len(seq) <= len(args); i++ {
		if slices.Equal(args[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}
