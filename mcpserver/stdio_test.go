package mcpserver_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

var (
	stdioOnce sync.Once
	stdioBin  string
	stdioErr  error
	stdioOut  []byte
)

// buildStdio builds examples/mcp-stdio once per test binary.
func buildStdio(t *testing.T) string {
	t.Helper()
	stdioOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-stdio-*")
		if err != nil {
			stdioErr = err
			return
		}
		stdioBin = filepath.Join(dir, "mcp-stdio")
		cmd := exec.Command("go", "build", "-o", stdioBin, "github.com/agentorchestrator/orchestrator/examples/mcp-stdio")
		stdioOut, stdioErr = cmd.CombinedOutput()
	})
	if stdioErr != nil {
		t.Fatalf("go build examples/mcp-stdio: %v\n%s", stdioErr, stdioOut)
	}
	return stdioBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stdioBin != "" {
		os.RemoveAll(filepath.Dir(stdioBin))
	}
	os.Exit(code)
}

// lockedBuffer collects a child's stderr for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// connectStdio starts the stdio binary against coordinatorURL and connects an MCP client to it. The
// process ends when the session is closed (stdin closes); the test checks it exits cleanly.
func connectStdio(t *testing.T, coordinatorURL, token string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(buildStdio(t), append([]string{"-coordinator", coordinatorURL}, args...)...)
	cmd.Env = append(os.Environ(), httpapi.EnvClientToken+"="+token, "AGENT_SESSION_ID=")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		t.Fatalf("connect to mcp-stdio: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpStacks(t, cmd, stderr)
			_ = cs.Close()
			return
		}
		if err := cs.Close(); err != nil {
			t.Errorf("mcp-stdio did not exit cleanly: %v\nstderr:\n%s", err, stderr)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
			t.Errorf("mcp-stdio still running after close")
		}
	})
	return cs
}

// dumpStacks logs, for a failed test, the goroutines of the mcp-stdio child (SIGQUIT makes the Go
// runtime print them to stderr and exit) and of this process, which serves the coordinator: a call that
// hangs shows where.
func dumpStacks(t *testing.T, cmd *exec.Cmd, stderr *lockedBuffer) {
	t.Helper()
	if cmd.Process != nil && cmd.ProcessState == nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		testkit.Until(5*time.Second, func() bool { return strings.Contains(stderr.String(), "goroutine ") })
	}
	var own bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&own, 2)
	t.Logf("mcp-stdio stderr:\n%s\ntest process goroutines:\n%s", stderr, own.String())
}

// TestStdio runs every tool through the examples/mcp-stdio binary, which serves the same MCP server over
// stdio against the coordinator's HTTP API (httpapi.Client), with its flags as the calling context.
func TestStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a binary")
	}
	f := newFixture(t)
	const token = "client-token"
	api := httptestServer(t, httpapi.NewHandler(f.coord, httpapi.Config{Tokens: map[string]httpapi.Role{token: httpapi.RoleClient}}))

	parent, err := f.coord.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "echo-agent", Prompt: "orchestrate", Mode: orchestrator.ModeSync})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectStdio(t, api, token, "-session-id", parent.SessionID, "-tags", "math", "-demands", `{"hostname":"`+testHost+`"}`)

	exerciseTools(t, f, cs)

	t.Run("flags_are_the_calling_context", func(t *testing.T) {
		l := ok[mcpserver.AgentListOutput](t, call(t, cs, "list_agent_blueprints", map[string]any{}))
		if len(l.Agents) != 1 || l.Agents[0].Name != "add" || len(l.Agents[0].ParametersSchema) == 0 {
			t.Errorf("-tags math: %+v", l.Agents)
		}
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 20, "b": 22}, "mode": "async_callback",
		}))
		s := waitEnded(t, f, out.SessionID)
		if s.ParentSessionID != parent.SessionID || !s.Callback || string(s.Result.ResultData) != `{"sum":42}` {
			t.Errorf("child = parent %q callback %v result %+v", s.ParentSessionID, s.Callback, s.Result)
		}
		if d := getRun(t, f, out.RunID).Demands; d.Hostname != testHost {
			t.Errorf("-demands: run demands %+v", d)
		}
		page, err := f.coord.ListSessions(context.Background(), orchestrator.SessionFilter{ParentSessionID: parent.SessionID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) < 5 || !slices.ContainsFunc(page.Sessions, func(s *orchestrator.Session) bool { return s.AgentName == "slow" }) {
			t.Errorf("sessions started over stdio under -session-id: %d", len(page.Sessions))
		}
	})

	t.Run("a refused token ends it at start", func(t *testing.T) {
		// It would otherwise start, and then fail every tool call without a hint.
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, buildStdio(t), "-coordinator", api)
		cmd.Env = append(os.Environ(), httpapi.EnvClientToken+"=wrong", "AGENT_SESSION_ID=")
		cmd.Stdin = strings.NewReader("") // an MCP client that has not said anything yet
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
			!strings.Contains(string(out), "refused the client token (-token, or $"+httpapi.EnvClientToken+")") {
			t.Errorf("mcp-stdio with a wrong token: %v\n%s", err, out)
		}
	})
}
