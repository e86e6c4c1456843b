// Command fakeclaude stands in for the Claude Code CLI in the end-to-end tests: the runner's claude-code
// executor runs it (examples/runner -executor claude-code -claude <fakeclaude>) exactly as it would run
// claude, and it behaves the way a headless Claude Code session that uses the orchestrator's MCP tools
// does — deterministically, without a model.
//
// It takes the CLI's command line (-p, --output-format stream-json, --verbose, --resume <id>,
// --mcp-config <file>, …; flags it does not know are ignored), reads the prompt on stdin, and prints
// stream-json lines in Claude Code's format on stdout: a system init line with its session id and the
// status of each server of --mcp-config, assistant messages (text and tool_use blocks), user messages
// with tool_result blocks, and one final result line with its usage (usage, modelUsage, total_cost_usd)
// and permission_denials. As the real CLI does, a message with several content blocks is printed once per
// block, each line repeating the message's id and usage. Every message uses 10 input, 20 output, 300
// cache-read and 40 cache-write tokens of the model "fake" and costs $0.0012; the result line's figures
// are the sum of the turn's messages, so the executor emits exactly one usage event per message.
//
// A new session (no --resume) gets a fresh UUID as its session id and follows the <inputs> block of its
// prompt (the executor renders the run's parameters other than the prompt there):
//
//	child_agent       the agent to start through the MCP server named "orchestrator" in --mcp-config
//	                  (streamable HTTP, with the config's headers on every request): list_agent_blueprints,
//	                  then start_agent_session {agent_name, parameters: child_parameters, mode: async_callback}
//	child_parameters  the child's parameters
//	wait_child        wait for the child to end (get_agent_session_result, wait_seconds) before answering
//	fail              end with an error result (subtype error_during_execution) and exit status 1
//	mcp_status        {"server": "status"}: the status the init line reports for a server of --mcp-config
//	                  (default connected; "drop" leaves it out, as Claude Code does with an entry it
//	                  cannot use)
//	deny_tools        tool names the result line reports in permission_denials
//	post_event        before its first line, post a progress event with this message to the run's session
//	                  through the gateway ($AGENT_ORCHESTRATOR_API_URL, $AGENT_ORCHESTRATOR_TOKEN), as a
//	                  tool or hook of a real session may do
//	api_error         the turn fails on the model API, with the lines Claude Code 2.1.x prints (see
//	                  apierror.go): 529, 429, 500, "connection" (no API answering) or "usage_limit" (a
//	                  subscription's limit, which resets at usage_limit_reset, RFC 3339, default an hour
//	                  ahead); a resumed session (--resume) then answers normally
//
// A resumed session (--resume <id>) keeps <id> as its session id. When its prompt carries the ```json
// block of an orchestrator callback, its answer is the JSON object {"received": <that block>}, so the
// parent's result shows what the model read; otherwise it answers with a sentence.
//
// When FAKECLAUDE_LOG names a file, every invocation appends one JSON line to it as it exits: argv, the
// prompt, the session id it used, the MCP configuration file's content, the orchestrator variables of its
// environment, every MCP tool call with its answer, and its exit status.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LogEnv names the file the invocations are recorded in.
const LogEnv = "FAKECLAUDE_LOG"

// Invocation is what one run of fakeclaude records.
type Invocation struct {
	Pid             int               `json:"pid"`
	Args            []string          `json:"args"`
	Stdin           string            `json:"stdin"`
	Resume          string            `json:"resume,omitempty"`
	ClaudeSessionID string            `json:"claude_session_id"`
	MCPConfig       json.RawMessage   `json:"mcp_config,omitempty"`
	Env             map[string]string `json:"env"`
	ToolCalls       []ToolCall        `json:"tool_calls,omitempty"`
	Answer          string            `json:"answer,omitempty"`
	Error           string            `json:"error,omitempty"`
	Exit            int               `json:"exit"`
}

// ToolCall is one MCP tool call and its answer.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments any             `json:"arguments"`
	IsError   bool            `json:"is_error"`
	Result    json.RawMessage `json:"result,omitempty"` // the structured content
	Text      string          `json:"text,omitempty"`   // the text content
}

// inputs is what a new session reads from its prompt's <inputs> block.
type inputs struct {
	ChildAgent      string            `json:"child_agent"`
	ChildParameters json.RawMessage   `json:"child_parameters"`
	WaitChild       bool              `json:"wait_child"`
	Fail            bool              `json:"fail"`
	PostEvent       string            `json:"post_event"`
	MCPStatus       map[string]string `json:"mcp_status"`
	DenyTools       []string          `json:"deny_tools"`
	APIError        json.RawMessage   `json:"api_error"`
	UsageLimitReset string            `json:"usage_limit_reset"`
}

var (
	inputsBlock   = regexp.MustCompile(`(?s)<inputs>\n(.*)\n</inputs>`)
	callbackBlock = regexp.MustCompile("(?s)```json\n(.*?)\n```")
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" { // the runner's start-up check; not a run
		fmt.Println("2.0.0 (Claude Code, fake)")
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--help" { // the executor's check of the optional flags
		fmt.Print(helpText)
		return
	}
	inv := &Invocation{Pid: os.Getpid(), Args: os.Args[1:], Env: map[string]string{}}
	for _, k := range []string{"AGENT_SESSION_ID", "AGENT_RUN_ID", "AGENT_ORCHESTRATOR_API_URL"} {
		inv.Env[k] = os.Getenv(k)
	}
	inv.Exit = run(inv)
	record(inv)
	os.Exit(inv.Exit)
}

// stream prints stream-json lines, each with the session id.
type stream struct {
	sid      string
	enc      *json.Encoder
	denials  []any
	messages int // the turn's API messages
}

func (s *stream) line(v map[string]any) {
	v["session_id"] = s.sid
	_ = s.enc.Encode(v)
}

// messageUsage is the usage of every API message.
var messageUsage = map[string]any{"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}

// assistant prints one API message, a line per content block.
func (s *stream) assistant(blocks ...map[string]any) {
	s.messages++
	id := "msg_" + uuid()[:8]
	for _, b := range blocks {
		s.line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "uuid": uuid(),
			"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "fake",
				"content": []any{b}, "stop_reason": nil, "usage": messageUsage}})
	}
}

func (s *stream) toolResult(id string, c ToolCall) {
	content := c.Text
	if content == "" {
		content = string(c.Result)
	}
	s.line(map[string]any{"type": "user", "parent_tool_use_id": nil, "uuid": uuid(), "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": c.IsError}}}})
}

func (s *stream) result(answer string, turns int) {
	denials := s.denials
	if denials == nil {
		denials = []any{}
	}
	n := int64(s.messages)
	cost := float64(12*n) / 10000 // $0.0012 a message, without float sums
	s.line(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 120,
		"duration_api_ms": 100, "num_turns": turns, "result": answer, "total_cost_usd": cost,
		"usage": map[string]any{"input_tokens": 10 * n, "output_tokens": 20 * n, "cache_read_input_tokens": 300 * n,
			"cache_creation_input_tokens": 40 * n, "server_tool_use": map[string]any{"web_search_requests": 0}, "service_tier": "standard"},
		"modelUsage": map[string]any{"fake": map[string]any{"inputTokens": 10 * n, "outputTokens": 20 * n, "cacheReadInputTokens": 300 * n,
			"cacheCreationInputTokens": 40 * n, "webSearchRequests": 0, "costUSD": cost, "contextWindow": 200000}},
		"permission_denials": denials, "uuid": uuid()})
}

func (s *stream) failure(msg string, turns int) {
	s.line(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "duration_ms": 120,
		"num_turns": turns, "errors": []string{msg}, "total_cost_usd": 0.0012, "uuid": uuid()})
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func run(inv *Invocation) int {
	var mcpPath string
	args := inv.Args
	for i := 0; i < len(args)-1; i++ {
		switch args[i] {
		case "--resume":
			inv.Resume = args[i+1]
		case "--mcp-config":
			mcpPath = args[i+1]
		}
	}
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail(inv, nil, "read stdin: %v", err)
	}
	inv.Stdin = string(stdin)
	inv.ClaudeSessionID = inv.Resume
	if inv.ClaudeSessionID == "" {
		inv.ClaudeSessionID = uuid()
	}
	out := &stream{sid: inv.ClaudeSessionID, enc: json.NewEncoder(os.Stdout)}
	if mcpPath != "" {
		if inv.MCPConfig, err = os.ReadFile(mcpPath); err != nil {
			return fail(inv, out, "read --mcp-config: %v", err)
		}
	}
	var in inputs
	if inv.Resume == "" {
		if m := inputsBlock.FindStringSubmatch(inv.Stdin); m != nil {
			if err := json.Unmarshal([]byte(m[1]), &in); err != nil {
				return fail(inv, out, "the prompt's <inputs> block: %v", err)
			}
		}
	}
	if in.PostEvent != "" {
		if err := postEvent(in.PostEvent); err != nil {
			return fail(inv, out, "post_event: %v", err)
		}
	}
	wd, _ := os.Getwd()
	servers := []any{}
	if len(inv.MCPConfig) > 0 {
		var cfg struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		_ = json.Unmarshal(inv.MCPConfig, &cfg)
		names := make([]string, 0, len(cfg.MCPServers))
		for name := range cfg.MCPServers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			st := in.MCPStatus[name]
			switch st {
			case "drop":
				continue
			case "":
				st = "connected"
			}
			servers = append(servers, map[string]any{"name": name, "status": st})
		}
	}
	for _, tool := range in.DenyTools {
		out.denials = append(out.denials, map[string]any{"tool_name": tool, "tool_use_id": "toolu_" + uuid()[:12], "tool_input": map[string]any{"command": "rm -rf /"}})
	}
	out.line(map[string]any{"type": "system", "subtype": "init", "cwd": wd, "tools": []string{"Bash", "Read", "mcp__orchestrator__start_agent_session"},
		"mcp_servers": servers, "model": "fake", "permissionMode": "default", "apiKeySource": "none", "uuid": uuid()})

	if inv.Resume != "" {
		return resumed(inv, out)
	}
	if len(in.APIError) > 0 {
		return apiError(inv, out, in)
	}
	if in.ChildAgent == "" {
		inv.Answer = "Nothing to do: the prompt names no child_agent."
		out.assistant(text(inv.Answer))
		out.result(inv.Answer, 1)
		return 0
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := connect(ctx, inv.MCPConfig)
	if err != nil {
		return fail(inv, out, "connect to the orchestrator MCP server: %v", err)
	}
	defer cs.Close()
	turns := 1
	call := func(name string, arguments map[string]any) (ToolCall, error) {
		id := "toolu_" + uuid()[:12]
		out.assistant(text("Calling "+name+"."), map[string]any{"type": "tool_use", "id": id, "name": "mcp__orchestrator__" + name, "input": arguments})
		c := ToolCall{Name: name, Arguments: arguments}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
		if err != nil {
			return c, fmt.Errorf("%s: %w", name, err)
		}
		c.IsError = res.IsError
		if res.StructuredContent != nil {
			c.Result, _ = json.Marshal(res.StructuredContent)
		}
		for _, ct := range res.Content {
			if t, ok := ct.(*mcp.TextContent); ok {
				c.Text += t.Text
			}
		}
		inv.ToolCalls = append(inv.ToolCalls, c)
		out.toolResult(id, c)
		turns++
		if c.IsError {
			return c, fmt.Errorf("%s answered with an error: %s", name, c.Text)
		}
		return c, nil
	}

	list, err := call("list_agent_blueprints", map[string]any{})
	if err != nil {
		return fail(inv, out, "%v", err)
	}
	if !strings.Contains(string(list.Result), `"name":"`+in.ChildAgent+`"`) {
		return fail(inv, out, "list_agent_blueprints does not list %s: %s", in.ChildAgent, list.Result)
	}
	params := map[string]any{}
	if len(in.ChildParameters) > 0 {
		if err := json.Unmarshal(in.ChildParameters, &params); err != nil {
			return fail(inv, out, "child_parameters: %v", err)
		}
	}
	started, err := call("start_agent_session", map[string]any{"agent_name": in.ChildAgent, "parameters": params, "mode": "async_callback"})
	if err != nil {
		return fail(inv, out, "%v", err)
	}
	var child struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
	}
	if err := json.Unmarshal(started.Result, &child); err != nil || child.SessionID == "" {
		return fail(inv, out, "start_agent_session answered without a session id: %s", started.Result)
	}
	if in.WaitChild {
		for {
			r, err := call("get_agent_session_result", map[string]any{"session_id": child.SessionID, "wait_seconds": 10})
			if err != nil {
				return fail(inv, out, "%v", err)
			}
			var st struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(r.Result, &st)
			if st.Status == "completed" || st.Status == "failed" || st.Status == "stopped" {
				break
			}
			if ctx.Err() != nil {
				return fail(inv, out, "child %s did not end: %s", child.SessionID, r.Result)
			}
		}
	}
	if in.Fail {
		return failTurns(inv, out, turns, "fake claude was told to fail after starting %s", child.SessionID)
	}
	inv.Answer = fmt.Sprintf("Started %s as %s (mode async_callback); I will be resumed with its result.", in.ChildAgent, child.SessionID)
	out.assistant(text(inv.Answer))
	out.result(inv.Answer, turns)
	return 0
}

// resumed answers a resumed session: with what it read in the callback block, when there is one.
func resumed(inv *Invocation, out *stream) int {
	inv.Answer = "Resumed; the prompt carries no callback."
	if m := callbackBlock.FindStringSubmatch(inv.Stdin); m != nil && strings.Contains(inv.Stdin, "child session") {
		var cbs []json.RawMessage
		if err := json.Unmarshal([]byte(m[1]), &cbs); err != nil {
			return fail(inv, out, "the callback block is not a JSON array: %v", err)
		}
		b, _ := json.Marshal(map[string]any{"received": cbs})
		inv.Answer = string(b)
	}
	out.assistant(text(inv.Answer))
	out.result(inv.Answer, 1)
	return 0
}

// postEvent appends a progress event to the run's session through the runner's gateway.
func postEvent(message string) error {
	body, _ := json.Marshal(map[string]any{"events": []any{map[string]any{"event_type": "progress", "message": message}}})
	url := strings.TrimSuffix(os.Getenv("AGENT_ORCHESTRATOR_API_URL"), "/") + "/sessions/" + os.Getenv("AGENT_SESSION_ID") + "/events"
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+os.Getenv("AGENT_ORCHESTRATOR_TOKEN"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return nil
}

// connect opens an MCP client session with the server named "orchestrator" in the --mcp-config document,
// sending the configured headers with every request.
func connect(ctx context.Context, config json.RawMessage) (*mcp.ClientSession, error) {
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	srv, ok := cfg.MCPServers["orchestrator"]
	if !ok || srv.URL == "" {
		return nil, errors.New("--mcp-config has no orchestrator server")
	}
	if srv.Type != "http" {
		return nil, fmt.Errorf("the orchestrator server has type %q, want http", srv.Type)
	}
	hc := &http.Client{Transport: headers{base: http.DefaultTransport, h: srv.Headers}}
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeclaude", Version: "0.0.1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
}

// headers adds fixed headers to every request.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// fail ends the turn with an error result (when the stream has begun) and exit status 1.
func fail(inv *Invocation, out *stream, format string, a ...any) int {
	return failTurns(inv, out, 1, format, a...)
}

func failTurns(inv *Invocation, out *stream, turns int, format string, a ...any) int {
	inv.Error = fmt.Sprintf(format, a...)
	fmt.Fprintln(os.Stderr, "fakeclaude:", inv.Error)
	if out != nil {
		out.failure(inv.Error, turns)
	}
	return 1
}

func record(inv *Invocation) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return
	}
	b, err := json.Marshal(inv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: record:", err)
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: record:", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: record:", err)
	}
}

// uuid returns a random (version 4) UUID, the shape of Claude Code's session ids.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
