package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

var _ runner.Gateway = (*gateway.Gateway)(nil)

const runnerTok = "runner-token-0123456789abcdef"

func newCoordinator(t *testing.T) *coordinator.Coordinator {
	t.Helper()
	store, err := sqlstore.New(context.Background(), filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	c, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		t.Fatalf("coordinator.New: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: err = %v, want %v", what, err, kind)
	}
}

// executorClient is what an executor's process does with its environment.
func executorClient(t *testing.T, env map[string]string) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(env[orchestrator.EnvAPIURL], httpapi.ClientConfig{Token: env[orchestrator.EnvAPIToken], RetryMax: -1})
	if err != nil {
		t.Fatalf("NewClient(gateway): %v", err)
	}
	return c
}

func helper() *orchestrator.Blueprint {
	return &orchestrator.Blueprint{Name: "helper", Type: orchestrator.AgentTypeAgent, Description: "test"}
}

func assignment(res *orchestrator.StartRunResult) *orchestrator.Assignment {
	return &orchestrator.Assignment{Run: &orchestrator.Run{ID: res.RunID, SessionID: res.SessionID}}
}

// TestGatewayScoping: a run's token reaches its own session and its children and nothing else, and stops
// working when the run ends.
func TestGatewayScoping(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	a := must[*orchestrator.StartRunResult](t, "StartRun a")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a"}))
	b := must[*orchestrator.StartRunResult](t, "StartRun b")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "b"}))

	gw := gateway.New(coord, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	envA, closeA := gw.Open(assignment(a))
	envB, closeB := gw.Open(assignment(b))
	defer closeB()
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(envA[orchestrator.EnvAPIURL]) {
		t.Fatalf("gateway URL = %q, want loopback", envA[orchestrator.EnvAPIURL])
	}
	tokA, tokB := envA[orchestrator.EnvAPIToken], envB[orchestrator.EnvAPIToken]
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tokA) || tokA == tokB {
		t.Fatalf("tokens %q, %q: want two different 32-byte hex tokens", tokA, tokB)
	}
	ca, cb := executorClient(t, envA), executorClient(t, envB)

	// Own session: append and read.
	evs := must[[]*orchestrator.Event](t, "AppendEvents own")(ca.AppendEvents(ctx, a.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "from the executor"}),
	}))
	if len(evs) != 1 || evs[0].SessionID != a.SessionID || evs[0].Seq == 0 {
		t.Fatalf("AppendEvents = %+v", evs)
	}
	must[*orchestrator.Session](t, "GetSession own")(ca.GetSession(ctx, a.SessionID))
	must[[]*orchestrator.Event](t, "ListEvents own")(ca.ListEvents(ctx, a.SessionID, 0, 10, 0))

	// Another run's session: token A cannot post to, read, stop or list it.
	_, err := ca.AppendEvents(ctx, b.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", nil)})
	wantKind(t, "A appends to B", err, orchestrator.ErrForbidden)
	_, err = ca.GetSession(ctx, b.SessionID)
	wantKind(t, "A reads B", err, orchestrator.ErrForbidden)
	_, err = ca.ListEvents(ctx, b.SessionID, 0, 10, 0)
	wantKind(t, "A reads B's events", err, orchestrator.ErrForbidden)
	_, err = ca.WaitSession(ctx, b.SessionID, time.Millisecond)
	wantKind(t, "A waits on B", err, orchestrator.ErrForbidden)
	_, err = ca.StopSession(ctx, b.SessionID)
	wantKind(t, "A stops B", err, orchestrator.ErrForbidden)
	_, err = ca.GetRun(ctx, b.RunID)
	wantKind(t, "A reads B's run", err, orchestrator.ErrForbidden)
	// Checked before the wait: B's run is live, and a wait for it would last the minute.
	for _, id := range []string{b.RunID, "run_does_not_exist"} {
		_, err = ca.WaitRun(ctx, id, time.Minute)
		wantKind(t, "A waits for run "+id, err, orchestrator.ErrForbidden)
		if orchestrator.ErrorCode(err) != "run_out_of_scope" {
			t.Errorf("A waits for run %s: code %q, want run_out_of_scope", id, orchestrator.ErrorCode(err))
		}
	}
	_, err = ca.GetSession(ctx, "ses_does_not_exist")
	wantKind(t, "A reads a missing session", err, orchestrator.ErrForbidden)
	_, err = ca.ListSessions(ctx, orchestrator.SessionFilter{ParentSessionID: b.SessionID})
	wantKind(t, "A lists B's children", err, orchestrator.ErrForbidden)
	if s, err := coord.GetSession(ctx, b.SessionID); err != nil || s.LastEventSeq != 0 {
		t.Fatalf("session B changed: %+v, %v", s, err)
	}

	// Children: started through the gateway, they get A as parent and are in A's scope.
	child := must[*orchestrator.StartRunResult](t, "StartRun child")(ca.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "child"}))
	s := must[*orchestrator.Session](t, "GetSession child (coordinator)")(coord.GetSession(ctx, child.SessionID))
	if s.ParentSessionID != a.SessionID {
		t.Fatalf("child's parent = %q, want %q", s.ParentSessionID, a.SessionID)
	}
	must[*orchestrator.Session](t, "GetSession child")(ca.GetSession(ctx, child.SessionID))
	must[*orchestrator.Run](t, "GetRun child")(ca.GetRun(ctx, child.RunID))
	if res := must[*orchestrator.StartRunResult](t, "WaitRun child")(ca.WaitRun(ctx, child.RunID, 0)); res.RunID != child.RunID || res.SessionID != child.SessionID {
		t.Fatalf("WaitRun child = %+v", res)
	}
	page := must[*orchestrator.SessionPage](t, "ListSessions")(ca.ListSessions(ctx, orchestrator.SessionFilter{}))
	if len(page.Sessions) != 1 || page.Sessions[0].ID != child.SessionID {
		t.Fatalf("ListSessions through the gateway = %+v, want only the child", page.Sessions)
	}
	_, err = cb.GetSession(ctx, child.SessionID)
	wantKind(t, "B reads A's child", err, orchestrator.ErrForbidden)
	_, err = ca.AppendEvents(ctx, child.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", nil)})
	wantKind(t, "A appends to its child", err, orchestrator.ErrForbidden)
	// A parent other than the run's own session is refused; so is a callback URL.
	_, err = ca.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", ParentSessionID: b.SessionID})
	wantKind(t, "A starts a child of B", err, orchestrator.ErrForbidden)
	_, err = ca.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", CallbackURL: "http://10.0.0.1/"})
	wantKind(t, "callback_url through the gateway", err, orchestrator.ErrForbidden)
	// A child of a session that was started elsewhere with A as parent is A's too.
	viaMCP := must[*orchestrator.StartRunResult](t, "StartRun via coordinator")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", ParentSessionID: a.SessionID}))
	must[*orchestrator.Session](t, "GetSession of a child started elsewhere")(ca.GetSession(ctx, viaMCP.SessionID))
	// Stopping a child works; the run's own session cannot be stopped through the gateway.
	stopped := must[*orchestrator.Session](t, "StopSession child")(ca.StopSession(ctx, child.SessionID))
	if stopped.Status != orchestrator.SessionStopped {
		t.Fatalf("stopped child = %+v", stopped)
	}
	_, err = ca.StopSession(ctx, a.SessionID)
	wantKind(t, "A stops itself", err, orchestrator.ErrForbidden)
	// Resuming a child is allowed; the coordinator keeps its parent.
	res := must[*orchestrator.StartRunResult](t, "resume child")(ca.StartRun(ctx, orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: child.SessionID, Prompt: "more"}))
	if res.SessionID != child.SessionID {
		t.Fatalf("resume answered session %s, want %s", res.SessionID, child.SessionID)
	}
	_, err = cb.StartRun(ctx, orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: child.SessionID, Prompt: "x"})
	wantKind(t, "B resumes A's child", err, orchestrator.ErrForbidden)

	// Agents are readable.
	agents := must[[]*orchestrator.AgentInfo](t, "ListAgents")(ca.ListAgents(ctx, orchestrator.ListAgentsParams{}))
	if len(agents) != 1 {
		t.Fatalf("ListAgents = %+v", agents)
	}
	must[*orchestrator.AgentInfo](t, "GetAgent")(ca.GetAgent(ctx, "helper"))

	// The runner's and the admin's routes are not available.
	_, err = ca.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "evil"})
	wantKind(t, "register through the gateway", err, orchestrator.ErrForbidden)
	_, err = ca.ListRunners(ctx)
	wantKind(t, "list runners through the gateway", err, orchestrator.ErrForbidden)
	_, err = ca.CreateAgent(ctx, &orchestrator.Blueprint{Name: "x"})
	wantKind(t, "create agent through the gateway", err, orchestrator.ErrForbidden)
	err = ca.DeleteSession(ctx, child.SessionID)
	wantKind(t, "delete through the gateway", err, orchestrator.ErrForbidden)
	_, err = ca.ListRuns(ctx, orchestrator.RunFilter{})
	wantKind(t, "list runs through the gateway", err, orchestrator.ErrForbidden)
	err = ca.ReportRun(ctx, orchestrator.RunReport{RunnerID: "x", RunID: a.RunID, Status: orchestrator.RunCompleted})
	wantKind(t, "report through the gateway", err, orchestrator.ErrForbidden)

	// No token, a wrong token: 401.
	_, err = executorClient(t, map[string]string{orchestrator.EnvAPIURL: envA[orchestrator.EnvAPIURL]}).GetSession(ctx, a.SessionID)
	wantKind(t, "no token", err, orchestrator.ErrUnauthorized)
	_, err = executorClient(t, map[string]string{orchestrator.EnvAPIURL: envA[orchestrator.EnvAPIURL], orchestrator.EnvAPIToken: runnerTok}).GetSession(ctx, a.SessionID)
	wantKind(t, "someone else's token", err, orchestrator.ErrUnauthorized)

	// After the run ends the token is dead; the other run's still works.
	closeA()
	closeA() // twice is harmless
	_, err = ca.AppendEvents(ctx, a.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", nil)})
	wantKind(t, "expired token", err, orchestrator.ErrUnauthorized)
	must[*orchestrator.Session](t, "B still works")(cb.GetSession(ctx, b.SessionID))
}

// TestGatewayLifecycle: Open starts the gateway lazily; Close stops it and revokes everything.
func TestGatewayLifecycle(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	a := must[*orchestrator.StartRunResult](t, "StartRun")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a"}))

	gctx, cancel := context.WithCancel(ctx)
	gw := gateway.New(coord, gateway.Config{})
	if gw.URL() != "" {
		t.Fatal("URL before start")
	}
	if err := gw.Start(gctx); err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(gctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	env, closeFn := gw.Open(assignment(a))
	defer closeFn()
	c := executorClient(t, env)
	rec, err := http.Get(gw.URL() + "/health")
	if err != nil || rec.StatusCode != 200 {
		t.Fatalf("health: %v %v", rec, err)
	}
	rec.Body.Close()
	must[*orchestrator.Session](t, "GetSession")(c.GetSession(ctx, a.SessionID))

	// Cancelling the Start context closes the gateway.
	cancel()
	testkit.WaitForState(t, 10*time.Second, "the gateway to stop serving after its context ended", func() (bool, string) {
		_, err := c.GetSession(ctx, a.SessionID)
		// Connection refused: the listener is gone.
		return err != nil && !errors.Is(err, orchestrator.ErrUnauthorized), fmt.Sprintf("GetSession: %v", err)
	})
	if env, _ := gw.Open(assignment(a)); env != nil {
		t.Fatalf("Open after Close = %v, want no gateway", env)
	}
	if err := gw.Start(ctx); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	if err := gw.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestGatewayRoutes: every route the gateway allows exists in the coordinator API.
func TestGatewayRoutes(t *testing.T) {
	t.Parallel()
	routes := gateway.Routes()
	if len(routes) != 24 {
		t.Fatalf("gateway.Routes() = %d routes, want 24 (a route was renamed in httpapi?): %v", len(routes), routes)
	}
	for _, rt := range routes {
		if strings.HasPrefix(rt.Pattern, "/runner") || rt.Pattern == "/runners" {
			t.Errorf("gateway serves a runner route: %s", rt)
		}
	}
}

// TestGatewayOverRemoteCoordinator: executor → gateway → httpapi.Client (the runner's own credential) →
// coordinator API with roles → coordinator.Coordinator. Everything the gateway forwards is allowed to a
// runner, within its scope on the coordinator too, and the executor never holds the runner's credentials.
func TestGatewayOverRemoteCoordinator(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	api := httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{Tokens: map[string]httpapi.Role{runnerTok: httpapi.RoleRunner}}))
	t.Cleanup(api.Close)
	runnerClient := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(api.URL, httpapi.ClientConfig{Token: runnerTok}))
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(runnerClient.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: t.TempDir()}))
	a := must[*orchestrator.StartRunResult](t, "StartRun")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a"}))
	// The runner holds a's run, which puts a's session and its children in its scope.
	if w := must[*orchestrator.Work](t, "PollWork")(runnerClient.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1})); len(w.Runs) != 1 || w.Runs[0].Run.ID != a.RunID {
		t.Fatalf("PollWork = %+v, want run %s", w, a.RunID)
	}

	gw := gateway.New(runnerClient, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	env, closeFn := gw.Open(assignment(a))
	defer closeFn()
	for _, v := range env {
		if strings.Contains(v, runnerTok) || strings.Contains(v, reg.RunnerSecret) {
			t.Fatal("the runner's credentials leaked into the executor's environment")
		}
	}
	c := executorClient(t, env)
	must[[]*orchestrator.AgentInfo](t, "ListAgents")(c.ListAgents(ctx, orchestrator.ListAgentsParams{}))
	must[*orchestrator.AgentInfo](t, "GetAgent")(c.GetAgent(ctx, "helper"))
	must[[]*orchestrator.Event](t, "AppendEvents")(c.AppendEvents(ctx, a.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", map[string]string{"message": "hi"})}))
	child := must[*orchestrator.StartRunResult](t, "StartRun child")(c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "c"}))
	must[*orchestrator.SessionPage](t, "ListSessions")(c.ListSessions(ctx, orchestrator.SessionFilter{}))
	must[*orchestrator.Run](t, "GetRun child")(c.GetRun(ctx, child.RunID))
	must[*orchestrator.StartRunResult](t, "WaitRun child")(c.WaitRun(ctx, child.RunID, 10*time.Millisecond))
	must[*orchestrator.Session](t, "WaitSession child")(c.WaitSession(ctx, child.SessionID, 10*time.Millisecond))
	must[[]*orchestrator.Event](t, "ListEvents")(c.ListEvents(ctx, a.SessionID, 0, 0, 10*time.Millisecond))
	must[*orchestrator.Session](t, "StopSession child")(c.StopSession(ctx, child.SessionID))

	// The event stream works through both hops.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", env[orchestrator.EnvAPIURL]+"/sessions/"+a.SessionID+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+env[orchestrator.EnvAPIToken])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream through the gateway: %v %v", resp, err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			var ev map[string]any
			if json.Unmarshal([]byte(line[6:]), &ev) == nil && ev["event_type"] == orchestrator.EventRunStarted {
				continue // the event marked the run started: run_started comes first
			}
			if ev["message"] != "hi" {
				t.Fatalf("first streamed event = %s", line)
			}
			break
		}
	}
}

// TestGatewayUpstreamDown: when the coordinator cannot be reached the executor gets 502, an ErrServer.
func TestGatewayUpstreamDown(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.NotFoundHandler())
	url := api.URL
	api.Close()
	down := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(url, httpapi.ClientConfig{Token: runnerTok, RetryMax: -1}))
	gw := gateway.New(down, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	env, closeFn := gw.Open(&orchestrator.Assignment{Run: &orchestrator.Run{ID: "run_x", SessionID: "ses_x"}})
	defer closeFn()
	_, err := executorClient(t, env).ListAgents(ctxT(t), orchestrator.ListAgentsParams{})
	if !errors.Is(err, httpapi.ErrServer) || orchestrator.ErrorCode(err) != "upstream_error" {
		t.Fatalf("upstream down: err = %v (code %s), want ErrServer upstream_error", err, orchestrator.ErrorCode(err))
	}

	// The coordinator refusing the runner's token is not the executor's token being wrong: 502, not 401.
	coord := newCoordinator(t)
	api = httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{Tokens: map[string]httpapi.Role{runnerTok: httpapi.RoleRunner}}))
	t.Cleanup(api.Close)
	wrong := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(api.URL, httpapi.ClientConfig{Token: "wrong", RetryMax: -1}))
	gw2 := gateway.New(wrong, gateway.Config{})
	t.Cleanup(func() { gw2.Close() })
	env2, close2 := gw2.Open(&orchestrator.Assignment{Run: &orchestrator.Run{ID: "run_x", SessionID: "ses_x"}})
	defer close2()
	_, err = executorClient(t, env2).ListAgents(ctxT(t), orchestrator.ListAgentsParams{})
	if !errors.Is(err, httpapi.ErrServer) || errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("runner token refused upstream: err = %v, want ErrServer", err)
	}
}

// TestRunnerWithGateway: a runner whose executor's task starts a child agent through the gateway, waits
// for it synchronously and returns its result — the whole path over HTTP: caller → coordinator API ←
// runner (Client) → executor → gateway → runner's Client → coordinator API.
func TestRunnerWithGateway(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	const clientTok = "client-token-0123456789abcdef"
	api := httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{Tokens: map[string]httpapi.Role{runnerTok: httpapi.RoleRunner, clientTok: httpapi.RoleClient}}))
	t.Cleanup(api.Close)
	runnerClient := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(api.URL, httpapi.ClientConfig{Token: runnerTok}))
	caller := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(api.URL, httpapi.ClientConfig{Token: clientTok}))

	upper := gofunc.NewRawTask("upper", "upper-cases a word", nil, nil, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		var in struct{ Word string }
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"word": strings.ToUpper(in.Word)})
	})
	parent := gofunc.NewRawTask("parent", "asks upper through the gateway", nil, nil, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		inv, _ := gofunc.InvocationFrom(ctx)
		gwc, err := httpapi.NewClient(inv.Env[orchestrator.EnvAPIURL], httpapi.ClientConfig{Token: inv.Env[orchestrator.EnvAPIToken]})
		if err != nil {
			return nil, err
		}
		if _, err := gwc.AppendEvents(ctx, inv.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", map[string]string{"message": "calling upper"})}); err != nil {
			return nil, err
		}
		res, err := gwc.StartRun(ctx, orchestrator.StartRunParams{AgentName: "upper", Parameters: p, Mode: orchestrator.ModeSync, Wait: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		if res.Result == nil {
			return nil, errors.New("child did not finish: " + string(res.Status))
		}
		return res.Result.ResultData, nil
	})
	gw := gateway.New(runnerClient, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	ex := gofunc.New(upper, parent)
	worker, err := runner.New(runner.Config{
		Coordinator: runnerClient, Executor: ex, Blueprints: ex.Blueprints(), Gateway: gw,
		Hostname: "test-host", ProjectDir: t.TempDir(), MaxConcurrent: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("runner: %v", err)
		}
	})
	select {
	case <-worker.Registered():
	case <-ctx.Done():
		t.Fatal("runner did not register")
	}

	res := must[*orchestrator.StartRunResult](t, "StartRun")(caller.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "parent", Parameters: json.RawMessage(`{"word":"hello"}`), Mode: orchestrator.ModeSync, Wait: 30 * time.Second,
	}))
	if res.Status != orchestrator.SessionCompleted || res.Result == nil || string(res.Result.ResultData) != `{"word":"HELLO"}` {
		t.Fatalf("sync run = %+v (result %+v)", res, res.Result)
	}
	children := must[*orchestrator.SessionPage](t, "ListSessions")(caller.ListSessions(ctx, orchestrator.SessionFilter{ParentSessionID: res.SessionID}))
	if len(children.Sessions) != 1 || children.Sessions[0].AgentName != "upper" {
		t.Fatalf("children of the parent = %+v, want the upper session", children.Sessions)
	}
	evs := must[[]*orchestrator.Event](t, "ListEvents")(caller.ListEvents(ctx, res.SessionID, 0, 0, 0))
	found := false
	for _, ev := range evs {
		found = found || (ev.Type == "progress" && strings.Contains(string(ev.Data), "calling upper"))
	}
	if !found {
		t.Fatalf("the event posted through the gateway is missing: %+v", evs)
	}
}
