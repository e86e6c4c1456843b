package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
	"github.com/agentorchestrator/orchestrator/store"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// probeRoute says what of a route carries text: the query parameters it reads and a representative body,
// every string of which (object keys included) is probed.
type probeRoute struct {
	query []string
	body  string
}

var (
	blueprintBody = `{"name":"w","type":"agent","description":"d","system_prompt":"s","tags":["t"],"command":"c",` +
		`"parameters_schema":{"type":"object","properties":{"p":{"type":"string","default":"x"}}},` +
		`"executor_config":{"model":"m"},"mcp_servers":{"a":{"command":"x"}},"demands":{"hostname":"h","tags":["t"]}}`
	startRunBody = `{"agent_name":"helper","prompt":"p","mode":"async_poll","type":"start","session_id":"ses_x",` +
		`"parent_session_id":"ses_y","callback_url":"https://hooks.example/x","project_dir":"/p",` +
		`"metadata":{"env":{"A":"b"}},"demands":{"hostname":"h","executor_type":"e","tags":["t"]},"output_schema":{"type":"object"},` +
		`"idempotency_key":"k","concurrency_key":"c","priority":2,"delay":"1s"}`
	resultBody = `{"result_type":"deterministic","result_text":"t","result_data":{"k":"v"},"error":"e"}`
)

// probes lists every route of routeTable (TestEveryRouteRefusesMalformedText fails for one that is
// missing), so a new route is probed too.
var probes = map[string]probeRoute{
	"GET /health":                            {},
	"GET /ready":                             {},
	"GET /agents":                            {query: []string{"tags", "type"}},
	"GET /agents/{name}":                     {},
	"GET /agents/{name}/schema":              {},
	"POST /agents":                           {body: blueprintBody},
	"PUT /agents/{name}":                     {body: blueprintBody},
	"PATCH /agents/{name}":                   {body: `{"description":"d","tags":["t"],"executor_config":{"model":"m"}}`},
	"DELETE /agents/{name}":                  {},
	"POST /runs":                             {query: []string{"wait"}, body: startRunBody},
	"GET /runs":                              {query: []string{"status", "session_id", "runner_id", "demand_runner_id", "agent_name", "limit", "after", "created_before"}},
	"GET /runs/{id}":                         {},
	"GET /runs/{id}/result":                  {query: []string{"wait"}},
	"POST /runs/{id}/stop":                   {},
	"GET /sessions":                          {query: []string{"status", "agent_name", "parent_session_id", "limit", "cursor", "order", "ended_before"}},
	"GET /sessions/{id}":                     {query: []string{"wait"}},
	"GET /sessions/{id}/result":              {query: []string{"wait"}},
	"GET /sessions/{id}/tree":                {query: []string{"depth", "max_children", "max_nodes"}},
	"POST /sessions/{id}/stop":               {},
	"GET /sessions/{id}/artifacts":           {},
	"GET /sessions/{id}/artifacts/{name...}": {},
	"PUT /sessions/{id}/artifacts/{name...}": {},
	"DELETE /sessions/{id}":                  {},
	"POST /sessions/{id}/rerun":              {body: `{"parameters":{"url":"u","nested":{"k":["v"]}}}`},
	"POST /sessions/rerun":                   {body: `{"status":["failed"],"agent_name":"helper","created_after":"2026-01-01T00:00:00Z","limit":5,"dry_run":true}`},
	"GET /sessions/{id}/events":              {query: []string{"after", "limit", "wait"}},
	"GET /sessions/{id}/events/stream":       {query: []string{"after", "limit"}},
	"POST /sessions/{id}/events":             {body: `{"events":[{"event_type":"progress","message":"m","nested":{"k":["v"]}}]}`},
	"POST /sessions/{id}/input-requests":     {body: `{"prompt":"Which region?","schema":{"type":"object","properties":{"region":{"type":"string"}}},"timeout_seconds":60}`},
	"GET /input-requests":                    {query: []string{"status", "session_id", "limit", "after"}},
	"GET /input-requests/{id}":               {query: []string{"wait"}},
	"POST /input-requests/{id}/answer":       {body: `{"answer":{"approved":true,"comment":"ok"}}`},
	"POST /schedules":                        {body: `{"agent_name":"helper","parameters":{"prompt":"p"},"cron":"@every 1m","timezone":"UTC","overlap":"skip"}`},
	"GET /schedules":                         {query: []string{"agent_name", "limit", "after"}},
	"GET /schedules/{id}":                    {},
	"PATCH /schedules/{id}":                  {body: `{"paused":true,"cron":"@every 2m","timezone":"UTC","overlap":"allow"}`},
	"DELETE /schedules/{id}":                 {},
	"POST /mcp": {body: `{"jsonrpc":"2.0","id":1,"method":"tools/call",` +
		`"params":{"name":"start_agent_session","arguments":{"agent_name":"helper","prompt":"p"}}}`},
	"GET /mcp":             {},
	"DELETE /mcp":          {},
	"GET /ui/":             {},
	"GET /metrics":         {},
	"GET /runners":         {},
	"DELETE /runners/{id}": {},
	"POST /runner/register": {body: `{"hostname":"h","project_dir":"/p","executor_type":"deterministic","tags":["t"],` +
		`"blueprints":[{"name":"b","command":"c","description":"d","parameters_schema":{"type":"object"}}]}`},
	"POST /runner/heartbeat":           {body: `{"runner_id":"lnch_x"}`},
	"GET /runner/runs":                 {query: []string{"runner_id", "max", "wait"}},
	"POST /runner/runs/{id}/started":   {body: `{"runner_id":"lnch_x"}`},
	"POST /runner/runs/{id}/completed": {body: `{"runner_id":"lnch_x","result":` + resultBody + `}`},
	"POST /runner/runs/{id}/failed":    {body: `{"runner_id":"lnch_x","error":"e","result":` + resultBody + `}`},
	"POST /runner/runs/{id}/stopped":   {body: `{"runner_id":"lnch_x"}`},
	"POST /runner/reports": {body: `{"reports":[{"runner_id":"lnch_x","run_id":"run_x","status":"completed","error":"e",` +
		`"result":` + resultBody + `}]}`},
	"DELETE /runner/{id}": {},
}

// The malformed texts: a NUL, and a byte that is not UTF-8. In a JSON body the NUL is the escape \u0000
// (a raw NUL is not JSON at all) and the other byte goes in raw.
var badTexts = []struct {
	name, raw, inJSON string
}{
	{"NUL", "a\x00b", `a\u0000b`},
	{"invalid UTF-8", "a\xffb", "a\xffb"},
}

// storeKinds are the stores the probes run against: SQLite always, PostgreSQL when
// ORCHESTRATOR_TEST_POSTGRES_URL is set (it refuses such text with an error of its own, which used to
// surface as a 500).
func storeKinds(t *testing.T) map[string]func(t *testing.T) store.Store {
	kinds := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			return openStore(t, filepath.Join(t.TempDir(), "o.db"))
		},
	}
	if base := os.Getenv("ORCHESTRATOR_TEST_POSTGRES_URL"); base != "" {
		kinds["postgres"] = func(t *testing.T) store.Store { return openStore(t, pgtest.Schema(t, base, "httpapitest")) }
	}
	return kinds
}

func openStore(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := sqlstore.New(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// stringSlots returns a copy of the JSON template for each of its strings (object keys included), with
// that string replaced by marker.
func stringSlots(t *testing.T, template, marker string) [][]byte {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(template), &v); err != nil {
		t.Fatalf("template %s: %v", template, err)
	}
	var out [][]byte
	var count func(v any) int
	count = func(v any) int {
		switch x := v.(type) {
		case string:
			return 1
		case []any:
			n := 0
			for _, e := range x {
				n += count(e)
			}
			return n
		case map[string]any:
			n := 0
			for _, e := range x {
				n += 1 + count(e)
			}
			return n
		}
		return 0
	}
	for i := range count(v) {
		var w any
		_ = json.Unmarshal([]byte(template), &w)
		n := 0
		var replace func(v any) any
		replace = func(v any) any {
			switch x := v.(type) {
			case string:
				n++
				if n-1 == i {
					return marker
				}
				return x
			case []any:
				for j := range x {
					x[j] = replace(x[j])
				}
				return x
			case map[string]any:
				out := map[string]any{}
				for k, e := range x {
					n++
					if n-1 == i {
						k = marker
					}
					out[k] = replace(e)
				}
				return out
			}
			return v
		}
		b, err := json.Marshal(replace(w))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

var wildcard = regexp.MustCompile(`\{[a-z_]+(\.\.\.)?\}`)

// TestEveryRouteRefusesMalformedText sends a NUL and invalid UTF-8 in every query parameter, path value
// and JSON string of every route, and an unknown query parameter too: each is 400 invalid_encoding, on
// every store, before anything is looked up or changed.
func TestEveryRouteRefusesMalformedText(t *testing.T) {
	t.Parallel()
	for _, rd := range routeTable {
		if _, ok := probes[rd.String()]; !ok {
			t.Errorf("route %s has no entry in probes: say what text it carries", rd)
		}
	}
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	for kind, newStore := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			coord, err := coordinator.New(coordinator.Config{Store: newStore(t)})
			if err != nil {
				t.Fatal(err)
			}
			h := NewHandler(coord, Config{Tokens: testTokens, MCP: mcp, Logger: discardLogger()})
			const marker = "PROBE-MARKER"
			probe := func(t *testing.T, method, target string, body []byte, header ...string) {
				t.Helper()
				rec := serve(h, method, target, adminTok, body, header...)
				if rec.Code != http.StatusBadRequest {
					t.Errorf("%s %q body %q: status %d, want 400: %s", method, target, body, rec.Code, rec.Body)
					return
				}
				if m := jsonErrorBody(t, rec); m["error"] != "invalid_encoding" {
					t.Errorf("%s %q body %q: error %v, want invalid_encoding", method, target, body, m["error"])
				}
			}
			for _, rd := range routeTable {
				pr := probes[rd.String()]
				good := wildcard.ReplaceAllString(rd.Pattern, "x1")
				var body []byte
				if pr.body != "" {
					body = []byte(pr.body)
				}
				for _, bad := range badTexts {
					t.Run(rd.String()+"/"+bad.name, func(t *testing.T) {
						// Each path value.
						for _, loc := range wildcard.FindAllStringIndex(rd.Pattern, -1) {
							p := rd.Pattern[:loc[0]] + url.PathEscape(bad.raw) + rd.Pattern[loc[1]:]
							probe(t, rd.Method, wildcard.ReplaceAllString(p, "x1"), body)
						}
						// Each query parameter it reads, and one it does not.
						for _, name := range append(slices.Clone(pr.query), "unread") {
							probe(t, rd.Method, good+"?"+url.Values{name: {bad.raw}}.Encode(), body)
						}
						probe(t, rd.Method, good+"?"+url.QueryEscape(bad.raw)+"=1", body)
						// The headers whose values reach the coordinator.
						for _, hdr := range textHeaders {
							probe(t, rd.Method, good, body, hdr, bad.raw)
						}
						// Each string of the body.
						if pr.body != "" {
							for _, b := range stringSlots(t, pr.body, marker) {
								probe(t, rd.Method, good, []byte(strings.Replace(string(b), marker, bad.inJSON, 1)))
							}
						}
					})
				}
			}
		})
	}
}

// TestWellFormedTextPasses: text that is merely unusual — escapes, surrogate pairs, U+FFFD, non-ASCII in
// paths and queries — is not refused.
func TestWellFormedTextPasses(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	rec := serve(env.handler, "POST", "/runs", clientTok, []byte(`{"agent_name":"helper","prompt":"caf\u00e9 \ud83c\udf89 \ufffd \\u0000 日本"}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /runs with well-formed text: %d %s", rec.Code, rec.Body)
	}
	var res orchestrator.StartRunResult
	check(t, "decode", json.Unmarshal(rec.Body.Bytes(), &res))
	for _, target := range []string{"/sessions?agent_name=" + url.QueryEscape("日本"), "/agents/" + url.PathEscape("日本"),
		"/sessions/" + res.SessionID + "/events?after=0"} {
		rec := serve(env.handler, "GET", target, clientTok, nil, HeaderSessionID, "ses_é")
		if rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body)
		}
	}
}

// TestMalformedTextThroughTheServer sends the probes over a real connection too (the request line
// carries them percent-encoded, as a client must send them).
func TestMalformedTextThroughTheServer(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	for _, target := range []string{"/sessions?agent_name=%00", "/sessions/%00", "/sessions/%FF/events", "/runs?agent_name=%C3"} {
		req, _ := http.NewRequest("GET", env.srv.URL+target, nil)
		req.Header.Set("Authorization", "Bearer "+adminTok)
		resp, err := env.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", target, resp.StatusCode)
		}
	}
}
