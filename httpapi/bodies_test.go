package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// bodyRoutes are the routes that read a body; the others (the stops) ignore theirs.
var bodyRoutes = map[string]bool{
	"POST /agents":                     true,
	"PUT /agents/{name}":               true,
	"PATCH /agents/{name}":             true,
	"POST /runs":                       true,
	"POST /sessions/{id}/events":       true,
	"POST /runner/register":            true,
	"POST /runner/heartbeat":           true,
	"POST /runner/runs/{id}/started":   true,
	"POST /runner/runs/{id}/completed": true,
	"POST /runner/runs/{id}/failed":    true,
	"POST /runner/runs/{id}/stopped":   true,
}

// TestBadBodiesEveryRoute posts malformed, wrongly typed and oversized bodies to every route that takes
// one: each answer is a 4xx JSON error (400, or 413 for the oversized), never a 5xx.
func TestBadBodiesEveryRoute(t *testing.T) {
	t.Parallel()
	const limit = 4 << 10
	env := newEnv(t, Config{MaxBodyBytes: limit, MaxReportBytes: limit}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("some-agent")))

	deep := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	oversized := `{"x":"` + strings.Repeat("a", limit) + `"}`
	wrongTypes := `{"agent_name":5,"name":5,"hostname":5,"runner_id":5,"event_type":5,"tags":"x","events":5,"description":[]}`
	bodies := []struct {
		name   string
		body   string
		status int // 0: any 4xx
	}{
		{"empty", "", 400},
		{"whitespace", " \n\t", 400},
		{"truncated", `{"agent_name":`, 400},
		{"open brace", `{`, 400},
		{"not json", `agent_name=x`, 400},
		{"trailing value", `{} {}`, 400},
		{"trailing garbage", `{"a":1}x`, 400},
		{"string", `"str"`, 400},
		{"number", `123`, 400},
		{"huge number", `{"max_concurrent":1e400,"limit":1e400}`, 0},
		{"deep nesting", deep, 0},
		{"wrong types", wrongTypes, 400},
		{"null", `null`, 0},
		{"object array", `[{}]`, 0},
		{"empty array", `[]`, 0},
		{"array of junk", `[1,"a",null]`, 0},
		{"invalid utf8", "{\"agent_name\":\"\xff\xfe\"}", 0},
		{"oversized", oversized, 413},
	}
	for _, rd := range routeTable {
		if rd.Method != "POST" && rd.Method != "PUT" && rd.Method != "PATCH" {
			continue
		}
		reads := bodyRoutes[rd.String()]
		for _, b := range bodies {
			t.Run(rd.String()+"/"+b.name, func(t *testing.T) {
				rec := serve(env.handler, rd.Method, concretePath(rd.Pattern), adminTok, []byte(b.body))
				if rec.Code < 400 || rec.Code >= 500 {
					t.Fatalf("status %d, want 4xx; body %s", rec.Code, rec.Body)
				}
				m := jsonErrorBody(t, rec)
				if reads && b.status != 0 && rec.Code != b.status {
					t.Fatalf("status %d (%v), want %d; body %s", rec.Code, m["error"], b.status, rec.Body)
				}
			})
		}
	}
	for route := range bodyRoutes {
		found := false
		for _, rd := range routeTable {
			found = found || rd.String() == route
		}
		if !found {
			t.Errorf("bodyRoutes names %s, which is not a route", route)
		}
	}
}

// TestBadQueries: malformed query parameters are 400 and name the parameter.
func TestBadQueries(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{MaxWait: DefaultMaxWait}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	sid := res.SessionID
	for _, tc := range []struct {
		target string
		param  string
		header []string
	}{
		{"/runs?limit=abc", "limit", nil},
		{"/runs?limit=-1", "limit", nil},
		{"/runs?status=bogus", "status", nil},
		{"/runs?created_before=yesterday", "created_before", nil},
		{"/sessions?limit=1.5", "limit", nil},
		{"/sessions?status=pending,bogus", "status", nil},
		{"/sessions?ended_before=x", "ended_before", nil},
		{"/sessions?order=desc", "order", nil},
		{"/sessions/" + sid + "?wait=-1", "wait", nil},
		{"/sessions/" + sid + "/result?wait=-1s", "wait", nil},
		{"/sessions/" + sid + "/result?wait=abc", "wait", nil},
		{"/sessions/" + sid + "/result?wait=10m", "wait", nil},
		{"/sessions/" + sid + "/result?wait=301", "wait", nil},
		{"/sessions/" + sid + "/result?wait=NaN", "wait", nil},
		{"/sessions/" + sid + "/result?wait=Inf", "wait", nil},
		{"/sessions/" + sid + "/events?after=-1", "after", nil},
		{"/sessions/" + sid + "/events?after=x", "after", nil},
		{"/sessions/" + sid + "/events?limit=x", "limit", nil},
		{"/sessions/" + sid + "/events/stream", "Last-Event-ID", []string{"Last-Event-ID", "abc"}},
		{"/sessions/" + sid + "/events", "Last-Event-ID", []string{"Last-Event-ID", "-3", "Accept", "text/event-stream"}},
		{"/agents?type=robot", "type", nil},
		{"/runner/runs", "runner_id", nil},
		{"/runner/runs?runner_id=x&max=-1", "max", nil},
		{"/runner/runs?runner_id=x&wait=1h", "wait", nil},
	} {
		rec := serve(env.handler, "GET", tc.target, adminTok, nil, tc.header...)
		m := errorBody(t, rec, http.StatusBadRequest)
		if msg, _ := m["message"].(string); !strings.Contains(msg, tc.param) {
			t.Errorf("GET %s: message %q does not name %s", tc.target, msg, tc.param)
		}
	}
	// POST /runs?wait= is checked too.
	rec := serve(env.handler, "POST", "/runs?wait=forever", adminTok, []byte(`{"agent_name":"helper","prompt":"x","mode":"sync"}`))
	errorBody(t, rec, http.StatusBadRequest)

	// Accepted forms of a wait: a Go duration or seconds, up to MaxWait.
	for _, w := range []string{"0", "0.01", "10ms"} {
		rec := serve(env.handler, "GET", "/sessions/"+sid+"/result?wait="+w, adminTok, nil)
		if rec.Code != 200 {
			t.Errorf("wait=%s: %d %s", w, rec.Code, rec.Body)
		}
	}
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{{"1", time.Second}, {"1.5", 1500 * time.Millisecond}, {"300", 5 * time.Minute}, {"5m", 5 * time.Minute}, {"90s", 90 * time.Second}} {
		if got, err := parseWait("wait", tc.in, DefaultMaxWait); err != nil || got != tc.want {
			t.Errorf("parseWait(%s) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestUnknownRouteAndMethod: 404 and 405 are JSON too; 405 carries Allow.
func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	rec := serve(env.handler, "GET", "/nope", adminTok, nil)
	if m := errorBody(t, rec, http.StatusNotFound); m["error"] != "route_not_found" {
		t.Fatalf("unknown route: %s", rec.Body)
	}
	rec = serve(env.handler, "GET", "/nope", "", nil)
	errorBody(t, rec, http.StatusNotFound)
	rec = serve(env.handler, "DELETE", "/runs", adminTok, nil)
	if m := errorBody(t, rec, http.StatusMethodNotAllowed); m["error"] != "method_not_allowed" {
		t.Fatalf("wrong method: %s", rec.Body)
	}
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("405 Allow = %q, want GET and POST", allow)
	}
	rec = serve(env.handler, "PUT", "/health", "", nil)
	errorBody(t, rec, http.StatusMethodNotAllowed)
	rec = serve(env.handler, "GET", "/health", "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ok"`) {
		t.Fatalf("health: %d %s", rec.Code, rec.Body)
	}
}

// TestAppendEventShapes: one event, an array, or {"events": [...]}.
func TestAppendEventShapes(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	path := "/sessions/" + res.SessionID + "/events"
	for _, tc := range []struct {
		body string
		n    int
	}{
		{`{"event_type":"progress","message":"one"}`, 1},
		{`[{"event_type":"progress","message":"a"},{"event_type":"stderr","line":"b"}]`, 2},
		{`{"events":[{"event_type":"progress","message":"c"}]}`, 1},
		// An event whose payload has an "events" field is still one event.
		{`{"event_type":"progress","events":3}`, 1},
	} {
		rec := serve(env.handler, "POST", path, clientTok, []byte(tc.body))
		var out appendedEvents
		if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &out) != nil || len(out.Events) != tc.n {
			t.Fatalf("POST %s: %d %s, want 201 with %d events", tc.body, rec.Code, rec.Body, tc.n)
		}
		for _, ev := range out.Events {
			if ev.Seq == 0 || ev.SessionID != res.SessionID {
				t.Fatalf("stored event %+v", ev)
			}
		}
	}
	// The flat wire form comes back.
	rec := serve(env.handler, "GET", path+"?limit=1", clientTok, nil)
	var page struct {
		Events  []map[string]any `json:"events"`
		LastSeq int64            `json:"last_seq"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Events) != 1 {
		t.Fatalf("GET events: %v %s", err, rec.Body)
	}
	ev := page.Events[0]
	if ev["event_type"] != "progress" || ev["message"] != "one" || ev["session_id"] != res.SessionID || ev["seq"] != float64(page.LastSeq) {
		t.Fatalf("flat event = %v (last_seq %d)", ev, page.LastSeq)
	}
	for _, bad := range []string{`{"event_type":"BAD TYPE"}`, `{"event_type":"x","session_id":"ses_other"}`, `{"events":[]}`} {
		rec := serve(env.handler, "POST", path, clientTok, []byte(bad))
		errorBody(t, rec, http.StatusBadRequest)
	}
	rec = serve(env.handler, "POST", "/sessions/ses_nope/events", clientTok, []byte(`{"event_type":"x"}`))
	errorBody(t, rec, http.StatusNotFound)
	// Too many events is the coordinator's 413.
	var many bytes.Buffer
	many.WriteString("[")
	for i := range 1001 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`{"event_type":"x"}`)
	}
	many.WriteString("]")
	rec = serve(env.handler, "POST", path, clientTok, many.Bytes())
	errorBody(t, rec, http.StatusRequestEntityTooLarge)
}

// TestDecodeJSON checks the decoder's messages directly.
func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	var p orchestrator.StartRunParams
	for _, tc := range []struct {
		in, want string
	}{
		{``, "required"},
		{`{"agent_name":`, "unexpected end"},
		{`{"agent_name":"a",}`, "at byte"},
		{`{"agent_name":5}`, `field "agent_name" must be a string, not number`},
		{`{"demands":{"tags":"x"}}`, `field "demands.tags" must be an array, not string`},
		{`{"mode":"sync"} x`, "after the first value"},
		{`["a"]`, "must be an object"},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "invalid JSON"},
	} {
		err := decodeJSON([]byte(tc.in), &p, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || statusCode(err) != 400 {
			t.Errorf("decodeJSON(%.40q) = %v (status %d), want a 400 containing %q", tc.in, err, statusCode(err), tc.want)
		}
	}
	var b orchestrator.Blueprint
	if err := decodeJSON([]byte(`{"name":"x","parameter_schema":{}}`), &b, true); err == nil || !strings.Contains(err.Error(), "parameter_schema") {
		t.Errorf("strict decode of a misspelt key: %v", err)
	}
}
