//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// The tokens of the tests in this file: runners must hold their own credentials apart from these.
const (
	secAdmin  = "sec-admin-token"
	secClient = "sec-client-token"
	secRunner = "sec-runner-token"
)

// securedCluster starts a coordinator with tokens and a real runner (examples/runner, the shared runner
// token) that owns agent, a testagent blueprint.
func securedCluster(t *testing.T, agent string) (*cluster, *coordinator, *runner) {
	t.Helper()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{adminToken: secAdmin, clientToken: secClient, runnerToken: secRunner})
	r := c.startRunner(co, runnerOpts{name: agent + "-runner", token: secRunner, blueprints: []string{testAgent(agent)}})
	return c, co, r
}

// errorCode decodes an error body's code.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Message == "" {
		t.Fatalf("error body %s is not {error, message}", body)
	}
	return e.Error
}

// registerImpostor registers a runner of its own over HTTP with the shared runner token, as a process that
// got that token could, and returns its id and credential.
func registerImpostor(t *testing.T, co *coordinator, host string) (string, string) {
	t.Helper()
	var reg orchestrator.Registration
	co.api(secRunner).json("POST", "/runner/register", map[string]any{"hostname": host, "project_dir": "/nowhere"}, http.StatusOK, &reg)
	if reg.RunnerID == "" || !strings.HasPrefix(reg.RunnerSecret, ids.RunnerSecret) {
		t.Fatalf("registration answer %+v lacks runner_id or runner_secret", reg)
	}
	return reg.RunnerID, httpapi.RunnerCredential(reg.RunnerID, reg.RunnerSecret)
}

// blockingRun starts a run of agent that blocks until release exists, and waits until it runs.
func blockingRun(t *testing.T, c *cluster, co *coordinator, agent, release string) started {
	t.Helper()
	cl := co.api(secClient)
	s := cl.startRun(map[string]any{"agent_name": agent, "parameters": map[string]any{"release": release}})
	cl.waitStatus(s.SessionID, runTimeout, "running")
	return s
}

// TestForgedReportRefused: a report on a run another runner holds is refused — with the shared runner
// token, with another runner's credential naming the holder or not, one by one or in a batch — and the
// session goes on untouched until its own runner reports it.
func TestForgedReportRefused(t *testing.T) {
	t.Parallel()
	c, co, victim := securedCluster(t, "victim-task")
	release := c.path("release")
	s := blockingRun(t, c, co, "victim-task", release)
	_, impostor := registerImpostor(t, co, "impostor-host")

	forged := map[string]any{"runner_id": victim.id, "result": map[string]any{"result_type": "deterministic", "result_text": "forged", "exit_code": 0}}
	forgedAnon := map[string]any{"result": map[string]any{"result_type": "deterministic", "result_text": "forged", "exit_code": 0}}
	for _, tc := range []struct {
		what, token string
		body        any
		status      int
		code        string
	}{
		{"shared runner token, the holder's id", secRunner, forged, http.StatusForbidden, "forbidden"},
		{"another runner's credential, the holder's id", impostor, forged, http.StatusForbidden, "runner_mismatch"},
		{"another runner's credential, its own id", impostor, forgedAnon, http.StatusConflict, "run_not_held"},
	} {
		for _, action := range []string{"completed", "failed", "started"} {
			status, body, _ := co.api(tc.token).do("POST", "/runner/runs/"+s.RunID+"/"+action, tc.body)
			if status != tc.status || errorCode(t, body) != tc.code {
				t.Errorf("%s, %s: %d %s, want %d %s", tc.what, action, status, body, tc.status, tc.code)
			}
		}
	}
	// The batch route checks every report.
	batch := map[string]any{"reports": []map[string]any{
		{"runner_id": victim.id, "run_id": s.RunID, "status": "completed", "result": map[string]any{"result_text": "forged"}},
		{"run_id": s.RunID, "status": "failed", "error": "forged"},
	}}
	status, body, _ := co.api(secRunner).do("POST", "/runner/reports", batch)
	if status != http.StatusForbidden {
		t.Errorf("batch with the shared runner token: %d %s, want 403", status, body)
	}
	var out struct {
		Results []struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		} `json:"results"`
	}
	co.api(impostor).json("POST", "/runner/reports", batch, http.StatusOK, &out)
	if len(out.Results) != 2 || out.Results[0].Status != 403 || out.Results[0].Error != "runner_mismatch" ||
		out.Results[1].Status != 409 || out.Results[1].Error != "run_not_held" {
		t.Errorf("batch with another runner's credential: %+v, want 403 runner_mismatch and 409 run_not_held", out.Results)
	}

	// Untouched: still running, no result, no forged event.
	sess := co.api(secAdmin).session(s.SessionID)
	if sess.Status != orchestrator.SessionRunning || sess.Result != nil {
		t.Fatalf("after the forged reports the session is %s with result %+v, want running without one", sess.Status, sess.Result)
	}
	for _, ev := range co.api(secAdmin).events(s.SessionID) {
		if strings.Contains(mustJSON(t, ev), "forged") {
			t.Fatalf("a forged report left an event: %s", mustJSON(t, ev))
		}
	}
	touch(t, release)
	res := co.api(secClient).result(s.SessionID)
	if res.Status != "completed" || decodeAgentOutput(t, res.Result).RunID != s.RunID {
		t.Fatalf("the session's own end: %s", mustJSON(t, res))
	}
}

// TestRunnerHijackRefused: registering with a live runner's hostname, project directory and profile,
// with the shared runner token and no secret, is 409 — the runner keeps its identity, its run and its
// agent, and the run completes.
func TestRunnerHijackRefused(t *testing.T) {
	t.Parallel()
	c, co, victim := securedCluster(t, "held-task")
	release := c.path("release")
	s := blockingRun(t, c, co, "held-task", release)
	admin := co.api(secAdmin)
	var before *orchestrator.RunnerInfo
	for _, ri := range admin.runners() {
		if ri.ID == victim.id {
			before = ri
		}
	}
	if before == nil {
		t.Fatalf("runner %s is not listed", victim.id)
	}

	hijack := map[string]any{
		"hostname": before.Hostname, "project_dir": before.ProjectDir, "executor_type": before.ExecutorType,
		"executor_profile": before.ExecutorProfile, "blueprints": []json.RawMessage{json.RawMessage(testAgent("held-task"))},
	}
	for _, secret := range []string{"", ids.RunnerSecret + "guessed"} {
		hijack["runner_secret"] = secret
		status, body, _ := co.api(secRunner).do("POST", "/runner/register", hijack)
		if status != http.StatusConflict || errorCode(t, body) != "runner_identity_in_use" {
			t.Fatalf("hijacking registration (secret %q): %d %s, want 409 runner_identity_in_use", secret, status, body)
		}
	}

	var after *orchestrator.RunnerInfo
	for _, ri := range admin.runners() {
		if ri.ID == victim.id {
			after = ri
		}
	}
	if after == nil || after.Status != orchestrator.RunnerOnline || !after.RegisteredAt.Equal(before.RegisteredAt) {
		t.Fatalf("the runner after the hijack attempts: %s, was %s", mustJSON(t, after), mustJSON(t, before))
	}
	if ag := admin.agents()["held-task"]; ag == nil || ag.RunnerID != victim.id {
		t.Fatalf("held-task after the hijack attempts: %s, want owned by %s", mustJSON(t, ag), victim.id)
	}
	if sess := admin.session(s.SessionID); sess.Status != orchestrator.SessionRunning {
		t.Fatalf("the runner's session after the hijack attempts: %s (%q)", sess.Status, sess.Error)
	}
	touch(t, release)
	if res := co.api(secClient).result(s.SessionID); res.Status != "completed" {
		t.Fatalf("the runner's run after the hijack attempts: %s", mustJSON(t, res))
	}
	// And it takes new work, under the same registration.
	s2 := co.api(secClient).startRun(map[string]any{"agent_name": "held-task"})
	if res := co.api(secClient).result(s2.SessionID); res.Status != "completed" {
		t.Fatalf("a later run: %s", mustJSON(t, res))
	}
	if n := strings.Count(victim.output(), "msg=registered "); n != 1 {
		t.Errorf("the runner registered %d times, want once:\n%s", n, victim.output())
	}
}

// TestRunnerCredentialsCannotReachOtherSessions: with the shared runner token or a runner's credential,
// listing every session, reading another client's session and stopping it are refused, and a session
// outside the runner's scope is answered as one that does not exist.
func TestRunnerCredentialsCannotReachOtherSessions(t *testing.T) {
	t.Parallel()
	c, co, r := securedCluster(t, "private-task")
	release := c.path("release")
	s := blockingRun(t, c, co, "private-task", release)
	_, impostor := registerImpostor(t, co, "impostor-host")
	// The shared runner token only registers: even the agents are not for it.
	if status, body, _ := co.api(secRunner).do("GET", "/agents", nil); status != http.StatusForbidden {
		t.Errorf("shared runner token: GET /agents: %d %s, want 403", status, body)
	}

	type call struct {
		method, path string
		body         any
	}
	denied := []call{
		{"GET", "/sessions", nil},
		{"GET", "/sessions?parent_session_id=" + s.SessionID, nil},
		{"GET", "/sessions/" + s.SessionID, nil},
		{"GET", "/sessions/" + s.SessionID + "/result", nil},
		{"GET", "/sessions/" + s.SessionID + "/events", nil},
		{"POST", "/sessions/" + s.SessionID + "/events", map[string]any{"event_type": "progress", "message": "injected"}},
		{"POST", "/sessions/" + s.SessionID + "/stop", nil},
		{"DELETE", "/sessions/" + s.SessionID, nil},
		{"GET", "/runs", nil},
		{"GET", "/runs/" + s.RunID, nil},
		{"POST", "/runs/" + s.RunID + "/stop", nil},
		{"POST", "/runs", map[string]any{"agent_name": "private-task", "parent_session_id": s.SessionID}},
		{"GET", "/runners", nil},
		{"DELETE", "/runners/" + r.id, nil},
	}
	for _, cl := range denied {
		status, body, _ := co.api(secRunner).do(cl.method, cl.path, cl.body)
		if status != http.StatusForbidden {
			t.Errorf("shared runner token: %s %s: %d %s, want 403", cl.method, cl.path, status, body)
		}
		status, body, _ = co.api(impostor).do(cl.method, cl.path, cl.body)
		if status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("another runner's credential: %s %s: %d %s, want 403 or 404", cl.method, cl.path, status, body)
		}
		// Outside the runner's scope is what does not exist.
		if status == http.StatusNotFound {
			toUnknown := strings.NewReplacer(s.SessionID, "ses_unknown", s.RunID, "run_unknown")
			var ub any
			if cl.body != nil {
				ub = toUnknown.Replace(mustJSON(t, cl.body))
			}
			ustatus, ubody, _ := co.api(impostor).do(cl.method, toUnknown.Replace(cl.path), ub)
			if ustatus != status || strings.NewReplacer(s.SessionID, "X", s.RunID, "X").Replace(string(body)) !=
				strings.NewReplacer("ses_unknown", "X", "run_unknown", "X").Replace(string(ubody)) {
				t.Errorf("%s %s: %d %s, but for an unknown id %d %s: want the same answer", cl.method, cl.path, status, body, ustatus, ubody)
			}
		}
	}
	sess := co.api(secAdmin).session(s.SessionID)
	if sess.Status != orchestrator.SessionRunning {
		t.Fatalf("the session after the refused calls: %s (%q), want running", sess.Status, sess.Error)
	}
	for _, ev := range co.api(secAdmin).events(s.SessionID) {
		if strings.Contains(mustJSON(t, ev), "injected") {
			t.Fatalf("a refused call appended an event: %s", mustJSON(t, ev))
		}
	}
	touch(t, release)
	if res := co.api(secClient).result(s.SessionID); res.Status != "completed" {
		t.Fatalf("the session: %s", mustJSON(t, res))
	}
}

// TestRunnerCredentialAcrossCoordinatorRestarts: the real runner with the shared runner token runs work
// end to end; across a coordinator restart on the same database its credential goes on working (no new
// registration), and against a coordinator that lost its database it registers again (its credential is
// refused there) and goes on.
func TestRunnerCredentialAcrossCoordinatorRestarts(t *testing.T) {
	t.Parallel()
	c, co, r := securedCluster(t, "steady-task")
	cl := co.api(secClient)
	run := func(what string) {
		t.Helper()
		s := cl.startRun(map[string]any{"agent_name": "steady-task", "parameters": map[string]any{"tag": what}})
		if res := cl.result(s.SessionID); res.Status != "completed" {
			t.Fatalf("%s: %s", what, mustJSON(t, res))
		}
	}
	run("first run")

	co.kill(t)
	co.restart(t)
	run("after a restart on the same database")
	if n := strings.Count(r.output(), "msg=registered "); n != 1 {
		t.Errorf("the runner registered %d times across a restart on the same database, want once", n)
	}

	co.kill(t)
	co.db = c.path("fresh.db")
	co.restart(t)
	waitFor(t, startTimeout, "the runner to register with the new coordinator", func() (bool, string) {
		ag := co.api(secAdmin).agents()["steady-task"]
		return ag != nil && ag.RunnerID == r.id, mustJSON(t, ag)
	})
	run("after a restart on a new database")
	if n := strings.Count(r.output(), "msg=registered "); n != 2 {
		t.Errorf("the runner registered %d times, want twice (once more for the new database)", n)
	}
	if r.exited() {
		t.Fatalf("the runner exited: %s", r.status())
	}
}
