//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/apidoc"
)

// The API's OpenAPI description (docs/openapi.yaml), loaded once. Every answer the api helper receives
// is checked against it (checkAnswer), so every test that makes raw calls checks the description too.
var (
	apiDocOnce sync.Once
	apiDoc     *apidoc.Doc
	apiDocErr  error
)

func loadAPIDoc() (*apidoc.Doc, error) {
	apiDocOnce.Do(func() { apiDoc, apiDocErr = apidoc.Load("../docs/openapi.yaml") })
	return apiDoc, apiDocErr
}

// checkAnswer fails t unless the answer is one docs/openapi.yaml documents: a status listed for its route,
// a documented media type, and a body that matches the schema (see apidoc.Doc.CheckResponse). seen, when
// set, records it.
func checkAnswer(t *testing.T, resp *http.Response, body []byte, seen *answerLog) {
	t.Helper()
	doc, err := loadAPIDoc()
	if err != nil {
		t.Errorf("openapi: loading the description: %v", err)
		return
	}
	req := resp.Request // the request answered, after any redirect
	if err := doc.CheckResponse(req.Method, req.URL.EscapedPath(), resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("openapi: %v", err)
	}
	if seen != nil {
		if op, _ := doc.Match(req.Method, req.URL.EscapedPath()); op != nil {
			seen.add(op.String(), resp.StatusCode)
		}
	}
}

// answerLog records the statuses each documented route answered.
type answerLog struct {
	mu       sync.Mutex
	statuses map[string][]int
}

func (l *answerLog) add(route string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.statuses == nil {
		l.statuses = map[string][]int{}
	}
	if !slices.Contains(l.statuses[route], status) {
		l.statuses[route] = append(l.statuses[route], status)
	}
}

// missing lists the documented routes that did not answer both a success (2xx) and an error (4xx).
func (l *answerLog) missing(doc *apidoc.Doc) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, op := range doc.Operations() {
		var ok2, ok4 bool
		for _, st := range l.statuses[op.String()] {
			ok2 = ok2 || st/100 == 2
			ok4 = ok4 || st/100 == 4
		}
		if !ok2 || !ok4 {
			out = append(out, fmt.Sprintf("%s (answered %v)", op, l.statuses[op.String()]))
		}
	}
	return out
}

// describe is a short form of an answer for failure messages.
func describe(status int, body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Sprintf("%d %s", status, s)
}

// TestOpenAPIEveryRoute calls every documented route of a real coordinator at least once with success and
// once with a typical error, through the api helper, which checks each answer against docs/openapi.yaml;
// then it checks that no route was left out. Runner routes are called as a runner would, by a runner this
// test registers and drives by hand.
func TestOpenAPIEveryRoute(t *testing.T) {
	t.Parallel()
	_, co, _ := securedCluster(t, "oa-task")
	seen := &answerLog{}
	as := func(token string) *api {
		a := co.api(token)
		a.seen = seen
		return a
	}
	admin, client, runnerTok, anon := as(secAdmin), as(secClient), as(secRunner), as("")
	expect := func(a *api, want int, method, path string, body any, header ...string) []byte {
		t.Helper()
		status, data, _ := a.do(method, path, body, header...)
		if status != want {
			t.Fatalf("%s %s: %s, want %d", method, path, describe(status, data), want)
		}
		return data
	}
	decode := func(data []byte, v any) {
		t.Helper()
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("decoding %s: %v", data, err)
		}
	}

	// Health.
	expect(anon, http.StatusOK, "GET", "/health", nil)
	expect(anon, http.StatusBadRequest, "GET", "/health?x=%FF", nil) // not UTF-8
	expect(anon, http.StatusOK, "GET", "/ready", nil)
	expect(anon, http.StatusBadRequest, "GET", "/ready?x=%00", nil)

	// The dashboard (the example coordinator serves it unless -ui=false).
	expect(anon, http.StatusOK, "GET", "/ui/", nil)
	expect(anon, http.StatusBadRequest, "GET", "/ui/?x=%00", nil)

	// Metrics (served by default, to admin and metrics tokens).
	if got := string(expect(admin, http.StatusOK, "GET", "/metrics", nil)); !strings.Contains(got, "orchestrator_runners_online") {
		t.Errorf("GET /metrics lacks orchestrator_runners_online:\n%.500s", got)
	}
	expect(client, http.StatusForbidden, "GET", "/metrics", nil)
	expect(anon, http.StatusUnauthorized, "GET", "/metrics", nil)

	// Agents.
	expect(client, http.StatusOK, "GET", "/agents", nil)
	expect(client, http.StatusOK, "GET", "/agents?tags=e2e&type=deterministic", nil)
	expect(client, http.StatusBadRequest, "GET", "/agents?type=robot", nil)
	expect(anon, http.StatusUnauthorized, "GET", "/agents", nil)
	expect(runnerTok, http.StatusForbidden, "GET", "/agents", nil)
	expect(client, http.StatusOK, "GET", "/agents/oa-task", nil)
	expect(client, http.StatusNotFound, "GET", "/agents/nope", nil)
	expect(client, http.StatusOK, "GET", "/agents/oa-task/schema", nil)
	expect(client, http.StatusNotFound, "GET", "/agents/nope/schema", nil)
	ai := map[string]any{"name": "oa-ai", "type": "agent", "description": "driven by hand", "demands": map[string]any{"tags": []string{"oa-fake"}}}
	expect(admin, http.StatusCreated, "POST", "/agents", ai)
	expect(admin, http.StatusConflict, "POST", "/agents", ai)
	expect(client, http.StatusForbidden, "POST", "/agents", ai)
	expect(admin, http.StatusBadRequest, "POST", "/agents", map[string]any{"name": "oa-typo", "type": "agent", "sytem_prompt": "x"})
	ai["description"] = "replaced"
	expect(admin, http.StatusOK, "PUT", "/agents/oa-ai", ai)
	expect(admin, http.StatusNotFound, "PUT", "/agents/nope", map[string]any{"name": "nope", "type": "agent"})
	expect(admin, http.StatusOK, "PATCH", "/agents/oa-ai", map[string]any{"description": "patched", "system_prompt": "be brief"})
	expect(admin, http.StatusConflict, "PATCH", "/agents/oa-task", map[string]any{"description": "mine now"})
	expect(admin, http.StatusBadRequest, "PATCH", "/agents/oa-ai", "[1]")
	expect(admin, http.StatusCreated, "POST", "/agents", map[string]any{"name": "oa-gone", "type": "agent"})
	expect(admin, http.StatusNoContent, "DELETE", "/agents/oa-gone", nil)
	expect(admin, http.StatusNotFound, "DELETE", "/agents/oa-gone", nil)

	// Runs of the real runner's agent.
	var syncRun struct {
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
	}
	decode(expect(client, http.StatusCreated, "POST", "/runs?wait=60s", map[string]any{"agent_name": "oa-task", "mode": "sync", "parameters": map[string]any{"tag": "sync"}}), &syncRun)
	if syncRun.Status != "completed" {
		t.Fatalf("sync run ended %q", syncRun.Status)
	}
	body := expect(client, http.StatusBadRequest, "POST", "/runs", map[string]any{"agent_name": "oa-task", "parameters": map[string]any{"sleep_ms": "long"}})
	if code := errorCode(t, body); code != "parameter_validation_failed" {
		t.Fatalf("invalid parameters: code %q", code)
	}
	expect(client, http.StatusNotFound, "POST", "/runs", map[string]any{"agent_name": "nope"})
	expect(client, http.StatusRequestEntityTooLarge, "POST", "/runs", `{"agent_name":"oa-task","prompt":"`+strings.Repeat("a", 3<<20)+`"}`)
	expect(client, http.StatusOK, "GET", "/runs?agent_name=oa-task&limit=10", nil)
	expect(client, http.StatusBadRequest, "GET", "/runs?status=sleeping", nil)
	expect(client, http.StatusOK, "GET", "/runs/"+syncRun.RunID, nil)
	expect(client, http.StatusNotFound, "GET", "/runs/run_nope", nil)
	expect(client, http.StatusOK, "GET", "/runs/"+syncRun.RunID+"/result?wait=1s", nil)
	expect(client, http.StatusNotFound, "GET", "/runs/run_nope/result", nil)
	expect(client, http.StatusOK, "POST", "/runs/"+syncRun.RunID+"/stop", nil) // ended: nothing changes
	expect(client, http.StatusNotFound, "POST", "/runs/run_nope/stop", nil)

	// Sessions and events.
	sid := syncRun.SessionID
	expect(client, http.StatusOK, "GET", "/sessions?agent_name=oa-task&limit=5", nil)
	expect(client, http.StatusOK, "GET", "/sessions?order=newest", nil)
	expect(client, http.StatusBadRequest, "GET", "/sessions?status=sleeping", nil)
	expect(client, http.StatusOK, "GET", "/sessions/"+sid+"?wait=1s", nil)
	expect(client, http.StatusNotFound, "GET", "/sessions/ses_nope", nil)
	expect(client, http.StatusOK, "GET", "/sessions/"+sid+"/result?wait=1s", nil)
	expect(client, http.StatusBadRequest, "GET", "/sessions/"+sid+"/result?wait=forever", nil)
	expect(client, http.StatusOK, "POST", "/sessions/"+sid+"/stop", nil)
	expect(client, http.StatusNotFound, "POST", "/sessions/ses_nope/stop", nil)
	expect(client, http.StatusCreated, "POST", "/sessions/"+sid+"/events", map[string]any{"event_type": "progress", "message": "annotated"})
	expect(client, http.StatusBadRequest, "POST", "/sessions/"+sid+"/events", map[string]any{"event_type": "Not A Word"})
	expect(client, http.StatusOK, "GET", "/sessions/"+sid+"/events?after=0&limit=100", nil)
	expect(client, http.StatusBadRequest, "GET", "/sessions/"+sid+"/events?after=-1", nil)
	for _, stream := range []struct{ path, accept string }{
		{"/sessions/" + sid + "/events", "text/event-stream"},
		{"/sessions/" + sid + "/events/stream", ""},
	} {
		// The session has ended: the stream sends its events, then the end frame, and closes.
		data := expect(client, http.StatusOK, "GET", stream.path, nil, "Accept", stream.accept, "Last-Event-ID", "1")
		frames := apidoc.ParseEventStream(data)
		if len(frames) < 2 || frames[len(frames)-1].Event != "end" {
			t.Fatalf("GET %s: frames %+v, want events and then an end frame", stream.path, frames)
		}
	}
	expect(client, http.StatusBadRequest, "GET", "/sessions/"+sid+"/events/stream", nil, "Last-Event-ID", "yesterday")
	expect(client, http.StatusNotFound, "GET", "/sessions/ses_nope/events/stream", nil)

	// A session that is in progress cannot be deleted: an AI run that nobody takes yet.
	var pending started
	decode(expect(client, http.StatusCreated, "POST", "/runs", map[string]any{"agent_name": "oa-ai", "prompt": "wait", "demands": map[string]any{"tags": []string{"oa-nobody"}}}), &pending)
	expect(client, http.StatusConflict, "DELETE", "/sessions/"+pending.SessionID, nil)
	expect(client, http.StatusOK, "POST", "/sessions/"+pending.SessionID+"/stop", nil) // a pending run stops at once
	expect(client, http.StatusNoContent, "DELETE", "/sessions/"+pending.SessionID, nil)
	expect(client, http.StatusNotFound, "DELETE", "/sessions/"+pending.SessionID, nil)

	// MCP (stateless: POST only).
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json"}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"openapi-test","version":"1"}}}`
	expect(client, http.StatusOK, "POST", "/mcp", initialize, mcpHeaders...)
	expect(runnerTok, http.StatusForbidden, "POST", "/mcp", initialize, mcpHeaders...)
	expect(client, http.StatusMethodNotAllowed, "GET", "/mcp", nil, "Accept", "text/event-stream")
	expect(client, http.StatusMethodNotAllowed, "DELETE", "/mcp", nil)

	// Runner administration.
	expect(admin, http.StatusOK, "GET", "/runners", nil)
	expect(client, http.StatusForbidden, "GET", "/runners", nil)
	var doomed orchestrator.Registration
	decode(expect(runnerTok, http.StatusOK, "POST", "/runner/register", map[string]any{"hostname": "oa-doomed", "project_dir": "/nowhere"}), &doomed)
	expect(admin, http.StatusNoContent, "DELETE", "/runners/"+doomed.RunnerID, nil)
	expect(admin, http.StatusNotFound, "DELETE", "/runners/lnch_nope", nil)

	// The runner protocol, by a runner driven by hand: it takes the AI agent's runs (their demands name
	// its tag) and reports each end.
	fakeReg := map[string]any{"hostname": "oa-fake", "project_dir": "/oa", "tags": []string{"oa-fake"}, "require_matching_tags": true, "accepts_agents": true}
	var reg orchestrator.Registration
	decode(expect(runnerTok, http.StatusOK, "POST", "/runner/register", fakeReg), &reg)
	expect(runnerTok, http.StatusConflict, "POST", "/runner/register", fakeReg) // online, and no secret presented
	expect(runnerTok, http.StatusBadRequest, "POST", "/runner/register", "[]")
	fake := as(httpapi.RunnerCredential(reg.RunnerID, reg.RunnerSecret))
	expect(fake, http.StatusNoContent, "POST", "/runner/heartbeat", map[string]any{})
	expect(fake, http.StatusForbidden, "POST", "/runner/heartbeat", map[string]any{"runner_id": "lnch_someoneelse"})
	expect(fake, http.StatusNoContent, "GET", "/runner/runs?max=0&wait=0", nil)
	expect(fake, http.StatusBadRequest, "GET", "/runner/runs?max=-1", nil)
	runIDs := map[string]bool{}
	for range 4 {
		var s started
		decode(expect(client, http.StatusCreated, "POST", "/runs", map[string]any{"agent_name": "oa-ai", "prompt": "hello"}), &s)
		runIDs[s.RunID] = true
	}
	var claimed []string
	waitFor(t, runTimeout, "the hand-driven runner to claim 4 runs", func() (bool, string) {
		expect(fake, http.StatusNoContent, "POST", "/runner/heartbeat", map[string]any{})
		status, data, _ := fake.do("GET", "/runner/runs?max=4&wait=2s", nil)
		if status == http.StatusOK {
			var w orchestrator.Work
			decode(data, &w)
			for _, a := range w.Runs {
				if !runIDs[a.Run.ID] {
					t.Fatalf("the runner got run %s, which this test did not start", a.Run.ID)
				}
				claimed = append(claimed, a.Run.ID)
			}
		} else if status != http.StatusNoContent {
			t.Fatalf("GET /runner/runs: %s", describe(status, data))
		}
		return len(claimed) == 4, fmt.Sprintf("claimed %v", claimed)
	})
	result := map[string]any{"result_type": "agent", "result_text": "done"}
	expect(fake, http.StatusNoContent, "POST", "/runner/runs/"+claimed[0]+"/started", map[string]any{})

	// Human input: while its run is running, a question is asked on the session (as its agent would,
	// through its gateway), listed, read and answered once.
	var asking orchestrator.Run
	decode(expect(client, http.StatusOK, "GET", "/runs/"+claimed[0], nil), &asking)
	var question orchestrator.InputRequest
	decode(expect(client, http.StatusCreated, "POST", "/sessions/"+asking.SessionID+"/input-requests",
		map[string]any{"prompt": "Which colour?", "timeout_seconds": 60}), &question)
	expect(client, http.StatusConflict, "POST", "/sessions/"+sid+"/input-requests", map[string]any{"prompt": "Too late?"})
	expect(client, http.StatusOK, "GET", "/input-requests?status=open&session_id="+asking.SessionID, nil)
	expect(client, http.StatusBadRequest, "GET", "/input-requests?status=bogus", nil)
	expect(client, http.StatusOK, "GET", "/input-requests/"+question.ID, nil)
	expect(client, http.StatusNotFound, "GET", "/input-requests/inp_nope", nil)
	expect(client, http.StatusOK, "POST", "/input-requests/"+question.ID+"/answer", map[string]any{"answer": map[string]any{"answer": "blue"}})
	expect(client, http.StatusConflict, "POST", "/input-requests/"+question.ID+"/answer", map[string]any{"answer": map[string]any{"answer": "red"}})
	expect(fake, http.StatusNoContent, "POST", "/runner/runs/"+claimed[0]+"/completed", map[string]any{"result": result})
	expect(fake, http.StatusNoContent, "POST", "/runner/runs/"+claimed[1]+"/failed", map[string]any{"error": "it broke"})
	expect(fake, http.StatusNoContent, "POST", "/runner/runs/"+claimed[2]+"/stopped", map[string]any{"error": "stopped by hand"})
	for _, action := range []string{"started", "completed", "failed", "stopped"} {
		// The real runner held the sync run.
		expect(fake, http.StatusConflict, "POST", "/runner/runs/"+syncRun.RunID+"/"+action, map[string]any{"result": result})
	}
	var answer struct {
		Results []struct {
			RunID  string `json:"run_id"`
			Status int    `json:"status"`
		} `json:"results"`
	}
	decode(expect(fake, http.StatusOK, "POST", "/runner/reports", map[string]any{"reports": []map[string]any{
		{"run_id": claimed[3], "status": "completed", "result": result},
		{"run_id": syncRun.RunID, "status": "completed", "result": result},
	}}), &answer)
	if len(answer.Results) != 2 || answer.Results[0].Status != http.StatusNoContent || answer.Results[1].Status != http.StatusConflict {
		t.Fatalf("POST /runner/reports: results %+v, want 204 then 409", answer.Results)
	}
	expect(fake, http.StatusBadRequest, "POST", "/runner/reports", map[string]any{"reports": []any{}})
	expect(fake, http.StatusForbidden, "DELETE", "/runner/lnch_someoneelse", nil)
	expect(fake, http.StatusNoContent, "DELETE", "/runner/"+reg.RunnerID, nil)
	expect(fake, http.StatusUnauthorized, "POST", "/runner/heartbeat", map[string]any{}) // gone: register again

	// Schedules: created paused (monthly, so it would not fire during the test anyway), read, changed,
	// deleted; a runner's credential reads them (tested in e2e/schedules_test.go and httpapi).
	var sched orchestrator.Schedule
	decode(expect(client, http.StatusCreated, "POST", "/schedules", map[string]any{
		"agent_name": "oa-task", "parameters": map[string]any{"tag": "cron"}, "cron": "0 3 1 * *", "timezone": "Europe/Paris", "paused": true,
	}), &sched)
	expect(client, http.StatusBadRequest, "POST", "/schedules", map[string]any{"agent_name": "oa-task", "cron": "every day"})
	expect(client, http.StatusOK, "GET", "/schedules?agent_name=oa-task&limit=5", nil)
	expect(client, http.StatusBadRequest, "GET", "/schedules?limit=-1", nil)
	expect(client, http.StatusOK, "GET", "/schedules/"+sched.ID, nil)
	expect(client, http.StatusNotFound, "GET", "/schedules/sch_nope", nil)
	expect(client, http.StatusOK, "PATCH", "/schedules/"+sched.ID, map[string]any{"overlap": "queue"})
	expect(client, http.StatusBadRequest, "PATCH", "/schedules/"+sched.ID, map[string]any{"timezone": "Nowhere/Else"})
	expect(client, http.StatusNoContent, "DELETE", "/schedules/"+sched.ID, nil)
	expect(client, http.StatusNotFound, "DELETE", "/schedules/"+sched.ID, nil)

	// The agent tree, artifacts and re-runs of the sync run's session. (The OpenAPI matcher takes one path
	// segment per parameter: nested artifact names are tested in httpapi.)
	expect(client, http.StatusOK, "GET", "/sessions/"+sid+"/tree?depth=1", nil)
	expect(client, http.StatusNotFound, "GET", "/sessions/ses_nope/tree", nil)
	expect(client, http.StatusCreated, "PUT", "/sessions/"+sid+"/artifacts/notes.txt", "hello", "Content-Type", "text/plain")
	expect(client, http.StatusBadRequest, "PUT", "/sessions/"+sid+"/artifacts/a%5Cb.txt", "hello", "Content-Type", "text/plain")
	expect(client, http.StatusOK, "GET", "/sessions/"+sid+"/artifacts", nil)
	expect(client, http.StatusNotFound, "GET", "/sessions/ses_nope/artifacts", nil)
	if got := string(expect(client, http.StatusOK, "GET", "/sessions/"+sid+"/artifacts/notes.txt", nil)); got != "hello" {
		t.Errorf("artifact downloaded as %q", got)
	}
	expect(client, http.StatusNotFound, "GET", "/sessions/"+sid+"/artifacts/missing.txt", nil)
	expect(client, http.StatusCreated, "POST", "/sessions/"+sid+"/rerun", map[string]any{"parameters": map[string]any{"tag": "again"}})
	expect(client, http.StatusNotFound, "POST", "/sessions/ses_nope/rerun", map[string]any{})
	expect(client, http.StatusOK, "POST", "/sessions/rerun", map[string]any{"status": []string{"completed"}, "agent_name": "oa-task", "dry_run": true})
	expect(client, http.StatusBadRequest, "POST", "/sessions/rerun", map[string]any{"status": []string{"running"}})

	doc, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	// A stateless MCP server has no success for GET and DELETE.
	var missing []string
	for _, m := range seen.missing(doc) {
		if !strings.HasPrefix(m, "GET /mcp ") && !strings.HasPrefix(m, "DELETE /mcp ") {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		t.Errorf("routes this test did not call with both a success and an error — call them:\n%s", strings.Join(missing, "\n"))
	}
}
