//go:build linux

package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// The tests run the test binary itself as a scripted stand-in for the claude CLI (go-plugin's
// TestHelperProcess pattern): it reads the prompt on stdin, records its argv, stdin, working directory
// and MCP configuration to $FAKE_CLAUDE_DIR/calls.jsonl, and prints stream-json lines in Claude Code's
// format (system init, assistant messages with text and tool_use blocks, user messages with tool_result
// blocks, the final result) as $FAKE_CLAUDE_SCENARIO says.

const (
	helperEnv   = "GO_WANT_HELPER_PROCESS"
	scenarioEnv = "FAKE_CLAUDE_SCENARIO"
	dirEnv      = "FAKE_CLAUDE_DIR"
	// mcpStatusEnv holds the statuses the stand-in reports for its MCP servers: {"name": "status"}.
	mcpStatusEnv = "FAKE_CLAUDE_MCP_STATUS"
	// replayEnv lists the files of captured real CLI output (testdata/*.jsonl, comma-separated absolute
	// paths) the replay scenario prints: the n-th call of the run's directory prints the n-th file.
	replayEnv = "FAKE_CLAUDE_REPLAY"
	// helpEnv, when set, is the stand-in's --help text (default: one that lists --max-budget-usd).
	helpEnv = "FAKE_CLAUDE_HELP"
)

// defaultHelp is the part of Claude Code's --help the executor reads.
const defaultHelp = `Usage: claude [options] [command] [prompt]
  --max-budget-usd <amount>             Maximum dollar amount to spend on API
                                        calls (only works with --print)
  --mcp-config <configs...>             Load MCP servers from JSON files or
                                        strings (space-separated)
`

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("stand-in for the claude CLI")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(fakeClaude(args))
}

// call is what the stand-in records of one invocation.
type call struct {
	Args      []string          `json:"args"`
	Stdin     string            `json:"stdin"`
	WD        string            `json:"wd"`
	Env       map[string]string `json:"env"`
	MCPConfig json.RawMessage   `json:"mcp_config,omitempty"`
	MCPMode   string            `json:"mcp_mode,omitempty"`
}

var inputsBlock = regexp.MustCompile(`(?s)<inputs>\n(.*)\n</inputs>`)

func fakeClaude(args []string) int {
	if slices.Contains(args, "--help") { // the executor's probe of the CLI's flags; not a run
		help := defaultHelp
		if h, ok := os.LookupEnv(helpEnv); ok {
			help = h
		}
		fmt.Print(help)
		if f, err := os.OpenFile(filepath.Join(os.Getenv(dirEnv), "help-calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			_, _ = f.Write([]byte("x"))
			_ = f.Close()
		}
		return 0
	}
	var resume, mcpPath string
	for i := 0; i < len(args)-1; i++ {
		switch args[i] {
		case "--resume":
			resume = args[i+1]
		case "--mcp-config":
			mcpPath = args[i+1]
		}
	}
	stdin, _ := io.ReadAll(os.Stdin)
	prompt := string(stdin)
	dir := os.Getenv(dirEnv)
	wd, _ := os.Getwd()
	c := call{Args: args, Stdin: prompt, WD: wd, Env: map[string]string{}}
	for _, k := range []string{orchestrator.EnvSessionID, orchestrator.EnvRunID, orchestrator.EnvAPIURL, orchestrator.EnvAPIToken, "MCP_CONNECTION_NONBLOCKING"} {
		c.Env[k] = os.Getenv(k)
	}
	if mcpPath != "" {
		c.MCPConfig, _ = os.ReadFile(mcpPath)
		if fi, err := os.Stat(mcpPath); err == nil {
			c.MCPMode = fi.Mode().Perm().String()
		}
	}
	if b, err := json.Marshal(c); err == nil {
		f, err := os.OpenFile(filepath.Join(dir, "calls.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.Write(append(b, '\n'))
			_ = f.Close()
		}
	}
	if os.Getenv(scenarioEnv) == "replay" {
		return replay(dir)
	}

	sid := resume
	if sid == "" {
		sid = fmt.Sprintf("fake-%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	out := json.NewEncoder(os.Stdout)
	print := func(v map[string]any) {
		v["session_id"] = sid
		_ = out.Encode(v)
	}
	// As the real CLI: one line per content block, each repeating the message's id and its usage as the
	// stream began (output_tokens 1); the result line has the final figures, plus a request of another
	// model that printed no line (the session title Claude Code asks for).
	messages := 0
	assistant := func(blocks ...map[string]any) {
		messages++
		id := fmt.Sprintf("msg_%d_%d", os.Getpid(), messages)
		for _, b := range blocks {
			print(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "uuid": "u",
				"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
					"content": []any{b}, "stop_reason": nil, "usage": map[string]any{"input_tokens": 9, "output_tokens": 1,
						"cache_read_input_tokens": 36391, "cache_creation_input_tokens": 12871}}})
		}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	denials := []any{}
	result := func(answer string) {
		_ = os.WriteFile(filepath.Join(dir, sid+".answer"), []byte(answer), 0o600)
		n := int64(messages)
		print(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 1234,
			"duration_api_ms": 1000, "num_turns": 1, "result": answer, "total_cost_usd": math.Round((0.0113*float64(n)+0.001)*1e6) / 1e6,
			"usage": map[string]any{"input_tokens": 9 * n, "output_tokens": 500 * n, "cache_read_input_tokens": 36391 * n,
				"cache_creation_input_tokens": 12871 * n, "server_tool_use": map[string]any{"web_search_requests": 0}, "service_tier": "standard"},
			"modelUsage": map[string]any{
				// Claude Code names a model with its context window ("[1m]") here, not on the assistant lines.
				"claude-sonnet-4-5[1m]": map[string]any{"inputTokens": 9 * n, "outputTokens": 500 * n, "cacheReadInputTokens": 36391 * n,
					"cacheCreationInputTokens": 12871 * n, "webSearchRequests": 0, "costUSD": math.Round(0.0113*float64(n)*1e6) / 1e6, "contextWindow": 1000000},
				"claude-haiku-4-5": map[string]any{"inputTokens": 3, "outputTokens": 10, "cacheReadInputTokens": 0,
					"cacheCreationInputTokens": 0, "webSearchRequests": 0, "costUSD": 0.001, "contextWindow": 200000}},
			"permission_denials": denials, "uuid": "u"})
	}
	feedback := strings.HasPrefix(prompt, "Your previous answer does not match")
	echo := func() string {
		if m := inputsBlock.FindStringSubmatch(prompt); m != nil {
			var v any
			if json.Unmarshal([]byte(m[1]), &v) == nil {
				b, _ := json.Marshal(v)
				return string(b)
			}
		}
		if last, err := os.ReadFile(filepath.Join(dir, sid+".answer")); err == nil && feedback {
			return string(last) // no better answer: fails the schema again
		}
		return "echo: " + prompt
	}

	scenario := os.Getenv(scenarioEnv)
	if scenario == "block" { // before the first line: the test cancels the run when it sees it
		_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	}
	// The configured MCP servers, connected unless $FAKE_CLAUDE_MCP_STATUS ({"name": "status"}) says
	// otherwise; status "drop" leaves a server out, as Claude Code does with an entry it cannot use, and
	// "failed: why" gives a reason.
	servers := []any{}
	if len(c.MCPConfig) > 0 {
		var cfg struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		_ = json.Unmarshal(c.MCPConfig, &cfg)
		statuses := map[string]string{}
		_ = json.Unmarshal([]byte(os.Getenv(mcpStatusEnv)), &statuses)
		names := make([]string, 0, len(cfg.MCPServers))
		for name := range cfg.MCPServers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			st := statuses[name]
			switch st {
			case "drop":
				continue
			case "":
				st = "connected"
			}
			entry := map[string]any{"name": name, "status": st}
			if st, reason, ok := strings.Cut(st, ": "); ok { // "failed: why": a status with a reason
				entry["status"], entry["error"] = st, reason
			}
			servers = append(servers, entry)
		}
	}
	print(map[string]any{"type": "system", "subtype": "init", "cwd": wd, "tools": []string{"Bash", "Read"},
		"mcp_servers": servers, "model": "fake", "permissionMode": "default", "apiKeySource": "none", "uuid": "u"})
	switch scenario {
	case "echo", "":
		answer := echo()
		assistant(text(answer))
		result(answer)
	case "stream":
		assistant(text("working on it"), map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}})
		print(map[string]any{"type": "user", "parent_tool_use_id": nil, "uuid": "u", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.go\nb.go"}}}})
		fmt.Println("not a stream-json line")
		answer := echo()
		assistant(text(answer))
		result(answer)
	case "deny": // a tool use refused, and the answer given anyway
		assistant(text("writing"), map[string]any{"type": "tool_use", "id": "toolu_9", "name": "Write", "input": map[string]any{"file_path": "/etc/x", "content": "y"}})
		print(map[string]any{"type": "user", "parent_tool_use_id": nil, "uuid": "u", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_9", "is_error": true,
				"content": "Claude requested permissions to write to /etc/x, but you haven't granted it yet."}}}})
		denials = append(denials, map[string]any{"tool_name": "Write", "tool_use_id": "toolu_9", "tool_input": map[string]any{"file_path": "/etc/x", "content": "y"}})
		answer := echo()
		assistant(text(answer))
		result(answer)
	case "not_logged_in": // what a CLI without credentials prints
		assistant(text("Invalid API key · Please run /login"))
		print(map[string]any{"type": "result", "subtype": "success", "is_error": true, "duration_ms": 80, "duration_api_ms": 0,
			"num_turns": 1, "result": "Invalid API key · Please run /login", "total_cost_usd": 0, "usage": map[string]any{
				"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
			"modelUsage": map[string]any{}, "permission_denials": []any{}, "uuid": "u"})
		return 1
	case "fail":
		fmt.Fprintln(os.Stderr, "claude: API error")
		print(map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": executortest.FailMessage,
			"duration_ms": 10, "num_turns": 1, "total_cost_usd": 0})
		return 1
	case "max_turns":
		assistant(text("still going"))
		print(map[string]any{"type": "result", "subtype": "error_max_turns", "is_error": false, "errors": []any{},
			"duration_ms": 10, "num_turns": 2, "total_cost_usd": 0})
	case "crash":
		fmt.Fprintln(os.Stderr, "boom")
		return 2
	case "block":
		proctest.SleepForever()
	case "fix": // a wrong answer, corrected (in a code fence) once told what is wrong
		answer := `{"answer": 42}`
		if feedback && resume != "" {
			answer = "```json\n{\"answer\": \"42\"}\n```"
		}
		assistant(text(answer))
		result(answer)
	case "never": // always the same wrong answer
		assistant(text(`{"answer": 42}`))
		result(`{"answer": 42}`)
	default:
		fmt.Fprintln(os.Stderr, "fake claude: unknown scenario")
		return 64
	}
	return 0
}

// replay prints the captured real CLI output for this call: the n-th call in dir prints the n-th file of
// $FAKE_CLAUDE_REPLAY (the last one again after that), and exits as the CLI did (1 after an error result).
func replay(dir string) int {
	files := strings.Split(os.Getenv(replayEnv), ",")
	calls, _ := os.ReadFile(filepath.Join(dir, "calls.jsonl"))
	n := min(bytes.Count(calls, []byte("\n")), len(files)) - 1
	data, err := os.ReadFile(files[max(n, 0)])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake claude:", err)
		return 64
	}
	_, _ = os.Stdout.Write(data)
	code := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var l struct {
			Type    string `json:"type"`
			IsError bool   `json:"is_error"`
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "result" && l.IsError {
			code = 1
		}
	}
	return code
}

// fake is the test side of the stand-in: an executor that runs it and a directory for its records.
type fake struct {
	dir string
	ex  *Executor
}

func newFake(t testing.TB, cfg Config) *fake {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClaudePath = self
	cfg.ExtraArgs = []string{"-test.run=^TestHelperProcess$", "--"}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return &fake{dir: t.TempDir(), ex: New(cfg)}
}

// invocation returns a start invocation that makes the stand-in play scenario.
func (f *fake) invocation(scenario, params string) *orchestrator.Invocation {
	env := proctest.HelperEnvironment(helperEnv)
	env[scenarioEnv] = scenario
	env[dirEnv] = f.dir
	return &orchestrator.Invocation{
		Mode:       orchestrator.RunTypeStart,
		SessionID:  ids.New(ids.Session),
		RunID:      ids.New(ids.Run),
		AgentName:  "assistant",
		Blueprint:  &orchestrator.Blueprint{Name: "assistant", Type: orchestrator.AgentTypeAgent},
		Parameters: json.RawMessage(params),
		Env:        env,
	}
}

// calls returns what the stand-in recorded, in order.
func (f *fake) calls(t testing.TB) []call {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "calls.jsonl"))
	if err != nil {
		t.Fatalf("no calls recorded: %v", err)
	}
	var out []call
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("calls.jsonl: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// replay returns a start invocation that makes the stand-in print captured real CLI output: its n-th call
// prints the n-th of files (names in testdata/).
func (f *fake) replay(t testing.TB, files ...string) *orchestrator.Invocation {
	t.Helper()
	paths := make([]string, len(files))
	for i, name := range files {
		p, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
		paths[i] = p
	}
	inv := f.invocation("replay", `{"prompt":"SCENARIO"}`)
	inv.Env[replayEnv] = strings.Join(paths, ",")
	return inv
}

// helpCalls returns how many times the stand-in was asked for its --help.
func (f *fake) helpCalls() int {
	b, _ := os.ReadFile(filepath.Join(f.dir, "help-calls"))
	return len(b)
}

// pid returns the process id a blocking stand-in wrote, 0 when none.
func (f *fake) pid() int {
	var pid int
	if b, err := os.ReadFile(filepath.Join(f.dir, "pid")); err == nil {
		_, _ = fmt.Sscan(string(b), &pid)
	}
	return pid
}
