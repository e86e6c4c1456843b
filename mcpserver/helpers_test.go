package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// testTimeout bounds every wait of the tests; nothing should come near it.
const testTimeout = 30 * time.Second

const testHost = "mcp-test-host"

type AddParams struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type Sum struct {
	Sum int `json:"sum"`
}

type SlowParams struct {
	Key string `json:"key" jsonschema:"names the gate the task waits on"`
}

// gates let a test hold a "slow" task until it says so: the task signals started and waits for release
// (or for its run to be stopped). No sleeps.
type gates struct {
	mu sync.Mutex
	m  map[string]*gate
}

type gate struct {
	started chan string // the task's session id, once it runs
	release chan struct{}
	once    sync.Once
}

func (g *gates) get(key string) *gate {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*gate{}
	}
	if g.m[key] == nil {
		g.m[key] = &gate{started: make(chan string, 1), release: make(chan struct{})}
	}
	return g.m[key]
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gates) openAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, x := range g.m {
		x.open()
	}
}

// waitStarted returns the session id of the task waiting at key.
func (g *gates) waitStarted(t *testing.T, key string) string {
	t.Helper()
	select {
	case id := <-g.get(key).started:
		return id
	case <-time.After(testTimeout):
		t.Fatalf("slow task %q did not start", key)
		return ""
	}
}

// echoExecutor is a stand-in AI executor: it answers "echo: <prompt>", on start and on resume.
type echoExecutor struct{}

func (echoExecutor) Execute(ctx context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
	var p struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(inv.Parameters, &p)
	return &orchestrator.Result{ResultType: "agent", ResultText: "echo: " + p.Prompt}, nil
}

var reviewerSchema = json.RawMessage(`{"type":"object","required":["prompt","focus"],"properties":{"prompt":{"type":"string","minLength":1},"focus":{"type":"string","enum":["security","style"]}}}`)

// fixture is a coordinator over a SQLite file with two in-process runners: one runs Go function tasks
// (deterministic agents "add" and "slow", tags math and slow), the other AI agents from the registry
// ("echo-agent" without a parameters schema, "reviewer" with one; tag ai).
type fixture struct {
	coord *coordinator.Coordinator
	gates *gates
}

// newCoordinator starts a coordinator over a SQLite file of its own, stopped when t ends.
func newCoordinator(t *testing.T) *coordinator.Coordinator {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatalf("coordinator.New: %v", err)
	}
	if err := coord.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(coord.Stop)
	return coord
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	coord := newCoordinator(t)
	f := &fixture{coord: coord, gates: &gates{}}

	for _, bp := range []*orchestrator.Blueprint{
		{Name: "echo-agent", Type: orchestrator.AgentTypeAgent, Description: "Echoes its prompt", Tags: []string{"ai"}},
		{Name: "reviewer", Type: orchestrator.AgentTypeAgent, Description: "Reviews code", Tags: []string{"ai", "review"}, ParametersSchema: reviewerSchema},
	} {
		if _, err := coord.CreateAgent(ctx, bp); err != nil {
			t.Fatalf("CreateAgent(%s): %v", bp.Name, err)
		}
	}

	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
		return Sum{Sum: p.A + p.B}, nil
	}).WithTags("math")
	slow := gofunc.NewTask("slow", "Waits until the test releases it", func(ctx context.Context, p SlowParams) (Sum, error) {
		g := f.gates.get(p.Key)
		inv, _ := gofunc.InvocationFrom(ctx)
		g.started <- inv.SessionID
		select {
		case <-g.release:
			return Sum{Sum: 42}, nil
		case <-ctx.Done():
			return Sum{}, ctx.Err()
		}
	}).WithTags("slow")
	funcs := gofunc.New(add, slow)
	startRunner(t, runner.Config{
		Coordinator: coord, Executor: funcs, Blueprints: funcs.Blueprints(),
		Hostname: testHost, Tags: []string{"blue"}, MaxConcurrent: 8,
	})
	startRunner(t, runner.Config{
		Coordinator: coord, Executor: echoExecutor{}, ExecutorType: "echo",
		Hostname: testHost, Tags: []string{"blue"}, MaxConcurrent: 8,
	})
	t.Cleanup(f.gates.openAll) // runs first: no task is left waiting
	return f
}

func startRunner(t *testing.T, cfg runner.Config) {
	t.Helper()
	cfg.ShutdownGrace = time.Second
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-r.Registered():
	case err := <-done:
		t.Fatalf("runner ended before registering: %v", err)
	case <-time.After(testTimeout):
		t.Fatal("runner did not register")
	}
}

// serveMCP serves the fixture's coordinator over streamable HTTP and returns the endpoint URL.
func (f *fixture) serveMCP(t *testing.T, cfg mcpserver.Config) string {
	t.Helper()
	return httptestServer(t, mcpserver.NewHandler(f.coord, cfg))
}

// httptestServer serves h on a loopback port until the test ends and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// headerTransport adds fixed headers to every request, as an MCP client configured with headers does.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header[k] = vs
	}
	return h.base.RoundTrip(r)
}

// connectHTTP opens an MCP client session to endpoint, sending header with every request.
func connectHTTP(t *testing.T, endpoint string, header map[string]string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectHTTPVersion(t, endpoint, header, opts, "")
}

// connectHTTPVersion is connectHTTP asking for a protocol version ("" for the SDK's newest). Versions
// before 2026-07-28 start with initialize, and cancel calls with notifications/cancelled.
func connectHTTPVersion(t *testing.T, endpoint string, header map[string]string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	hc := &http.Client{Transport: headerTransport{header: h, base: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool; a protocol error fails the test (bad input must never be one).
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	return callParams(t, cs, &mcp.CallToolParams{Name: name, Arguments: args})
}

// callParams calls a tool and checks the answer against the tool's declared output schema: a successful
// answer's structured content must match it, and an error carries none.
func callParams(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: protocol error: %v", p.Name, err)
	}
	checkOutput(t, cs, p.Name, res)
	return res
}

// outputSchemas caches each client session's tools' output schemas, compiled by the project's validator
// and by the SDK's (google/jsonschema-go).
var outputSchemas sync.Map // *mcp.ClientSession → map[string]outputSchema

type outputSchema struct {
	ours *orchestrator.Schema
	sdk  *jsonschema.Resolved
}

func checkOutput(t *testing.T, cs *mcp.ClientSession, tool string, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		if res.StructuredContent != nil {
			t.Errorf("%s: an error result carries structured content (clients validate it against the output schema)", tool)
		}
		return
	}
	m, ok := outputSchemas.Load(cs)
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		schemas := map[string]outputSchema{}
		for _, tl := range lt.Tools {
			if tl.OutputSchema == nil {
				t.Fatalf("%s has no output schema", tl.Name)
			}
			raw, _ := json.Marshal(tl.OutputSchema)
			ours, err := orchestrator.CompileSchema(raw)
			if err != nil {
				t.Fatalf("%s's output schema does not compile: %v\n%s", tl.Name, err, raw)
			}
			var js jsonschema.Schema
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			rs, err := js.Resolve(nil)
			if err != nil {
				t.Fatalf("%s's output schema does not resolve: %v", tl.Name, err)
			}
			schemas[tl.Name] = outputSchema{ours, rs}
		}
		m, _ = outputSchemas.LoadOrStore(cs, schemas)
	}
	schema, ok := m.(map[string]outputSchema)[tool]
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v any
	if err := json.Unmarshal(b, &v); err != nil || v == nil {
		t.Fatalf("%s: structured content %s is not a JSON value", tool, b)
	}
	if errs := schema.ours.Validate(v); len(errs) > 0 {
		t.Errorf("%s: the answer does not match the output schema: %+v\n%s", tool, errs, b)
	}
	if err := schema.sdk.Validate(v); err != nil {
		t.Errorf("%s: the answer does not match the output schema (SDK validator): %v\n%s", tool, err, b)
	}
}

// ok decodes a successful result's structured content into out, and checks the text content carries the
// same JSON.
func ok[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structured content: %v", err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
	var fromText T
	if err := json.Unmarshal([]byte(firstText(t, res)), &fromText); err != nil {
		t.Fatalf("text content is not the JSON answer: %v\n%s", err, firstText(t, res))
	}
	return out
}

// toolError is the decoded body of a tool error.
type toolErr struct {
	Error            string                    `json:"error"`
	Message          string                    `json:"message"`
	AgentName        string                    `json:"agent_name"`
	ValidationErrors []orchestrator.FieldError `json:"validation_errors"`
	ParametersSchema json.RawMessage           `json:"parameters_schema"`
	Tool             string                    `json:"tool"`
	Header           string                    `json:"header"`
	Hint             string                    `json:"-"`
	Raw              string                    `json:"-"`
}

// failed checks res is a tool error (not a protocol error) and decodes its JSON body (the first text
// block) and hint (the second).
func failed(t *testing.T, res *mcp.CallToolResult) toolErr {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	var e toolErr
	e.Raw = firstText(t, res)
	if err := json.Unmarshal([]byte(e.Raw), &e); err != nil {
		t.Fatalf("tool error text is not JSON: %v\n%s", err, e.Raw)
	}
	if e.Error == "" || e.Message == "" {
		t.Fatalf("tool error body lacks error/message: %s", e.Raw)
	}
	if res.StructuredContent != nil {
		t.Errorf("tool error carries structured content: %v", res.StructuredContent)
	}
	if len(res.Content) > 1 {
		if tc, ok := res.Content[1].(*mcp.TextContent); ok {
			e.Hint = tc.Text
		}
	}
	return e
}

func firstText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("result has no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, not text", res.Content[0])
	}
	return tc.Text
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func getSession(t *testing.T, f *fixture, id string) *orchestrator.Session {
	t.Helper()
	s, err := f.coord.GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", id, err)
	}
	return s
}

func getRun(t *testing.T, f *fixture, id string) *orchestrator.Run {
	t.Helper()
	r, err := f.coord.GetRun(context.Background(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return r
}

// waitEnded waits (long-poll, no sleeps) for a session to end.
func waitEnded(t *testing.T, f *fixture, id string) *orchestrator.Session {
	t.Helper()
	s, err := f.coord.WaitSession(context.Background(), id, testTimeout)
	if err != nil || !s.Status.Ended() {
		t.Fatalf("session %s did not end: %v", id, err)
	}
	return s
}
