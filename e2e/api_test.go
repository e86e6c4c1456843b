//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// readExampleBlueprint returns a blueprint of examples/blueprints as it is.
func readExampleBlueprint(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "blueprints", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// blueprintField returns one field of a blueprint document, as JSON.
func blueprintField(t *testing.T, doc, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// Issue 3, test 1: a runner's deterministic agents are listed with their parameters_schema inline, and
// GET /agents/{name}/schema returns both schemas.
func TestAgentsListing(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	probe, fileStats := testAgent("probe"), readExampleBlueprint(t, "file-stats")
	r := c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{probe, fileStats}})
	a := co.admin()

	agents := a.agents()
	for _, tc := range []struct{ name, doc string }{{"probe", probe}, {"file-stats", fileStats}} {
		ag := agents[tc.name]
		if ag == nil {
			t.Fatalf("GET /agents does not list %s: %s", tc.name, mustJSON(t, agents))
		}
		if ag.Type != orchestrator.AgentTypeDeterministic || ag.RunnerID != r.id {
			t.Errorf("GET /agents: %s has type %q runner_id %q, want deterministic and %s", tc.name, ag.Type, ag.RunnerID, r.id)
		}
		if want := blueprintField(t, tc.doc, "parameters_schema"); !jsonEqual(ag.ParametersSchema, want) {
			t.Errorf("GET /agents: %s parameters_schema\n got %s\nwant %s", tc.name, ag.ParametersSchema, want)
		}
		var desc string
		_ = json.Unmarshal(blueprintField(t, tc.doc, "description"), &desc)
		if ag.Description != desc {
			t.Errorf("GET /agents: %s description %q, want %q", tc.name, ag.Description, desc)
		}
	}

	// The raw body, too: parameters_schema is inline in the listing itself.
	_, raw, _ := a.do("GET", "/agents", nil)
	var rawList struct {
		Agents []map[string]json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(raw, &rawList); err != nil {
		t.Fatalf("GET /agents: %s: %v", raw, err)
	}
	for _, ag := range rawList.Agents {
		if _, ok := ag["parameters_schema"]; !ok {
			t.Errorf("GET /agents: %s has no inline parameters_schema", ag["name"])
		}
	}

	// Filters.
	var tagged agentList
	a.json("GET", "/agents?tags=e2e", nil, http.StatusOK, &tagged)
	if len(tagged.Agents) != 1 || tagged.Agents[0].Name != "probe" {
		t.Errorf("GET /agents?tags=e2e: got %s, want probe only", mustJSON(t, tagged))
	}
	var det agentList
	a.json("GET", "/agents?type=deterministic", nil, http.StatusOK, &det)
	if len(det.Agents) != 2 {
		t.Errorf("GET /agents?type=deterministic: got %d agents, want 2: %s", len(det.Agents), mustJSON(t, det))
	}

	// GET /agents/{name}/schema: {name, type, parameters_schema, output_schema}.
	for _, tc := range []struct{ name, doc string }{{"probe", probe}, {"file-stats", fileStats}} {
		var schema map[string]json.RawMessage
		a.json("GET", "/agents/"+tc.name+"/schema", nil, http.StatusOK, &schema)
		if got := string(schema["name"]); got != strconv.Quote(tc.name) {
			t.Errorf("GET /agents/%s/schema: name %s", tc.name, got)
		}
		if got := string(schema["type"]); got != `"deterministic"` {
			t.Errorf("GET /agents/%s/schema: type %s, want deterministic", tc.name, got)
		}
		for _, f := range []string{"parameters_schema", "output_schema"} {
			want := blueprintField(t, tc.doc, f)
			if want == nil {
				continue
			}
			if !jsonEqual(schema[f], want) {
				t.Errorf("GET /agents/%s/schema: %s\n got %s\nwant %s", tc.name, f, schema[f], want)
			}
		}
	}

	// An AI agent without a schema gets the implicit prompt schema.
	registerOrchestrator(co)
	var ai map[string]json.RawMessage
	a.json("GET", "/agents/orchestrator/schema", nil, http.StatusOK, &ai)
	if !jsonEqual(ai["parameters_schema"], []byte(orchestrator.ImplicitPromptSchema)) {
		t.Errorf("GET /agents/orchestrator/schema: parameters_schema %s, want the implicit prompt schema %s", ai["parameters_schema"], orchestrator.ImplicitPromptSchema)
	}

	// An unknown agent is a JSON 404.
	status, body, _ := a.do("GET", "/agents/nope/schema", nil)
	var e map[string]any
	if status != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e["error"] == "" || e["message"] == "" {
		t.Errorf("GET /agents/nope/schema: %d %s, want 404 with a JSON error", status, body)
	}
}

// crawlerSchema is the web-crawler parameters_schema of the validation example in docs/http-api.md.
const crawlerSchema = `{
	"type": "object",
	"required": ["url"],
	"properties": {
		"url": { "type": "string", "format": "uri" },
		"depth": { "type": "integer", "default": 2 }
	}
}`

// Issue 3, test 2: invalid parameters are a 400 with the documented body (docs/http-api.md), field for field, and create
// nothing.
func TestValidationError(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	blueprint := fmt.Sprintf(`{"name": "web-crawler", "command": %q, "parameters_schema": %s}`, filepath.Join(binDir, "testagent"), crawlerSchema)
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{blueprint}})
	a := co.admin()

	status, body, hdr := a.do("POST", "/runs", `{"agent_name":"web-crawler","parameters":{"url":"not-a-url","depth":"deep"}}`)
	if status != http.StatusBadRequest {
		t.Fatalf("POST /runs with invalid parameters: status %d, want 400; body %s", status, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	// The documented keys, in their order.
	dec := json.NewDecoder(bytes.NewReader(body))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body %s is not an object", body)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"error", "message", "agent_name", "validation_errors", "parameters_schema"}; !slices.Equal(keys, want) {
		t.Errorf("body keys %v, want %v (docs/http-api.md)", keys, want)
	}
	var got struct {
		Error            string                    `json:"error"`
		Message          string                    `json:"message"`
		AgentName        string                    `json:"agent_name"`
		ValidationErrors []orchestrator.FieldError `json:"validation_errors"`
		ParametersSchema json.RawMessage           `json:"parameters_schema"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Error != "parameter_validation_failed" || got.Message != "Parameters do not match agent's parameters_schema" || got.AgentName != "web-crawler" {
		t.Errorf("error/message/agent_name = %q / %q / %q, want parameter_validation_failed / Parameters do not match agent's parameters_schema / web-crawler",
			got.Error, got.Message, got.AgentName)
	}
	want := []orchestrator.FieldError{
		{Path: "$.url", Message: "'not-a-url' is not a valid URI", SchemaPath: "properties.url.format"},
		{Path: "$.depth", Message: "'deep' is not of type 'integer'", SchemaPath: "properties.depth.type"},
	}
	sortErrs := func(e []orchestrator.FieldError) {
		slices.SortFunc(e, func(a, b orchestrator.FieldError) int { return strings.Compare(a.Path, b.Path) })
	}
	sortErrs(want)
	gotErrs := slices.Clone(got.ValidationErrors)
	sortErrs(gotErrs)
	if !slices.Equal(gotErrs, want) {
		t.Errorf("validation_errors\n got %+v\nwant %+v", got.ValidationErrors, want)
	}
	if !jsonEqual(got.ParametersSchema, []byte(crawlerSchema)) {
		t.Errorf("parameters_schema\n got %s\nwant %s", got.ParametersSchema, crawlerSchema)
	}

	// Nothing was created.
	var page struct {
		Sessions []*orchestrator.Session `json:"sessions"`
	}
	a.json("GET", "/sessions?agent_name=web-crawler", nil, http.StatusOK, &page)
	if len(page.Sessions) != 0 {
		t.Errorf("a rejected run created sessions: %s", mustJSON(t, page.Sessions))
	}

	// Valid parameters get the schema's default and run.
	s := a.startRun(map[string]any{"agent_name": "web-crawler", "parameters": map[string]any{"url": "https://example.com/"}})
	res := a.result(s.SessionID)
	if res.Status != "completed" {
		t.Fatalf("valid run: %+v", res)
	}
	out := decodeAgentOutput(t, res.Result)
	if !jsonEqual(out.Params, []byte(`{"url":"https://example.com/","depth":2}`)) {
		t.Errorf("the command read parameters %s on stdin, want the defaults applied", out.Params)
	}
}

// Issue 3, test 3: a run goes from POST /runs (201) to its structured result; the example echo-json
// blueprint (python) returns its parameters as result_data.
func TestRunToResult(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	blueprints := []string{testAgent("probe"), readExampleBlueprint(t, "file-stats")}
	_, pyErr := exec.LookPath("python")
	if pyErr == nil {
		blueprints = append(blueprints, readExampleBlueprint(t, "echo-json"))
	}
	r := c.startRunner(co, runnerOpts{name: "runner", blueprints: blueprints})
	a := co.admin()

	t.Run("testagent", func(t *testing.T) {
		a := a.with(t)
		status, body, hdr := a.do("POST", "/runs", map[string]any{"agent_name": "probe", "parameters": map[string]any{"tag": "hello", "sleep_ms": 50}})
		if status != http.StatusCreated {
			t.Fatalf("POST /runs: %d %s, want 201", status, body)
		}
		var s started
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		if s.Status != "pending" {
			t.Errorf("POST /runs: status %q, want pending", s.Status)
		}
		if loc := hdr.Get("Location"); loc != "/sessions/"+s.SessionID {
			t.Errorf("Location %q, want /sessions/%s", loc, s.SessionID)
		}
		res := a.result(s.SessionID)
		if res.Status != "completed" || res.Result == nil {
			t.Fatalf("result: %+v", res)
		}
		if res.Result.ResultType != "deterministic" || res.Result.ExitCode == nil || *res.Result.ExitCode != 0 {
			t.Errorf("result_type %q exit_code %v, want deterministic and 0", res.Result.ResultType, res.Result.ExitCode)
		}
		out := decodeAgentOutput(t, res.Result)
		if out.RunID != s.RunID || out.SessionID != s.SessionID {
			t.Errorf("the command saw AGENT_RUN_ID %q AGENT_SESSION_ID %q, want %s %s", out.RunID, out.SessionID, s.RunID, s.SessionID)
		}
		if out.Cwd != r.projectDir {
			t.Errorf("the command ran in %s, want the runner's project dir %s", out.Cwd, r.projectDir)
		}
		if !jsonEqual(out.Params, []byte(`{"tag":"hello","sleep_ms":50}`)) {
			t.Errorf("stdin parameters %s", out.Params)
		}
		if want := []string{"--sleep_ms", "50", "--tag", "hello"}; !slices.Equal(out.Args, want) {
			t.Errorf("argv %q, want %q", out.Args, want)
		}
		if strings.TrimSpace(res.Result.ResultText) != string(res.Result.ResultData) {
			t.Errorf("result_text %q differs from result_data %s", res.Result.ResultText, res.Result.ResultData)
		}
	})

	t.Run("sync", func(t *testing.T) {
		a := a.with(t)
		var res orchestrator.StartRunResult
		a.json("POST", "/runs", map[string]any{"agent_name": "probe", "mode": "sync", "parameters": map[string]any{"tag": "sync"}}, http.StatusCreated, &res)
		if res.Status != orchestrator.SessionCompleted || res.Result == nil {
			t.Fatalf("sync POST /runs answered %s", mustJSON(t, res))
		}
		if out := decodeAgentOutput(t, res.Result); out.SessionID != res.SessionID {
			t.Errorf("sync result is of session %s, want %s", out.SessionID, res.SessionID)
		}
	})

	t.Run("failure", func(t *testing.T) {
		a := a.with(t)
		s := a.startRun(map[string]any{"agent_name": "probe", "parameters": map[string]any{"exit": 3}})
		res := a.result(s.SessionID)
		if res.Status != "failed" || res.Result == nil || res.Result.ExitCode == nil || *res.Result.ExitCode != 3 {
			t.Fatalf("result %s, want failed with exit_code 3", mustJSON(t, res))
		}
		if !strings.Contains(res.Error, "failing with exit code 3") {
			t.Errorf("error %q, want the command's last stderr line", res.Error)
		}
	})

	t.Run("file-stats", func(t *testing.T) {
		a := a.with(t)
		dir := t.TempDir()
		for name, content := range map[string]string{"a.go": "package a\n\nfunc A() {}\n", "b.go": "package a\n", "notes.md": "# notes\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := a.startRun(map[string]any{"agent_name": "file-stats", "parameters": map[string]any{"path": dir, "patterns": []string{"*.go"}}})
		res := a.result(s.SessionID)
		if res.Status != "completed" || res.Result == nil {
			t.Fatalf("result: %s", mustJSON(t, res))
		}
		var stats struct {
			Path  string `json:"path"`
			Files int    `json:"files"`
			Lines int    `json:"lines"`
		}
		if err := json.Unmarshal(res.Result.ResultData, &stats); err != nil {
			t.Fatalf("result_data %s: %v", res.Result.ResultData, err)
		}
		if stats.Path != dir || stats.Files != 2 || stats.Lines != 4 {
			t.Errorf("file-stats result: path %s files %d lines %d, want %s 2 4", stats.Path, stats.Files, stats.Lines, dir)
		}
	})

	t.Run("echo-json", func(t *testing.T) {
		if pyErr != nil {
			t.Skipf("python is not on PATH (%v): the example echo-json needs it", pyErr)
		}
		a := a.with(t)
		params := `{"message":"hello","count":2}`
		s := a.startRun(map[string]any{"agent_name": "echo-json", "parameters": json.RawMessage(params)})
		res := a.result(s.SessionID)
		if res.Status != "completed" || res.Result == nil {
			t.Fatalf("echo-json: %s", mustJSON(t, res))
		}
		if !jsonEqual(res.Result.ResultData, []byte(params)) {
			t.Errorf("echo-json result_data %s, want the parameters %s", res.Result.ResultData, params)
		}
	})
}

// Issue 3, test 4: stderr lines are events while the process still runs, in the paged list and in the SSE
// stream.
func TestStderrWhileRunning(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("probe")}})
	a := co.admin()

	const line = "crawling page 1 of 3"
	release := c.path("release")
	s := a.startRun(map[string]any{"agent_name": "probe", "parameters": map[string]any{"stderr": line, "release": release}})

	// GET /sessions/{id}/events shows the line while the command blocks on the release file.
	var stderrSeq int64
	waitFor(t, runTimeout, "the stderr event in GET /sessions/{id}/events", func() (bool, string) {
		evs := a.events(s.SessionID)
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
			var d struct {
				Line string `json:"line"`
			}
			if ev.Type == orchestrator.EventStderr && ev.DecodeData(&d) == nil && d.Line == line {
				stderrSeq = ev.Seq
				return true, ""
			}
		}
		return false, fmt.Sprint(types)
	})
	if st := a.session(s.SessionID).Status; st != orchestrator.SessionRunning {
		t.Fatalf("session is %s while its command blocks, want running", st)
	}

	// The SSE stream (Accept: text/event-stream on the same URL, and the /stream URL) shows it too.
	for _, path := range []string{"/sessions/" + s.SessionID + "/events", "/sessions/" + s.SessionID + "/events/stream"} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		evs, err := readSSE(ctx, co, "", path, nil, func(e sseEvent) bool { return e.Event == orchestrator.EventStderr })
		cancel()
		if err != nil {
			t.Fatalf("SSE %s: %v (read %+v)", path, err, evs)
		}
		last := evs[len(evs)-1]
		var ev orchestrator.Event
		if err := json.Unmarshal([]byte(last.Data), &ev); err != nil {
			t.Fatalf("SSE data %q: %v", last.Data, err)
		}
		var d struct {
			Line string `json:"line"`
		}
		_ = ev.DecodeData(&d)
		if d.Line != line || last.ID != strconv.FormatInt(stderrSeq, 10) || ev.SessionID != s.SessionID {
			t.Errorf("SSE %s: event id %s data %s, want id %d with line %q", path, last.ID, last.Data, stderrSeq, line)
		}
	}
	// Last-Event-ID replays from there: the first event after stderrSeq-1 is the stderr line.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	evs, err := readSSEFrom(ctx, co, "/sessions/"+s.SessionID+"/events", stderrSeq-1)
	cancel()
	if err != nil || len(evs) == 0 || evs[0].ID != strconv.FormatInt(stderrSeq, 10) {
		t.Errorf("SSE with Last-Event-ID %d: first event %+v (err %v), want id %d", stderrSeq-1, evs, err, stderrSeq)
	}
	if st := a.session(s.SessionID).Status; st != orchestrator.SessionRunning {
		t.Fatalf("session is %s before the release, want running", st)
	}

	touch(t, release)
	if res := a.result(s.SessionID); res.Status != "completed" {
		t.Fatalf("after the release: %s", mustJSON(t, res))
	}
}

// readSSEFrom reads the stream with a Last-Event-ID header until the first event.
func readSSEFrom(ctx context.Context, co *coordinator, path string, lastID int64) ([]sseEvent, error) {
	return readSSE(ctx, co, "", path, map[string]string{"Last-Event-ID": strconv.FormatInt(lastID, 10)}, func(sseEvent) bool { return true })
}

// Issue 3, test 5: two runners announce the same blueprint; the second copy is name@<runner_id>, and each
// name runs on its own runner.
func TestSameBlueprintOnTwoRunners(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	a := co.admin()
	first := c.startRunner(co, runnerOpts{name: "first", blueprints: []string{testAgent("twin")}})
	waitFor(t, startTimeout, "twin to be listed", func() (bool, string) {
		ag := a.agents()["twin"]
		return ag != nil && ag.RunnerID == first.id, mustJSON(t, ag)
	})
	second := c.startRunner(co, runnerOpts{name: "second", blueprints: []string{testAgent("twin")}})
	if first.id == second.id {
		t.Fatalf("runners with different project dirs got the same id %s", first.id)
	}
	suffixed := "twin@" + second.id
	var agents map[string]*orchestrator.AgentInfo
	waitFor(t, startTimeout, suffixed+" to be listed", func() (bool, string) {
		agents = a.agents()
		return agents[suffixed] != nil, mustJSON(t, agents)
	})
	if ag := agents["twin"]; ag == nil || ag.RunnerID != first.id {
		t.Errorf("twin: %s, want it owned by the first runner %s", mustJSON(t, ag), first.id)
	}
	if ag := agents[suffixed]; ag.RunnerID != second.id {
		t.Errorf("%s: owned by %s, want %s", suffixed, ag.RunnerID, second.id)
	}

	for _, tc := range []struct {
		name string
		r    *runner
	}{{"twin", first}, {suffixed, second}, {"twin", first}, {suffixed, second}} {
		s := a.startRun(map[string]any{"agent_name": tc.name, "parameters": map[string]any{"tag": tc.name}})
		res := a.result(s.SessionID)
		if res.Status != "completed" {
			t.Fatalf("%s: %s", tc.name, mustJSON(t, res))
		}
		out := decodeAgentOutput(t, res.Result)
		if out.Cwd != tc.r.projectDir {
			t.Errorf("%s ran in %s, want %s (its runner's project dir)", tc.name, out.Cwd, tc.r.projectDir)
		}
		if sess := a.session(s.SessionID); sess.RunnerID != tc.r.id || sess.AgentName != tc.name {
			t.Errorf("session of %s: agent %s runner %s, want runner %s", tc.name, sess.AgentName, sess.RunnerID, tc.r.id)
		}
		var run orchestrator.Run
		a.json("GET", "/runs/"+s.RunID, nil, http.StatusOK, &run)
		if run.RunnerID != tc.r.id {
			t.Errorf("run of %s was claimed by %s, want %s", tc.name, run.RunnerID, tc.r.id)
		}
	}
}

// Issue 3, test 6: deterministic sessions cannot be resumed.
func TestResumeDeterministicRejected(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("probe")}})
	a := co.admin()
	s := a.startRun(map[string]any{"agent_name": "probe"})
	if res := a.result(s.SessionID); res.Status != "completed" {
		t.Fatalf("first run: %s", mustJSON(t, res))
	}
	for _, body := range []map[string]any{
		{"agent_name": "probe", "mode": "resume", "session_id": s.SessionID}, // the legacy spelling
		{"agent_name": "probe", "type": "resume", "session_id": s.SessionID, "prompt": "again"},
	} {
		status, data, _ := a.do("POST", "/runs", body)
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		if status != http.StatusBadRequest || e.Message != "Deterministic agents do not support resumption" {
			t.Errorf("POST /runs %v: %d %s, want 400 \"Deterministic agents do not support resumption\"", body, status, data)
		}
	}
	var runs struct {
		Runs []*orchestrator.Run `json:"runs"`
	}
	a.json("GET", "/runs?session_id="+s.SessionID, nil, http.StatusOK, &runs)
	if len(runs.Runs) != 1 {
		t.Errorf("the rejected resumes created runs: %s", mustJSON(t, runs.Runs))
	}
	if st := a.session(s.SessionID).Status; st != orchestrator.SessionCompleted {
		t.Errorf("session is %s after the rejected resumes, want completed", st)
	}
}

// Issue 3, test 7: with tokens, a runner with the runner token works end to end; no token is 401; a
// client token on an admin route is 403.
func TestAuth(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const admin, client, runnerTok = "admin-secret-1", "client-secret-2", "runner-secret-3"
	co := c.startCoordinator(coordOpts{adminToken: admin, clientToken: client, runnerToken: runnerTok})
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("probe")}, token: runnerTok})

	cl := co.api(client)
	s := cl.startRun(map[string]any{"agent_name": "probe", "parameters": map[string]any{"tag": "auth"}})
	if res := cl.result(s.SessionID); res.Status != "completed" {
		t.Fatalf("run with the client token on a runner with the runner token: %s", mustJSON(t, res))
	}
	if evs := cl.events(s.SessionID); len(evs) == 0 {
		t.Errorf("the client cannot read the session's events")
	}

	for _, tc := range []struct {
		token, method, path string
		body                any
		want                int
	}{
		{"", "GET", "/health", nil, http.StatusOK},
		{"", "GET", "/agents", nil, http.StatusUnauthorized},
		{"", "POST", "/runs", map[string]any{"agent_name": "probe"}, http.StatusUnauthorized},
		{"", "GET", "/sessions/" + s.SessionID, nil, http.StatusUnauthorized},
		{"", "POST", "/runner/register", map[string]any{"hostname": "x"}, http.StatusUnauthorized},
		{"wrong-token", "GET", "/agents", nil, http.StatusUnauthorized},
		{client, "GET", "/runners", nil, http.StatusForbidden},
		{client, "POST", "/agents", map[string]any{"name": "sneaky", "type": "agent"}, http.StatusForbidden},
		{client, "DELETE", "/agents/probe", nil, http.StatusForbidden},
		{client, "POST", "/runner/register", map[string]any{"hostname": "x"}, http.StatusForbidden},
		{runnerTok, "GET", "/runners", nil, http.StatusForbidden},
		{runnerTok, "GET", "/runs", nil, http.StatusForbidden},
		{client, "GET", "/agents", nil, http.StatusOK},
		{admin, "GET", "/runners", nil, http.StatusOK},
		{admin, "GET", "/runs", nil, http.StatusOK},
	} {
		status, body, hdr := co.api(tc.token).do(tc.method, tc.path, tc.body)
		if status != tc.want {
			t.Errorf("%s %s with token %q: %d %s, want %d", tc.method, tc.path, tc.token, status, body, tc.want)
			continue
		}
		if status >= 400 {
			var e map[string]any
			if json.Unmarshal(body, &e) != nil || e["error"] == nil || e["message"] == nil {
				t.Errorf("%s %s: error body %s is not {error, message}", tc.method, tc.path, body)
			}
		}
		if status == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s %s: 401 without WWW-Authenticate: Bearer (got %q)", tc.method, tc.path, hdr.Get("WWW-Authenticate"))
		}
	}
	if ag := co.admin().agents()["sneaky"]; ag != nil {
		t.Errorf("a forbidden POST /agents created an agent")
	}

	// A runner with a wrong token gives up at once: registration is refused, not retried forever.
	bad := c.start("bad-runner", "runner", []string{"-coordinator", co.url, "-blueprints-dir", c.path("runner", "blueprints"),
		"-project-dir", c.path("runner", "project"), "-token", "not-the-runner-token"}, "ORCHESTRATOR_RUNNER_TOKEN=")
	if !bad.waitExit(startTimeout) {
		t.Fatalf("a runner with a wrong token still runs after %s", startTimeout)
	}
	if out := bad.output(); bad.waitErr == nil || !strings.Contains(out, "register runner") || !strings.Contains(out, "token") {
		t.Errorf("runner with a wrong token: %s, output:\n%s\nwant a non-zero exit that says the registration's token was refused", bad.status(), out)
	}
}
