package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/runner"
)

// claimOne polls as the runner until it holds the run.
func claimOne(t *testing.T, c *Client, reg *orchestrator.Registration, runID string) {
	t.Helper()
	w := must[*orchestrator.Work](t, "PollWork")(c.PollWork(ctxT(t), orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1, Wait: 5 * time.Second}))
	if len(w.Runs) != 1 || w.Runs[0].Run.ID != runID {
		t.Fatalf("PollWork by %s = %+v, want run %s", reg.RunnerID, w, runID)
	}
}

// wantNotFound checks that err is the coordinator's answer for an unknown session (or run): the same code,
// and the same message but for the id.
func wantNotFound(t *testing.T, what string, err error, code, id string, unknown error) {
	t.Helper()
	if !errors.Is(err, orchestrator.ErrNotFound) || orchestrator.ErrorCode(err) != code {
		t.Fatalf("%s: err = %v (code %s), want ErrNotFound %s", what, err, orchestrator.ErrorCode(err), code)
	}
	if got, want := strings.ReplaceAll(err.Error(), id, "ID"), strings.ReplaceAll(unknown.Error(), "ses_unknown", "ID"); code == "session_not_found" && got != want {
		t.Fatalf("%s: message %q differs from an unknown session's %q", what, err, unknown)
	}
}

// TestRunnerScope: a runner's own credential reaches the sessions of the runs it holds or held and their
// descendants, and nothing else; what is outside its scope looks exactly like what does not exist.
func TestRunnerScope(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.client(t, adminTok).CreateAgent(ctx, aiAgent("helper")))
	client := env.client(t, clientTok)
	a, regA := env.runnerClient(t, registration("host-a"))
	b, regB := env.runnerClient(t, registration("host-b"))

	// s1 runs on a, s2 on b; c1 is s1's child (started by a, run by b); g is c1's child (started by b).
	s1 := must[*orchestrator.StartRunResult](t, "StartRun s1")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "1"}))
	claimOne(t, a, regA, s1.RunID)
	s2 := must[*orchestrator.StartRunResult](t, "StartRun s2")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "2"}))
	claimOne(t, b, regB, s2.RunID)
	c1 := must[*orchestrator.StartRunResult](t, "a starts c1")(a.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "c", ParentSessionID: s1.SessionID}))
	claimOne(t, b, regB, c1.RunID)
	g := must[*orchestrator.StartRunResult](t, "b starts g")(b.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "g", ParentSessionID: c1.SessionID}))

	_, unknownSession := client.GetSession(ctx, "ses_unknown")
	_, unknownRun := client.GetRun(ctx, "run_unknown")

	// a: its session and every descendant; not s2 (b's), and not as another runner.
	for _, id := range []string{s1.SessionID, c1.SessionID, g.SessionID} {
		must[*orchestrator.Session](t, "a reads "+id)(a.GetSession(ctx, id))
		must[[]*orchestrator.Event](t, "a lists events of "+id)(a.ListEvents(ctx, id, 0, 0, 0))
	}
	must[*orchestrator.Run](t, "a reads g's run")(a.GetRun(ctx, g.RunID))
	if res := must[*orchestrator.StartRunResult](t, "a waits for g's run")(a.WaitRun(ctx, g.RunID, 0)); res.RunID != g.RunID || res.SessionID != g.SessionID {
		t.Fatalf("a's WaitRun of g's run = %+v", res)
	}
	page := must[*orchestrator.SessionPage](t, "a lists s1's children")(a.ListSessions(ctx, orchestrator.SessionFilter{ParentSessionID: s1.SessionID}))
	if len(page.Sessions) != 1 || page.Sessions[0].ID != c1.SessionID {
		t.Fatalf("s1's children = %+v, want c1", page.Sessions)
	}
	must[[]*orchestrator.Event](t, "a appends to s1")(a.AppendEvents(ctx, s1.SessionID, []orchestrator.Event{orchestrator.NewEvent("progress", nil)}))
	resumed := must[*orchestrator.Session](t, "StopSession g")(a.StopSession(ctx, g.SessionID))
	if resumed.Status != orchestrator.SessionStopped {
		t.Fatalf("g after a stopped it: %s", resumed.Status)
	}

	// b: its own sessions and their descendants, but not s1, the parent of the child it runs.
	for _, id := range []string{s2.SessionID, c1.SessionID, g.SessionID} {
		must[*orchestrator.Session](t, "b reads "+id)(b.GetSession(ctx, id))
	}

	type attempt struct {
		what string
		call func() error
		code string
		id   string
	}
	outside := func(c *Client, foreign string, foreignRun string) []attempt {
		return []attempt{
			{"GetSession", func() error { _, err := c.GetSession(ctx, foreign); return err }, "session_not_found", foreign},
			{"WaitSession", func() error { _, err := c.WaitSession(ctx, foreign, 10*time.Millisecond); return err }, "session_not_found", foreign},
			{"ListEvents", func() error { _, err := c.ListEvents(ctx, foreign, 0, 0, 0); return err }, "session_not_found", foreign},
			{"AppendEvents", func() error {
				_, err := c.AppendEvents(ctx, foreign, []orchestrator.Event{orchestrator.NewEvent("progress", nil)})
				return err
			}, "session_not_found", foreign},
			{"StopSession", func() error { _, err := c.StopSession(ctx, foreign); return err }, "session_not_found", foreign},
			{"ListSessions", func() error {
				_, err := c.ListSessions(ctx, orchestrator.SessionFilter{ParentSessionID: foreign})
				return err
			}, "session_not_found", foreign},
			{"StartRun child", func() error {
				_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", ParentSessionID: foreign})
				return err
			}, "session_not_found", foreign},
			{"StartRun resume", func() error {
				_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", Type: orchestrator.RunTypeResume, SessionID: foreign})
				return err
			}, "session_not_found", foreign},
			{"GetRun", func() error { _, err := c.GetRun(ctx, foreignRun); return err }, "run_not_found", foreignRun},
			{"WaitRun", func() error { _, err := c.WaitRun(ctx, foreignRun, time.Minute); return err }, "run_not_found", foreignRun},
		}
	}
	for _, tc := range []struct {
		who                 string
		c                   *Client
		foreign, foreignRun string
	}{
		{"a on s2", a, s2.SessionID, s2.RunID},
		{"b on s1", b, s1.SessionID, s1.RunID},
		{"a on an unknown session", a, "ses_unknown", "run_unknown"},
	} {
		for _, at := range outside(tc.c, tc.foreign, tc.foreignRun) {
			unknown := unknownSession
			if at.code == "run_not_found" {
				unknown = unknownRun
			}
			wantNotFound(t, tc.who+": "+at.what, at.call(), at.code, at.id, unknown)
		}
	}
	// The raw answers are byte for byte those for an unknown id, the id aside.
	for _, p := range []string{"/sessions/%s", "/sessions/%s/result", "/sessions/%s/events", "/sessions/%s/events/stream"} {
		foreign := serve(env.handler, "GET", strings.Replace(p, "%s", s2.SessionID, 1), credential(regA), nil)
		unknown := serve(env.handler, "GET", strings.Replace(p, "%s", "ses_unknown", 1), credential(regA), nil)
		if foreign.Code != http.StatusNotFound || strings.ReplaceAll(foreign.Body.String(), s2.SessionID, "X") != strings.ReplaceAll(unknown.Body.String(), "ses_unknown", "X") {
			t.Errorf("GET %s: foreign %d %s, unknown %d %s: want the same 404", p, foreign.Code, foreign.Body, unknown.Code, unknown.Body)
		}
	}
	if s := must[*orchestrator.Session](t, "GetSession s2")(client.GetSession(ctx, s2.SessionID)); s.Status.Ended() || s.LastEventSeq != 0 {
		t.Fatalf("s2 after a's attempts: %s with %d events, want untouched", s.Status, s.LastEventSeq)
	}

	// What needs a parent in scope, without one; and what a runner may not do at all.
	for _, tc := range []struct {
		what string
		err  error
		code string
	}{
		{"ListSessions without a parent", func() error { _, err := a.ListSessions(ctx, orchestrator.SessionFilter{}); return err }(), "parent_session_required"},
		{"StartRun without a parent", func() error {
			_, err := a.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x"})
			return err
		}(), "parent_session_required"},
		{"StartRun with a callback_url", func() error {
			_, err := a.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "x", ParentSessionID: s1.SessionID, CallbackURL: "http://10.0.0.1/"})
			return err
		}(), "forbidden"},
		{"ListRuns", func() error { _, err := a.ListRuns(ctx, orchestrator.RunFilter{}); return err }(), "forbidden"},
		{"StopRun", func() error { _, err := a.StopRun(ctx, s1.RunID); return err }(), "forbidden"},
		{"DeleteSession", a.DeleteSession(ctx, s1.SessionID), "forbidden"},
		{"ListRunners", func() error { _, err := a.ListRunners(ctx); return err }(), "forbidden"},
		{"CreateAgent", func() error { _, err := a.CreateAgent(ctx, aiAgent("x")); return err }(), "forbidden"},
		{"DeregisterRunner of another", a.DeregisterRunner(ctx, regB.RunnerID), "runner_mismatch"},
		{"Heartbeat of another", a.Heartbeat(ctx, regB.RunnerID), "runner_mismatch"},
	} {
		if !errors.Is(tc.err, orchestrator.ErrForbidden) || orchestrator.ErrorCode(tc.err) != tc.code {
			t.Errorf("%s: err = %v (code %s), want ErrForbidden %s", tc.what, tc.err, orchestrator.ErrorCode(tc.err), tc.code)
		}
	}
	// The X-Agent-Session-Id header names the parent as the body would.
	rec := serve(env.handler, "POST", "/runs", credential(regA), []byte(`{"agent_name":"helper","prompt":"h"}`), HeaderSessionID, s1.SessionID)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /runs with a parent in scope in the header: %d %s", rec.Code, rec.Body)
	}
	rec = serve(env.handler, "POST", "/runs", credential(regA), []byte(`{"agent_name":"helper","prompt":"h"}`), HeaderSessionID, s2.SessionID)
	if m := errorBody(t, rec, http.StatusNotFound); m["error"] != "session_not_found" {
		t.Fatalf("POST /runs with a foreign parent in the header: %s", rec.Body)
	}
}

// TestClientRunnerCredential: after a registration the Client sends the runner's own credential on
// every call and the shared runner token on registrations only.
func TestClientRunnerCredential(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	var (
		mu   sync.Mutex
		seen = map[string]map[string]bool{} // "METHOD path" → bearer tokens
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := BearerToken(r)
		mu.Lock()
		key := r.Method + " " + r.URL.Path
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		seen[key][tok] = true
		mu.Unlock()
		env.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, ClientConfig{Token: runnerTok})
	check(t, "NewClient", err)
	ctx := ctxT(t)
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(c.RegisterRunner(ctx, registration("h")))
	check(t, "Heartbeat", c.Heartbeat(ctx, reg.RunnerID))
	must[*orchestrator.Work](t, "PollWork")(c.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID}))
	must[[]*orchestrator.AgentInfo](t, "ListAgents")(c.ListAgents(ctx, orchestrator.ListAgentsParams{}))
	again := must[*orchestrator.Registration](t, "RegisterRunner again")(c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{
		Hostname: "h", ProjectDir: "/work", ExecutorType: "test", RunnerSecret: reg.RunnerSecret,
	}))
	if again.RunnerSecret != reg.RunnerSecret {
		t.Fatalf("registering again with the secret gave a new one")
	}
	check(t, "DeregisterRunner", c.DeregisterRunner(ctx, reg.RunnerID))

	mu.Lock()
	defer mu.Unlock()
	for key, toks := range seen {
		want := credential(reg)
		if key == "POST /runner/register" {
			want = runnerTok
		}
		if len(toks) != 1 || !toks[want] {
			t.Errorf("%s carried %v, want only %q", key, toks, want)
		}
	}
	if len(seen) != 5 {
		t.Errorf("requests seen: %v", seen)
	}
}

// TestRegisterHijackOverHTTP: with the shared runner token, registering as a live runner without its
// secret is 409 runner_identity_in_use, and the live runner goes on as before.
func TestRegisterHijackOverHTTP(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	live, reg := env.runnerClient(t, registration("h", crawler()))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`),
	}))
	claimOne(t, live, reg, res.RunID)

	body, _ := json.Marshal(registration("h"))
	rec := serve(env.handler, "POST", "/runner/register", runnerTok, body)
	if m := errorBody(t, rec, http.StatusConflict); m["error"] != "runner_identity_in_use" || m["runner_id"] != reg.RunnerID {
		t.Fatalf("hijacking registration: %s", rec.Body)
	}
	// A runner's own credential cannot register at all.
	rec = serve(env.handler, "POST", "/runner/register", credential(reg), body)
	if m := errorBody(t, rec, http.StatusForbidden); m["error"] != "forbidden" {
		t.Fatalf("registration with a runner credential: %s", rec.Body)
	}

	check(t, "Heartbeat", live.Heartbeat(ctx, reg.RunnerID))
	check(t, "ReportRun started", live.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning}))
	check(t, "ReportRun completed", live.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultType: "deterministic", ResultText: "ok"}}))
	if s := must[*orchestrator.Session](t, "GetSession")(env.coord.GetSession(ctx, res.SessionID)); s.Status != orchestrator.SessionCompleted {
		t.Fatalf("the live runner's session = %s (%s), want completed", s.Status, s.Error)
	}
	if ag := must[*orchestrator.AgentInfo](t, "GetAgent")(env.coord.GetAgent(ctx, "web-crawler")); ag.RunnerID != reg.RunnerID {
		t.Fatalf("web-crawler belongs to %s, want %s", ag.RunnerID, reg.RunnerID)
	}
}

// TestRunnerRegistersAgainWhenRevoked: a Runner over HTTP whose credential stops working (an admin
// removed it) registers again, with a new secret, and goes on taking work.
func TestRunnerRegistersAgainWhenRevoked(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{HeartbeatInterval: 50 * time.Millisecond, PollTimeout: time.Second})
	ctx := ctxT(t)
	ex := taskExecutor{}
	rc := env.client(t, runnerTok)
	r, err := runner.New(runner.Config{
		Coordinator: rc, Executor: ex, Blueprints: []*orchestrator.Blueprint{taskBlueprint()},
		Hostname: "h", ProjectDir: t.TempDir(), ShutdownGrace: time.Second,
	})
	check(t, "runner.New", err)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-r.Registered():
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not register")
	}
	admin := env.client(t, adminTok)
	before := must[[]*orchestrator.RunnerInfo](t, "ListRunners")(admin.ListRunners(ctx))[0]
	rec := serve(env.handler, "DELETE", "/runners/"+r.ID(), adminTok, nil)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE /runners/{id}: %d %s", rec.Code, rec.Body)
	}
	testkit.WaitForState(t, 20*time.Second, "the runner to register again after its removal", func() (bool, string) {
		list := must[[]*orchestrator.RunnerInfo](t, "ListRunners")(admin.ListRunners(ctx))
		return list[0].Status == orchestrator.RunnerOnline && list[0].RegisteredAt.After(before.RegisteredAt), fmt.Sprintf("%+v", list[0])
	})
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "task", Mode: orchestrator.ModeSync, Wait: 20 * time.Second,
	}))
	if res.Status != orchestrator.SessionCompleted {
		t.Fatalf("a run after the runner registered again: %+v", res)
	}
}

// taskExecutor completes every run at once.
type taskExecutor struct{}

func (taskExecutor) Execute(context.Context, *orchestrator.Invocation, orchestrator.EventSink) (*orchestrator.Result, error) {
	return &orchestrator.Result{ResultType: "deterministic", ResultText: "done"}, nil
}

func taskBlueprint() *orchestrator.Blueprint {
	return &orchestrator.Blueprint{Name: "task", Type: orchestrator.AgentTypeDeterministic, Command: "task"}
}
