package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/gateway"
)

// TestForeignAndUnknownIDsReadAlike: for every route that takes a run or session id, an id that exists
// but belongs to another run and an id that does not exist get the same status, code and message (up to
// the id itself), so an executor cannot probe which ids exist.
func TestForeignAndUnknownIDsReadAlike(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	a := must[*orchestrator.StartRunResult](t, "StartRun a")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a"}))
	b := must[*orchestrator.StartRunResult](t, "StartRun b")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "b"}))
	gw := gateway.New(coord, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	env, closeA := gw.Open(assignment(a))
	defer closeA()
	base, token := env[orchestrator.EnvAPIURL], env[orchestrator.EnvAPIToken]

	type answer struct {
		status int
		shape  string // the error body, the id replaced by ID
	}
	call := func(method, path, body, id string) answer {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		if rd != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || m["error"] == nil {
			t.Fatalf("%s %s: %d %s, want a JSON error", method, path, resp.StatusCode, data)
		}
		return answer{resp.StatusCode, strings.ReplaceAll(string(data), id, "ID")}
	}
	routes := []struct {
		name string
		// req returns the request for id.
		req func(id string) (method, path, body string)
		// ids are the foreign and the unknown id.
		foreign, unknown string
	}{
		{"GET /runs/{id}", func(id string) (string, string, string) { return "GET", "/runs/" + id, "" }, b.RunID, "run_01NOSUCHRUN00000000000000"},
		{"GET /sessions/{id}", func(id string) (string, string, string) { return "GET", "/sessions/" + id, "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"GET /sessions/{id}?wait", func(id string) (string, string, string) { return "GET", "/sessions/" + id + "?wait=10ms", "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"GET /sessions/{id}/result", func(id string) (string, string, string) { return "GET", "/sessions/" + id + "/result", "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"GET /sessions/{id}/events", func(id string) (string, string, string) { return "GET", "/sessions/" + id + "/events", "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"GET /sessions/{id}/events/stream", func(id string) (string, string, string) { return "GET", "/sessions/" + id + "/events/stream", "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"POST /sessions/{id}/stop", func(id string) (string, string, string) { return "POST", "/sessions/" + id + "/stop", "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"POST /sessions/{id}/events", func(id string) (string, string, string) {
			return "POST", "/sessions/" + id + "/events", `{"event_type":"progress","message":"m"}`
		}, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"DELETE /sessions/{id}", func(id string) (string, string, string) { return "DELETE", "/sessions/" + id, "" }, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
		{"POST /runs (resume)", func(id string) (string, string, string) {
			return "POST", "/runs", `{"type":"resume","session_id":"` + id + `","prompt":"more"}`
		}, b.SessionID, "ses_01NOSUCHSESSION0000000000"},
	}
	for _, rt := range routes {
		fm, fp, fb := rt.req(rt.foreign)
		um, up, ub := rt.req(rt.unknown)
		foreign, unknown := call(fm, fp, fb, rt.foreign), call(um, up, ub, rt.unknown)
		if foreign != unknown {
			t.Errorf("%s: a foreign id answers %d %s, an unknown one %d %s; want the same", rt.name,
				foreign.status, foreign.shape, unknown.status, unknown.shape)
		}
		if foreign.status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", rt.name, foreign.status)
		}
		if strings.Contains(foreign.shape, b.SessionID) {
			t.Errorf("%s: the answer names the other run's session: %s", rt.name, foreign.shape)
		}
	}
}
