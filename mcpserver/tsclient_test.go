package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// The TypeScript client test runs testdata/tsclient/client.mjs with the MCP TypeScript SDK pinned in
// testdata/tsclient/package-lock.json. Its node_modules are installed with `npm ci` into a cache directory
// outside the repository, one per lock file: $ORCHESTRATOR_TEST_NODE_CACHE, or the user's cache directory.
// Without node and npm the test skips, except when CI is set: there it fails.

const tsclientDir = "testdata/tsclient"

// tsclientModules returns a directory holding the test's node_modules, installing them on first use.
func tsclientModules(t *testing.T) string {
	t.Helper()
	var missing []string
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s not found: the MCP TypeScript SDK client test needs Node.js 18+ and npm", strings.Join(missing, " and "))
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this fails rather than skips)")
		}
		t.Skip(msg)
	}
	lock, err := os.ReadFile(filepath.Join(tsclientDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(tsclientDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("ORCHESTRATOR_TEST_NODE_CACHE")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory for the node modules (set ORCHESTRATOR_TEST_NODE_CACHE): %v", err)
		}
		root = filepath.Join(cache, "agent-orchestrator-tests")
	}
	sum := sha256.Sum256(append(pkg, lock...))
	dir := filepath.Join(root, "tsclient-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return dir
	}
	// Install next to the final place and move it there, so that concurrent test runs never see half an
	// installation.
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, "install-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, data := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci for the TypeScript client test: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		if _, statErr := os.Stat(dir); statErr != nil { // not another run's installation arriving first
			t.Fatalf("move the node modules into place: %v", err)
		}
	}
	return dir
}

// tsclientResult is what client.mjs prints.
type tsclientResult struct {
	Failures        []string `json:"failures"`
	ProtocolVersion string   `json:"protocol_version"`
	MCPSessionID    string   `json:"mcp_session_id"`
	Capabilities    struct {
		Tools *struct {
			ListChanged *bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	Tools map[string]struct {
		OutputSchemaType *string `json:"output_schema_type"`
	} `json:"tools"`
	SDKValidatesOutput bool `json:"sdk_validates_output"`
	Calls              map[string]struct {
		IsError    bool            `json:"is_error"`
		Structured json.RawMessage `json:"structured"`
		Texts      []string        `json:"texts"`
	} `json:"calls"`
	FirstProgress     string `json:"first_progress"`
	StatusAfterCancel string `json:"status_after_cancel"`
	CancelError       string `json:"cancel_error"`
	CancelReason      string `json:"cancel_reason"`
}

// TestTypeScriptClient: the official MCP TypeScript SDK, as a client over streamable HTTP, sees every
// tool's output schema and accepts every answer against it (its callTool validates structured content),
// gets tool errors (not exceptions) for a failed call and for bad arguments — every problem named — and
// stops the session of a sync call it cancels with an AbortController.
func TestTypeScriptClient(t *testing.T) {
	modules := tsclientModules(t)
	f := newFixture(t)
	endpoint := f.serveMCP(t, mcpserver.Config{ProgressInterval: time.Hour, SyncWait: testTimeout / 3})
	// A schedule for list_schedules to show, so that the SDK checks a schedule against the output schema.
	if _, err := f.coord.CreateSchedule(context.Background(), orchestrator.ScheduleParams{
		AgentName: "echo-agent", Parameters: []byte(`{"prompt":"p"}`), Cron: "@daily", Timezone: "Asia/Tokyo", Paused: new(true),
	}); err != nil {
		t.Fatal(err)
	}

	// An approval gate for get_input_request and answer_input_request, and a running session whose agent
	// asks a question that expires, for ask_human.
	gated, err := f.coord.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "add", Parameters: []byte(`{"a":1,"b":2}`), RequireApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	gates, err := f.coord.ListInputRequests(context.Background(), orchestrator.InputRequestFilter{SessionID: gated.SessionID})
	if err != nil || len(gates) != 1 {
		t.Fatalf("gate: %v, %v", gates, err)
	}
	askKey := t.Name() + "/ask"
	if _, err := f.coord.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "slow", Parameters: []byte(`{"key":"` + askKey + `"}`)}); err != nil {
		t.Fatal(err)
	}
	askSession := f.gates.waitStarted(t, askKey)
	testkit.WaitFor(t, testTimeout, "the asking session running", func() bool { return getSession(t, f, askSession).Status == orchestrator.SessionRunning })
	defer f.gates.get(askKey).open()

	// The script runs from a directory of its own whose node_modules is the cached installation.
	work := t.TempDir()
	script, err := os.ReadFile(filepath.Join(tsclientDir, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	key := t.Name()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "MCP_URL="+endpoint, "SLOW_KEY="+key, "REQUEST_ID="+gates[0].ID, "ASK_SESSION="+askSession)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r tsclientResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("client.mjs printed %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	for _, msg := range r.Failures {
		t.Error("TypeScript client: " + msg)
	}
	t.Logf("protocol %s", r.ProtocolVersion)

	// Capabilities, and the Mcp-Session-Id that routes its cancellations.
	if r.Capabilities.Tools == nil || (r.Capabilities.Tools.ListChanged != nil && *r.Capabilities.Tools.ListChanged) {
		t.Errorf("tools capability %+v, want tools without listChanged", r.Capabilities.Tools)
	}
	if r.MCPSessionID == "" {
		t.Error("the TypeScript client kept no Mcp-Session-Id")
	}

	// Every tool has an output schema, and every tool was called and answered.
	var names []string
	for name, tl := range r.Tools {
		names = append(names, name)
		if tl.OutputSchemaType == nil || *tl.OutputSchemaType != "object" {
			t.Errorf("%s: output schema type %v, want object", name, tl.OutputSchemaType)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, allTools) {
		t.Errorf("tools %v, want %v", names, allTools)
	}
	if !r.SDKValidatesOutput {
		t.Error("this TypeScript SDK does not validate structured content against the output schema: the test proves nothing")
	}
	for _, name := range allTools {
		c, ok := r.Calls[name]
		if !ok || c.IsError || len(c.Structured) == 0 || string(c.Structured) == "null" {
			t.Errorf("%s: %+v, want a successful answer with structured content", name, c)
		}
	}

	// A tool error is an answer, without structured content.
	if c := r.Calls["unknown_agent"]; !c.IsError || string(c.Structured) != "null" || len(c.Texts) == 0 ||
		!strings.Contains(c.Texts[0], `"error":"agent_not_found"`) {
		t.Errorf("unknown agent: %+v", c)
	}
	// Bad arguments: two wrong values and an unknown argument, all named.
	c := r.Calls["bad_arguments"]
	all := strings.Join(c.Texts, "\n")
	for _, want := range []string{
		"unknown argument 'agnt'; did you mean 'agent_name'?",
		"argument 'mode': 'fast' is not one of",
		"argument 'parameters': 'x' is not of type 'object'",
	} {
		if !c.IsError || !strings.Contains(all, want) {
			t.Errorf("bad arguments: the answer does not say %q:\n%s", want, all)
		}
	}
	var body struct {
		ValidationErrors []orchestrator.FieldError `json:"validation_errors"`
	}
	if len(c.Texts) > 0 {
		_ = json.Unmarshal([]byte(c.Texts[0]), &body)
	}
	if len(body.ValidationErrors) != 3 {
		t.Errorf("bad arguments: %d validation errors, want 3: %s", len(body.ValidationErrors), all)
	}

	// The cancelled sync call: its first progress named the session, and the session was stopped.
	id, _, found := strings.Cut(strings.TrimPrefix(r.FirstProgress, "session "), " ")
	if !found || !strings.HasPrefix(r.FirstProgress, "session ses_") || r.CancelError == "" {
		t.Fatalf("cancelled call: first progress %q, error %q", r.FirstProgress, r.CancelError)
	}
	if r.StatusAfterCancel != string(orchestrator.SessionStopped) {
		t.Errorf("the client saw the cancelled session %s, want stopped", r.StatusAfterCancel)
	}
	data := checkCancelledStop(t, f, id, "start_agent_session")
	if data["reason"] != r.CancelReason {
		t.Errorf("cancellation reason %q, want %q", data["reason"], r.CancelReason)
	}
	if s := getSession(t, f, id); s.AgentName != "slow" {
		t.Errorf("the stopped session is %s's", s.AgentName)
	}
}
