package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestAgentsRoundTrip exercises the agent registry through Client → Handler → coordinator.Coordinator.
func TestAgentsRoundTrip(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	admin := env.client(t, adminTok)
	client := env.client(t, clientTok)
	runner := env.client(t, runnerTok)

	created := must[*orchestrator.AgentInfo](t, "CreateAgent")(admin.CreateAgent(ctx, aiAgent("researcher")))
	if created.Name != "researcher" || created.Type != orchestrator.AgentTypeAgent {
		t.Fatalf("CreateAgent = %+v", created)
	}
	if _, err := admin.CreateAgent(ctx, aiAgent("researcher")); !errors.Is(err, orchestrator.ErrConflict) {
		t.Fatalf("second CreateAgent: err = %v, want ErrConflict", err)
	}
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(runner.RegisterRunner(ctx, registration("crawler-host", crawler())))
	if len(reg.Blueprints) != 1 || reg.Blueprints[0].RegisteredName != "web-crawler" {
		t.Fatalf("Registration.Blueprints = %+v", reg.Blueprints)
	}

	list := must[[]*orchestrator.AgentInfo](t, "ListAgents")(client.ListAgents(ctx, orchestrator.ListAgentsParams{}))
	names := []string{}
	for _, a := range list {
		names = append(names, a.Name)
		if a.Name == "web-crawler" && len(a.ParametersSchema) == 0 {
			t.Errorf("deterministic agent listed without parameters_schema: %+v", a)
		}
	}
	if !slices.Equal(names, []string{"researcher", "web-crawler"}) {
		t.Fatalf("ListAgents names = %v", names)
	}
	det := must[[]*orchestrator.AgentInfo](t, "ListAgents type")(client.ListAgents(ctx, orchestrator.ListAgentsParams{Type: orchestrator.AgentTypeDeterministic}))
	if len(det) != 1 || det[0].Name != "web-crawler" || det[0].RunnerID != reg.RunnerID {
		t.Fatalf("ListAgents(type=deterministic) = %+v", det)
	}
	tagged := must[[]*orchestrator.AgentInfo](t, "ListAgents tags")(client.ListAgents(ctx, orchestrator.ListAgentsParams{Tags: []string{"test"}}))
	if len(tagged) != 1 || tagged[0].Name != "researcher" {
		t.Fatalf("ListAgents(tags=test) = %+v", tagged)
	}

	got := must[*orchestrator.AgentInfo](t, "GetAgent")(client.GetAgent(ctx, "researcher"))
	if got.Blueprint == nil || string(got.ParametersSchema) != string(orchestrator.ImplicitPromptSchema) {
		t.Fatalf("GetAgent = %+v, want the blueprint and the implicit prompt schema", got)
	}
	if _, err := client.GetAgent(ctx, "nope"); !errors.Is(err, orchestrator.ErrNotFound) || orchestrator.ErrorCode(err) != "agent_not_found" {
		t.Fatalf("GetAgent(nope): err = %v (code %s), want ErrNotFound agent_not_found", err, orchestrator.ErrorCode(err))
	}

	// The schema endpoint.
	rec := serve(env.handler, "GET", "/agents/researcher/schema", clientTok, nil)
	var sch agentSchemaBody
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &sch) != nil {
		t.Fatalf("GET schema: %d %s", rec.Code, rec.Body)
	}
	if sch.Name != "researcher" || string(sch.ParametersSchema) != string(orchestrator.ImplicitPromptSchema) || string(sch.OutputSchema) != "null" {
		t.Fatalf("GET schema = %s", rec.Body)
	}

	// PUT replaces; PATCH merges.
	upd := aiAgent("researcher")
	upd.Description = "replaced"
	upd.SystemPrompt = "be brief"
	got = must[*orchestrator.AgentInfo](t, "UpdateAgent")(admin.UpdateAgent(ctx, "researcher", upd))
	if got.Description != "replaced" || got.Blueprint.SystemPrompt != "be brief" {
		t.Fatalf("UpdateAgent = %+v", got)
	}
	rec = serve(env.handler, "PATCH", "/agents/researcher", adminTok, []byte(`{"description":"patched","system_prompt":null,"tags":["a","b"]}`))
	if rec.Code != 200 {
		t.Fatalf("PATCH: %d %s", rec.Code, rec.Body)
	}
	got = must[*orchestrator.AgentInfo](t, "GetAgent after PATCH")(client.GetAgent(ctx, "researcher"))
	if got.Description != "patched" || got.Blueprint.SystemPrompt != "" || !slices.Equal(got.Tags, []string{"a", "b"}) {
		t.Fatalf("after PATCH: %+v / %+v", got, got.Blueprint)
	}
	rec = serve(env.handler, "PATCH", "/agents/researcher", adminTok, []byte(`{"parameter_schema":{}}`))
	if m := errorBody(t, rec, 400); m["error"] != "invalid_body" {
		t.Fatalf("PATCH with a misspelt key: %s", rec.Body)
	}
	rec = serve(env.handler, "PATCH", "/agents/web-crawler", adminTok, []byte(`{"description":"x"}`))
	if m := errorBody(t, rec, 409); m["error"] != "agent_owned_by_runner" {
		t.Fatalf("PATCH of a runner's agent: %s", rec.Body)
	}

	check(t, "DeleteAgent", admin.DeleteAgent(ctx, "researcher"))
	if err := admin.DeleteAgent(ctx, "researcher"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("second DeleteAgent: err = %v, want ErrNotFound", err)
	}
	if err := admin.DeleteAgent(ctx, "web-crawler"); !errors.Is(err, orchestrator.ErrConflict) {
		t.Fatalf("DeleteAgent of a runner's agent: err = %v, want ErrConflict", err)
	}
	if _, err := client.CreateAgent(ctx, aiAgent("x")); !errors.Is(err, orchestrator.ErrForbidden) {
		t.Fatalf("client CreateAgent: err = %v, want ErrForbidden", err)
	}
}

// TestRunLifecycleRoundTrip runs a session from start to result with a client and a runner, both remote.
func TestRunLifecycleRoundTrip(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	admin := env.client(t, adminTok)
	client := env.client(t, clientTok)
	runner, reg := env.runnerClient(t, registration("h1", crawler()))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com","depth":2}`),
	}))
	if res.RunID == "" || res.SessionID == "" || res.Status != orchestrator.SessionPending {
		t.Fatalf("StartRun = %+v", res)
	}
	run := must[*orchestrator.Run](t, "GetRun")(client.GetRun(ctx, res.RunID))
	if run.SessionID != res.SessionID || run.Status != orchestrator.RunPending || run.Demands.RunnerID != reg.RunnerID {
		t.Fatalf("GetRun = %+v", run)
	}
	runs := must[[]*orchestrator.Run](t, "ListRuns")(client.ListRuns(ctx, orchestrator.RunFilter{SessionID: res.SessionID, Statuses: []orchestrator.RunStatus{orchestrator.RunPending}}))
	if len(runs) != 1 || runs[0].ID != res.RunID {
		t.Fatalf("ListRuns = %+v", runs)
	}

	work := must[*orchestrator.Work](t, "PollWork")(runner.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1, Wait: 5 * time.Second}))
	if len(work.Runs) != 1 || work.Runs[0].Run.ID != res.RunID || work.Runs[0].BlueprintName != "web-crawler" {
		t.Fatalf("PollWork = %+v", work)
	}
	// A report from a runner that does not hold the run is fenced off; a runner cannot report as another.
	otherRunner, other := env.runnerClient(t, registration("h2"))
	err := otherRunner.ReportRun(ctx, orchestrator.RunReport{RunnerID: other.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	if !errors.Is(err, orchestrator.ErrConflict) || orchestrator.ErrorCode(err) != "run_not_held" {
		t.Fatalf("report by another runner: err = %v, want ErrConflict run_not_held", err)
	}
	err = otherRunner.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	if !errors.Is(err, orchestrator.ErrForbidden) || orchestrator.ErrorCode(err) != "runner_mismatch" {
		t.Fatalf("report by another runner in this runner's name: err = %v, want ErrForbidden runner_mismatch", err)
	}
	if _, err := otherRunner.GetSession(ctx, res.SessionID); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("another runner reads the session: err = %v, want ErrNotFound", err)
	}
	check(t, "ReportRun started", runner.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning}))
	evs := must[[]*orchestrator.Event](t, "AppendEvents")(runner.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]string{"line": "fetching /"}),
		orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": "half way"}),
	}))
	if len(evs) != 2 || evs[0].Seq == 0 || evs[1].Seq != evs[0].Seq+1 {
		t.Fatalf("AppendEvents = %+v", evs)
	}
	zero := 0
	result := &orchestrator.Result{ResultType: "deterministic", ResultText: `{"pages":1}`, ResultData: json.RawMessage(`{"pages":1}`), ExitCode: &zero}
	done := orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted, Result: result}
	check(t, "ReportRun completed", runner.ReportRun(ctx, done))
	check(t, "ReportRun completed again (idempotent)", runner.ReportRun(ctx, done))
	if err := runner.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunFailed}); !errors.Is(err, orchestrator.ErrConflict) {
		t.Fatalf("a different end after completion: err = %v, want ErrConflict", err)
	}

	sess := must[*orchestrator.Session](t, "WaitSession")(client.WaitSession(ctx, res.SessionID, 5*time.Second))
	if sess.Status != orchestrator.SessionCompleted || sess.Result == nil || string(sess.Result.ResultData) != `{"pages":1}` {
		t.Fatalf("WaitSession = %+v (result %+v)", sess, sess.Result)
	}
	rec := serve(env.handler, "GET", "/sessions/"+res.SessionID+"/result?wait=1", clientTok, nil)
	var sr sessionResult
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &sr) != nil || sr.Status != orchestrator.SessionCompleted || sr.Result == nil || sr.Result.ExitCode == nil {
		t.Fatalf("GET result: %d %s", rec.Code, rec.Body)
	}

	// Events: paged with after/limit, cursor in last_seq.
	all := must[[]*orchestrator.Event](t, "ListEvents")(client.ListEvents(ctx, res.SessionID, 0, 0, 0))
	if len(all) < 4 { // run_started, 2 appended, result, run_ended
		t.Fatalf("ListEvents = %d events, want at least 4", len(all))
	}
	page := must[[]*orchestrator.Event](t, "ListEvents page")(client.ListEvents(ctx, res.SessionID, all[0].Seq, 2, 0))
	if len(page) != 2 || page[0].Seq != all[1].Seq {
		t.Fatalf("ListEvents(after=%d, limit=2) = %+v", all[0].Seq, page)
	}
	rec = serve(env.handler, "GET", "/sessions/"+res.SessionID+"/events?after=1000", clientTok, nil)
	if rec.Code != 200 || rec.Body.String() != "{\"events\":[],\"last_seq\":1000}\n" {
		t.Fatalf("GET events after the end: %d %q", rec.Code, rec.Body)
	}

	pageS := must[*orchestrator.SessionPage](t, "ListSessions")(client.ListSessions(ctx, orchestrator.SessionFilter{Statuses: []orchestrator.SessionStatus{orchestrator.SessionCompleted}, Limit: 10}))
	if len(pageS.Sessions) != 1 || pageS.Sessions[0].ID != res.SessionID {
		t.Fatalf("ListSessions = %+v", pageS)
	}

	// Runners: heartbeat, list, deregister.
	check(t, "Heartbeat", runner.Heartbeat(ctx, reg.RunnerID))
	if err := runner.Heartbeat(ctx, "lnch_unknown"); !errors.Is(err, orchestrator.ErrForbidden) {
		t.Fatalf("Heartbeat(another runner): err = %v, want ErrForbidden", err)
	}
	if err := admin.Heartbeat(ctx, "lnch_unknown"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("Heartbeat(unknown) as admin: err = %v, want ErrNotFound", err)
	}
	runnersList := must[[]*orchestrator.RunnerInfo](t, "ListRunners")(admin.ListRunners(ctx))
	if len(runnersList) != 2 {
		t.Fatalf("ListRunners = %d runners, want 2", len(runnersList))
	}
	if err := runner.DeregisterRunner(ctx, other.RunnerID); !errors.Is(err, orchestrator.ErrForbidden) {
		t.Fatalf("DeregisterRunner(another runner): err = %v, want ErrForbidden", err)
	}
	check(t, "DeregisterRunner", runner.DeregisterRunner(ctx, reg.RunnerID))
	// Going offline revokes the runner's credential: it must register again.
	if err := runner.Heartbeat(ctx, reg.RunnerID); !errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("Heartbeat after deregistration: err = %v, want ErrUnauthorized", err)
	}
	if _, err := runner.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1}); !errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("PollWork after deregistration: err = %v, want ErrUnauthorized", err)
	}
	if err := admin.Heartbeat(ctx, reg.RunnerID); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("Heartbeat after deregistration as admin: err = %v, want ErrNotFound", err)
	}
	rec = serve(env.handler, "DELETE", "/runners/"+other.RunnerID, adminTok, nil)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE /runners/{id}: %d %s", rec.Code, rec.Body)
	}

	// Sessions: deleting an ended one works, then it is gone.
	check(t, "DeleteSession", client.DeleteSession(ctx, res.SessionID))
	if _, err := client.GetSession(ctx, res.SessionID); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("GetSession after delete: err = %v, want ErrNotFound", err)
	}
}

// TestStopAndDelete covers stopping runs and sessions and the 409 of deleting a live session.
func TestStopAndDelete(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	admin := env.client(t, adminTok)
	client := env.client(t, clientTok)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(admin.CreateAgent(ctx, aiAgent("helper")))

	a := must[*orchestrator.StartRunResult](t, "StartRun a")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "hi"}))
	err := client.DeleteSession(ctx, a.SessionID)
	if !errors.Is(err, orchestrator.ErrConflict) || orchestrator.ErrorCode(err) != "session_active" {
		t.Fatalf("DeleteSession(pending): err = %v, want ErrConflict session_active", err)
	}
	rec := serve(env.handler, "DELETE", "/sessions/"+a.SessionID, clientTok, nil)
	errorBody(t, rec, http.StatusConflict)

	run := must[*orchestrator.Run](t, "StopRun")(client.StopRun(ctx, a.RunID))
	if run.Status != orchestrator.RunStopped {
		t.Fatalf("StopRun(pending) = %+v, want stopped", run)
	}
	b := must[*orchestrator.StartRunResult](t, "StartRun b")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "hi"}))
	sess := must[*orchestrator.Session](t, "StopSession")(client.StopSession(ctx, b.SessionID))
	if sess.Status != orchestrator.SessionStopped {
		t.Fatalf("StopSession(pending) = %+v, want stopped", sess)
	}
	check(t, "DeleteSession(stopped)", client.DeleteSession(ctx, b.SessionID))
	rec = serve(env.handler, "DELETE", "/sessions/"+a.SessionID, clientTok, nil)
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("DELETE stopped session: %d %q", rec.Code, rec.Body)
	}
}

// TestSessionHeaderLinksParent: an AI agent's MCP calls carry X-Agent-Session-Id, which becomes the new
// session's parent.
func TestSessionHeaderLinksParent(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.client(t, adminTok).CreateAgent(ctx, aiAgent("helper")))
	client := env.client(t, clientTok)
	parent := must[*orchestrator.StartRunResult](t, "StartRun parent")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))

	withHeader, err := NewClient(env.srv.URL, ClientConfig{Token: clientTok, Header: http.Header{HeaderSessionID: {parent.SessionID}}})
	check(t, "NewClient", err)
	child := must[*orchestrator.StartRunResult](t, "StartRun child")(withHeader.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "c"}))
	s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, child.SessionID))
	if s.ParentSessionID != parent.SessionID {
		t.Fatalf("child's parent_session_id = %q, want %q from the header", s.ParentSessionID, parent.SessionID)
	}
	// An explicit parent wins over the header.
	explicit := must[*orchestrator.StartRunResult](t, "StartRun explicit")(withHeader.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "c", ParentSessionID: child.SessionID}))
	s = must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, explicit.SessionID))
	if s.ParentSessionID != child.SessionID {
		t.Fatalf("explicit parent_session_id = %q, want %q", s.ParentSessionID, child.SessionID)
	}
	// An unknown session in the header is the coordinator's 400, not a 500.
	bad, _ := NewClient(env.srv.URL, ClientConfig{Token: clientTok, Header: http.Header{HeaderSessionID: {"ses_nope"}}})
	if _, err := bad.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "c"}); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("unknown header session: err = %v, want ErrInvalid", err)
	}
}

// TestPollWakeUp: a runner's parked GET /runner/runs returns the moment a run it can take is created.
func TestPollWakeUp(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{PollTimeout: time.Minute})
	ctx := ctxT(t)
	runner, reg := env.runnerClient(t, registration("h", crawler()))

	// Nothing to do: 204, an empty Work; the credential names the runner.
	for _, q := range []string{"runner_id=" + reg.RunnerID + "&", ""} {
		rec := serve(env.handler, "GET", "/runner/runs?"+q+"wait=0", credential(reg), nil)
		if rec.Code != http.StatusNoContent {
			t.Fatalf("empty poll (%s): %d %s", q, rec.Code, rec.Body)
		}
	}
	rec := serve(env.handler, "GET", "/runner/runs?runner_id=lnch_other&wait=0", credential(reg), nil)
	if m := errorBody(t, rec, http.StatusForbidden); m["error"] != "runner_mismatch" {
		t.Fatalf("poll for another runner: %s", rec.Body)
	}
	w := must[*orchestrator.Work](t, "PollWork empty")(runner.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1}))
	if !w.Empty() {
		t.Fatalf("PollWork with nothing queued = %+v", w)
	}

	type result struct {
		w   *orchestrator.Work
		err error
		at  time.Duration
	}
	got := make(chan result, 1)
	start := time.Now()
	go func() {
		w, err := runner.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1, Wait: 50 * time.Second})
		got <- result{w, err, time.Since(start)}
	}()
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`),
	}))
	r := <-got
	if r.err != nil {
		t.Fatalf("PollWork: %v", r.err)
	}
	if len(r.w.Runs) != 1 || r.w.Runs[0].Run.ID != res.RunID {
		t.Fatalf("PollWork = %+v, want run %s", r.w, res.RunID)
	}
	if r.at > 20*time.Second {
		t.Fatalf("PollWork returned after %s: it was not woken by the new run", r.at)
	}

	// A stop reaches the parked poll the same way.
	go func() {
		w, err := runner.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 0, Wait: 50 * time.Second})
		got <- result{w, err, time.Since(start)}
	}()
	must[*orchestrator.Run](t, "StopRun")(env.client(t, clientTok).StopRun(ctx, res.RunID))
	r = <-got
	if r.err != nil || len(r.w.Stop) != 1 || r.w.Stop[0] != res.SessionID {
		t.Fatalf("PollWork for stops = %+v, %v; want stop of %s", r.w, r.err, res.SessionID)
	}
}

// TestResultLongPoll: GET /sessions/{id}/result?wait= returns when the session ends.
func TestResultLongPoll(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	client := env.client(t, clientTok)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.client(t, adminTok).CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))

	// Not ended within the wait: 200 with the current status and no result.
	rec := serve(env.handler, "GET", "/sessions/"+res.SessionID+"/result?wait=10ms", clientTok, nil)
	if rec.Code != 200 || rec.Body.String() != `{"session_id":"`+res.SessionID+`","status":"pending"}`+"\n" {
		t.Fatalf("result before the end: %d %s", rec.Code, rec.Body)
	}

	got := make(chan *orchestrator.Session, 1)
	go func() {
		s, err := client.WaitSession(ctx, res.SessionID, 20*time.Second)
		if err != nil {
			t.Errorf("WaitSession: %v", err)
		}
		got <- s
	}()
	must[*orchestrator.Run](t, "StopRun")(client.StopRun(ctx, res.RunID))
	s := <-got
	if s == nil || s.Status != orchestrator.SessionStopped || s.Error == "" {
		t.Fatalf("WaitSession = %+v, want stopped with an error", s)
	}
}

// TestMalformedMCPServersRefused: POST /agents with mcp_servers Claude Code would drop without a word is
// a 400 that names each server and field, and registers nothing.
func TestMalformedMCPServersRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	body := []byte(`{"name":"bad","type":"agent","mcp_servers":{"broken":{"type":"http"},"alsobroken":{"command":5}}}`)
	rec := serve(env.handler, "POST", "/agents", adminTok, body)
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error != "invalid_blueprint" ||
		e.Message != `blueprint "bad": mcp_servers: "alsobroken": command must be a string; "broken": url is required` {
		t.Fatalf("POST /agents with malformed mcp_servers: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(env.handler, "GET", "/agents/bad", adminTok, nil); rec.Code != http.StatusNotFound {
		t.Errorf("GET /agents/bad after the refusal: %d %s, want 404", rec.Code, rec.Body)
	}
}
