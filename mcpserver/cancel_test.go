package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/runner"
)

// cancelConfig is the server configuration of the cancellation tests. Should a cancellation not reach
// its call, the call ends after SyncWait, and the test fails waiting for the session to stop instead of
// hanging.
var cancelConfig = mcpserver.Config{ProgressInterval: time.Hour, SyncWait: testTimeout / 3}

// progressLog collects a client's progress notifications.
type progressLog chan *mcp.ProgressNotificationParams

func (p progressLog) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		select {
		case p <- req.Params:
		default:
		}
	}}
}

func (p progressLog) next(t *testing.T) *mcp.ProgressNotificationParams {
	t.Helper()
	select {
	case n := <-p:
		return n
	case <-time.After(testTimeout):
		t.Fatal("no progress notification")
		return nil
	}
}

// sessionEvents returns the types of a session's events, in order.
func sessionEvents(t *testing.T, f *fixture, id string) ([]string, []*orchestrator.Event) {
	t.Helper()
	evs, err := f.coord.ListEvents(context.Background(), id, 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	return types, evs
}

// checkCancelledStop checks that the session ended stopped, with the cancellation recorded before its run
// ended, and returns the cancellation event's data.
func checkCancelledStop(t *testing.T, f *fixture, id, tool string) map[string]string {
	t.Helper()
	s := waitEnded(t, f, id)
	if s.Status != orchestrator.SessionStopped {
		t.Fatalf("session %s after the cancelled call: %s (%s), want stopped", id, s.Status, s.Error)
	}
	types, evs := sessionEvents(t, f, id)
	ci := slices.Index(types, mcpserver.EventCallCancelled)
	// A resumed session also has its earlier runs' run_ended.
	if ci < 0 || !slices.Contains(types[ci:], orchestrator.EventRunEnded) {
		t.Fatalf("events %v: want %s before %s", types, mcpserver.EventCallCancelled, orchestrator.EventRunEnded)
	}
	var data map[string]string
	if err := evs[ci].DecodeData(&data); err != nil {
		t.Fatal(err)
	}
	if data["tool"] != tool || data["run_id"] != s.CurrentRunID || !strings.Contains(data["message"], "cancelled") {
		t.Errorf("cancellation event %v", data)
	}
	return data
}

// TestCancelSyncCallStopsSession: a client that cancels a sync start_agent_session stops the session the
// call started, whatever the way the cancellation travels — the request closed (sessionless HTTP), a
// notifications/cancelled in a request of its own (HTTP with initialize), or one on the same connection
// (any other transport). The first progress notification named the session.
func TestCancelSyncCallStopsSession(t *testing.T) {
	f := newFixture(t)
	endpoint := f.serveMCP(t, cancelConfig)
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession
	}{
		{"http_sessionless", func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHTTPVersion(t, endpoint, nil, opts, "")
		}},
		{"http_2025-11-25", func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHTTPVersion(t, endpoint, nil, opts, "2025-11-25")
		}},
		{"in_memory", func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			return connectInMemory(t, mcpserver.New(f.coord, cancelConfig), opts)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			progress := make(progressLog, 16)
			cs := tc.connect(t, progress.options())
			key := t.Name()
			p := &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{
				"agent_name": "slow", "parameters": map[string]any{"key": key},
			}}
			p.SetProgressToken("tok")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, p)
				done <- err
			}()
			id := f.gates.waitStarted(t, key)
			first := progress.next(t)
			run := getSession(t, f, id).CurrentRunID
			if want := fmt.Sprintf("session %s started (run %s); waiting for it to end", id, run); first.Message != want || first.Progress != 1 {
				t.Errorf("first progress = %q (%v), want %q (1)", first.Message, first.Progress, want)
			}
			cancel()
			if err := <-done; err == nil {
				t.Error("the cancelled call succeeded")
			}
			checkCancelledStop(t, f, id, "start_agent_session")
		})
	}
}

// TestCancelSyncResumeStopsRun: the same for resume_agent_session: the run the call started is stopped.
func TestCancelSyncResumeStopsRun(t *testing.T) {
	f := newFixture(t)
	blocking := &blockingExecutor{started: make(chan string, 1)}
	startRunner(t, runner.Config{Coordinator: f.coord, Executor: blocking, ExecutorType: "blocking",
		Tags: []string{"blocking"}, MaxConcurrent: 2})
	if _, err := f.coord.CreateAgent(context.Background(), &orchestrator.Blueprint{Name: "blocker", Type: orchestrator.AgentTypeAgent,
		Description: "Blocks on resume", Demands: &orchestrator.Demands{ExecutorType: "blocking"}}); err != nil {
		t.Fatal(err)
	}
	cs := connectHTTPVersion(t, f.serveMCP(t, cancelConfig), nil, nil, "2025-11-25")
	first := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "blocker", "prompt": "first"}))
	if first.Status != orchestrator.SessionCompleted {
		t.Fatalf("first run = %+v", first)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "resume_agent_session", Arguments: map[string]any{
			"session_id": first.SessionID, "prompt": "block",
		}})
		done <- err
	}()
	select {
	case <-blocking.started:
	case <-time.After(testTimeout):
		t.Fatal("the resumed run did not start")
	}
	cancel()
	<-done
	data := checkCancelledStop(t, f, first.SessionID, "resume_agent_session")
	if data["run_id"] == first.RunID {
		t.Errorf("the cancellation names the first run %s, not the resumed one", first.RunID)
	}
}

// blockingExecutor answers at once, except a prompt of "block", which waits for its run to be stopped.
type blockingExecutor struct{ started chan string }

func (b *blockingExecutor) Execute(ctx context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
	var p struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(inv.Parameters, &p)
	if p.Prompt == "block" {
		b.started <- inv.RunID
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &orchestrator.Result{ResultType: "agent", ResultText: "done: " + p.Prompt}, nil
}

func connectInMemory(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rawClient speaks MCP over HTTP by hand, as a 2025-11-25 client does: initialize, then requests that
// carry the Mcp-Session-Id the server handed out.
type rawClient struct {
	t        *testing.T
	endpoint string
	sid      string
}

func (c *rawClient) post(ctx context.Context, msg any) (*http.Response, error) {
	b, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.sid != "" {
		req.Header.Set(mcpserver.HeaderMCPSessionID, c.sid)
	}
	return http.DefaultClient.Do(req)
}

func (c *rawClient) initialize() {
	c.t.Helper()
	resp, err := c.post(context.Background(), map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"},
	}})
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.sid = resp.Header.Get(mcpserver.HeaderMCPSessionID)
	if resp.StatusCode != http.StatusOK || c.sid == "" || !strings.Contains(string(body), `"protocolVersion":"2025-11-25"`) {
		c.t.Fatalf("initialize: %d, session id %q: %s", resp.StatusCode, c.sid, body)
	}
}

// callSlow starts a sync start_agent_session of the slow agent as request id; its answer's text (or the
// error that ended the request) is sent on the returned channel.
func (c *rawClient) callSlow(ctx context.Context, id int, key string) <-chan string {
	out := make(chan string, 1)
	go func() {
		resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
			"name": "start_agent_session", "arguments": map[string]any{"agent_name": "slow", "parameters": map[string]any{"key": key}},
		}})
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		var all strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
		}
		if err := sc.Err(); err != nil {
			all.WriteString(err.Error())
		}
		out <- all.String()
	}()
	return out
}

func (c *rawClient) cancel(id int, reason string) {
	c.t.Helper()
	resp, err := c.post(context.Background(), map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Errorf("notifications/cancelled: status %d", resp.StatusCode)
	}
}

// TestCancelRouting: over stateless HTTP, a notifications/cancelled sent in a request of its own reaches
// the call it names, and only from the client that made the call (the Mcp-Session-Id the server handed
// it at initialize tells clients apart).
func TestCancelRouting(t *testing.T) {
	f := newFixture(t)
	endpoint := f.serveMCP(t, cancelConfig)
	a := &rawClient{t: t, endpoint: endpoint}
	a.initialize()
	b := &rawClient{t: t, endpoint: endpoint}
	b.initialize()
	if a.sid == b.sid {
		t.Fatalf("two clients got the same Mcp-Session-Id %q", a.sid)
	}
	key := t.Name()
	answer := a.callSlow(context.Background(), 7, key)
	id := f.gates.waitStarted(t, key)
	b.cancel(7, "another client's cancellation") // same request id, another client: no effect
	a.cancel(7, "the user pressed Escape")
	data := checkCancelledStop(t, f, id, "start_agent_session")
	if data["reason"] != "the user pressed Escape" {
		t.Errorf("cancellation reason %q, want the cancelling client's", data["reason"])
	}
	// The cancelled call still answers its request (with a tool error naming the session).
	if got := <-answer; !strings.Contains(got, `\"error\":\"cancelled\"`) || !strings.Contains(got, id) {
		t.Errorf("the cancelled call's answer: %s", got)
	}
}

// logWatch is a slog handler's writer that reports when a line containing want is logged.
type logWatch struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (l *logWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return len(p), nil
}

// TestClientGoneKeepsSession: a client that goes away during a sync call without cancelling it (a lost
// connection) does not stop the session: the call stops waiting, the session runs on and ends by itself.
func TestClientGoneKeepsSession(t *testing.T) {
	f := newFixture(t)
	watch := &logWatch{want: "mcp client went away during a sync call", seen: make(chan struct{})}
	endpoint := f.serveMCP(t, mcpserver.Config{Logger: slog.New(slog.NewTextHandler(watch, nil))})
	c := &rawClient{t: t, endpoint: endpoint}
	c.initialize()
	ctx, drop := context.WithCancel(context.Background())
	key := t.Name()
	answer := c.callSlow(ctx, 1, key)
	id := f.gates.waitStarted(t, key)
	drop() // the connection is lost: no notifications/cancelled
	<-answer
	select {
	case <-watch.seen:
	case <-time.After(testTimeout):
		t.Fatal("the call did not notice its client went away")
	}
	if s := getSession(t, f, id); s.Status.Ended() {
		t.Fatalf("the session ended when its client went away: %s (%s)", s.Status, s.Error)
	}
	f.gates.get(key).open()
	if s := waitEnded(t, f, id); s.Status != orchestrator.SessionCompleted {
		t.Errorf("session %s: %s (%s), want completed", id, s.Status, s.Error)
	}
	if types, _ := sessionEvents(t, f, id); slices.Contains(types, mcpserver.EventCallCancelled) {
		t.Errorf("events %v: a lost client was recorded as a cancellation", types)
	}
}
