package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// openEnv is an open API (no tokens), as the quickstart and the example coordinator serve on loopback,
// answering through the OpenAPI check.
func openEnv(t *testing.T, hcfg Config) *testEnv {
	t.Helper()
	hcfg.Tokens = map[string]Role{}
	return newEnv(t, hcfg, coordinator.Config{})
}

// The headers of what a web page can make a browser send without the coordinator's consent.
var (
	// crossSite: a page of another site (its own origin in Origin; the browser's word in Sec-Fetch-Site).
	crossSite = []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}
	// sameSite: a page on another port of the same host (a dev server): the same site, another origin.
	sameSite = []string{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors"}
	// oldBrowser: another origin, from a browser that sends no Sec-Fetch-Site.
	oldBrowser = []string{"Origin", "http://localhost:3000"}
	// crossSiteNoOrigin: a cross-site GET (an image, a script) carries no Origin.
	crossSiteNoOrigin = []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}
	// rebound: a page at evil.example, whose name now resolves to 127.0.0.1 (DNS rebinding): to the
	// browser it is same-origin, and it names its own host.
	rebound = []string{"Host", "evil.example:8765", "Origin", "http://evil.example:8765", "Sec-Fetch-Site", "same-origin"}
)

// The bodies a page can send without a preflight, and a JSON body sent as one of them.
var simpleBodies = []struct {
	name, contentType, body string
}{
	{"text/plain", "text/plain;charset=UTF-8", `{"agent_name":"helper","prompt":"p"}`},
	{"form", "application/x-www-form-urlencoded", `{"agent_name":"helper","prompt":"p"}=`},
	{"multipart", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n{}\r\n--x--\r\n"},
	{"no Content-Type", "", `{"agent_name":"helper","prompt":"p"}`},
	{"JSON in another charset", "application/json; charset=iso-8859-1", `{}`},
	{"not a media type", "json", `{}`},
}

// TestBrowserChecksEveryRoute is generated from the route table, against an open API: every route but the
// probes refuses a page of another origin (403), a rebinding page (421, reads too), and every route that
// may change something refuses a body that is not JSON (415), each with its JSON error, before its handler
// runs. The probes answer all of them.
func TestBrowserChecksEveryRoute(t *testing.T) {
	t.Parallel()
	env := openEnv(t, Config{})
	for _, rd := range routeTable {
		target := concretePath(rd.Pattern)
		if rd.Pattern == "/runner/runs" {
			target += "?wait=0"
		}
		var body []byte
		if stateChanging[rd.Method] {
			body = []byte(`{}`)
		}
		probe := browserPolicies[rd.String()] == policyProbe
		t.Run(rd.String(), func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				name   string
				header []string
				status int
				code   string
			}{
				{"cross-site", crossSite, http.StatusForbidden, "origin_not_allowed"},
				{"same-site", sameSite, http.StatusForbidden, "origin_not_allowed"},
				{"old browser", oldBrowser, http.StatusForbidden, "origin_not_allowed"},
				{"cross-site without Origin", crossSiteNoOrigin, http.StatusForbidden, "origin_not_allowed"},
				{"DNS rebinding", rebound, http.StatusMisdirectedRequest, "host_not_allowed"},
				{"DNS rebinding, not a browser", []string{"Host", "evil.example"}, http.StatusMisdirectedRequest, "host_not_allowed"},
			} {
				rec := serve(env.srv.Config.Handler, rd.Method, target, "", body, c.header...)
				if probe {
					if rec.Code != http.StatusOK {
						t.Errorf("%s: a probe answered %d %s, want 200", c.name, rec.Code, rec.Body)
					}
					continue
				}
				if m := errorBody(t, rec, c.status); m["error"] != c.code {
					t.Errorf("%s: error %v, want %s", c.name, m["error"], c.code)
				}
			}
			if !stateChanging[rd.Method] || rd.RawBody { // an upload takes any body (TestRouteRawBodyTakesAnyMediaType)
				return
			}
			for _, b := range simpleBodies {
				rec := serve(env.srv.Config.Handler, rd.Method, target, "", []byte(b.body), "Content-Type", b.contentType)
				if m := errorBody(t, rec, http.StatusUnsupportedMediaType); m["error"] != "unsupported_media_type" ||
					!strings.Contains(m["message"].(string), "application/json") {
					t.Errorf("%s body: %v", b.name, m)
				}
			}
			// JSON, with or without a charset, in a structured type, and no body at all pass the check.
			for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8", "application/merge-patch+json"} {
				if rec := serve(env.srv.Config.Handler, rd.Method, target, "", body, "Content-Type", ct); rec.Code == http.StatusUnsupportedMediaType {
					t.Errorf("Content-Type %s: 415 %s", ct, rec.Body)
				}
			}
			if rec := serve(env.srv.Config.Handler, rd.Method, target, "", nil); rec.Code == http.StatusUnsupportedMediaType {
				t.Errorf("no body: 415 %s", rec.Body)
			}
		})
	}
}

// TestBrowserBorneRequestsChangeNothing plays the attack on an open API: an AI agent whose MCP server is
// a shell, a run and a schedule, sent as a page can send them — text/plain, form-encoded, cross-origin
// JSON, from a rebinding page — and a rebinding page reading sessions. Everything is refused, and
// nothing is created or read.
func TestBrowserBorneRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	env := openEnv(t, Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	before := must[*orchestrator.SessionPage](t, "ListSessions")(env.coord.ListSessions(ctx, orchestrator.SessionFilter{}))
	session := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})).SessionID

	h := env.srv.Config.Handler
	requests := map[string]string{
		"/agents":    `{"name":"shell","type":"agent","description":"x","mcp_servers":{"sh":{"command":"/bin/sh","args":["-c","id > /tmp/pwned"]}}}`,
		"/runs":      `{"agent_name":"helper","prompt":"run me"}`,
		"/schedules": `{"agent_name":"helper","parameters":{"prompt":"again"},"cron":"* * * * *"}`,
	}
	for path, body := range requests {
		for _, how := range []struct {
			name   string
			header []string
		}{
			{"text/plain from another site", append([]string{"Content-Type", "text/plain;charset=UTF-8"}, crossSite...)},
			{"form from another site", append([]string{"Content-Type", "application/x-www-form-urlencoded"}, crossSite...)},
			{"text/plain from the same site", append([]string{"Content-Type", "text/plain"}, sameSite...)},
			{"JSON from another origin", append([]string{"Content-Type", "application/json"}, crossSite...)},
			{"JSON from an older browser", append([]string{"Content-Type", "application/json"}, oldBrowser...)},
			{"JSON from a rebinding page", append([]string{"Content-Type", "application/json"}, rebound...)},
			// Not a browser, but a page's body: refused on its media type alone.
			{"text/plain, no Origin", []string{"Content-Type", "text/plain"}},
		} {
			if rec := serve(h, "POST", path, "", []byte(body), how.header...); rec.Code < 400 {
				t.Errorf("POST %s, %s: %d %s, want it refused", path, how.name, rec.Code, rec.Body)
			}
		}
	}
	for _, path := range []string{"/sessions", "/sessions/" + session, "/sessions/" + session + "/events", "/agents", "/schedules"} {
		rec := serve(h, "GET", path, "", nil, rebound...)
		if rec.Code != http.StatusMisdirectedRequest || strings.Contains(rec.Body.String(), session) {
			t.Errorf("GET %s from a rebinding page: %d %s, want 421 and nothing read", path, rec.Code, rec.Body)
		}
	}

	agents := must[[]*orchestrator.AgentInfo](t, "ListAgents")(env.coord.ListAgents(ctx, orchestrator.ListAgentsParams{}))
	if len(agents) != 1 || agents[0].Name != "helper" {
		t.Errorf("agents after the attack: %v, want only helper", agents)
	}
	after := must[*orchestrator.SessionPage](t, "ListSessions")(env.coord.ListSessions(ctx, orchestrator.SessionFilter{}))
	if len(after.Sessions) != len(before.Sessions)+1 {
		t.Errorf("%d sessions after the attack, want %d (the test's own)", len(after.Sessions), len(before.Sessions)+1)
	}
	if scheds := must[[]*orchestrator.Schedule](t, "ListSchedules")(env.coord.ListSchedules(ctx, orchestrator.ScheduleFilter{})); len(scheds) != 0 {
		t.Errorf("schedules after the attack: %d, want none", len(scheds))
	}
}

// TestDashboardRequestsPass: what the dashboard sends from its own origin — its JSON bodies, its
// bodiless stops, its reads — passes, with a modern browser's headers and with an older one's; and so
// does a proxy in front that changes Host, for a modern browser, or with the origin allowed.
func TestDashboardRequestsPass(t *testing.T) {
	t.Parallel()
	env := openEnv(t, Config{AllowedOrigins: []string{"HTTPS://Orchestrator.Example.com:443/"}})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	h := env.srv.Config.Handler
	modern := []string{"Origin", "http://127.0.0.1:8765", "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}
	older := []string{"Origin", "http://127.0.0.1:8765"}
	proxied := []string{"Origin", "https://orchestrator.example.com", "Sec-Fetch-Site", "same-origin"}
	allowedOld := []string{"Origin", "https://orchestrator.example.com"}
	for _, hdr := range [][]string{modern, older, proxied, allowedOld} {
		rec := serve(h, "POST", "/runs", "", []byte(`{"agent_name":"helper","prompt":"p"}`), hdr...)
		if rec.Code != http.StatusCreated {
			t.Fatalf("the dashboard's POST /runs (%v): %d %s", hdr, rec.Code, rec.Body)
		}
		var res orchestrator.StartRunResult
		check(t, "decoding POST /runs", json.Unmarshal(rec.Body.Bytes(), &res))
		for _, c := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/sessions?order=newest", 200},
			{"GET", "/sessions/" + res.SessionID, 200},
			{"GET", "/sessions/" + res.SessionID + "/events?after=0", 200},
			{"GET", "/agents", 200},
			{"POST", "/sessions/" + res.SessionID + "/stop", 200},
		} {
			if rec := serve(h, c.method, c.path, "", nil, hdr...); rec.Code != c.want {
				t.Errorf("the dashboard's %s %s (%v): %d %s", c.method, c.path, hdr, rec.Code, rec.Body)
			}
		}
	}
	// The person opens the dashboard: typed (Sec-Fetch-Site none), or from a link on another site.
	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"},
		{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"},
	} {
		if rec := serve(h, "GET", "/ui/", "", nil, hdr...); rec.Code == http.StatusForbidden || rec.Code == http.StatusMisdirectedRequest {
			t.Errorf("opening the dashboard (%v): %d %s", hdr, rec.Code, rec.Body)
		}
	}
	// A navigation is let through to the pages only: an API route opened from another site is refused.
	if rec := serve(h, "GET", "/sessions", "", nil, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"); rec.Code != http.StatusForbidden {
		t.Errorf("GET /sessions navigated to from another site: %d, want 403", rec.Code)
	}
}

// TestHostCheck: which Host an open API answers, with and without allowed hosts; an API with tokens
// checks Host only once AllowedHosts is set; the probes are never checked.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	open := openEnv(t, Config{}).srv.Config.Handler
	openAllowed := openEnv(t, Config{AllowedHosts: []string{"Orchestrator.Example.com", "*.svc.cluster.local"}}).srv.Config.Handler
	tokens := newEnv(t, Config{}, coordinator.Config{}).srv.Config.Handler
	tokensAllowed := newEnv(t, Config{AllowedHosts: []string{"orchestrator.example.com"}}, coordinator.Config{}).srv.Config.Handler
	for _, c := range []struct {
		h     http.Handler
		name  string
		token string
		hosts map[string]int // Host → status of GET /agents
	}{
		{open, "open", "", map[string]int{
			"127.0.0.1:8765": 200, "127.0.0.1": 200, "[::1]:8765": 200, "localhost:8765": 200, "LOCALHOST": 200,
			"dashboard.localhost:8765": 200, "10.1.2.3:8765": 200, "[fd00::5]:8765": 200, "": 200,
			"evil.example": 421, "evil.example:8765": 421, "localhost.evil.example": 421, "127.0.0.1.nip.io:8765": 421,
			"orchestrator.example.com": 421, "localhost.": 421,
		}},
		{openAllowed, "open, allowed hosts", "", map[string]int{
			"orchestrator.example.com": 200, "ORCHESTRATOR.example.com:443": 200, "orchestrator.ns.svc.cluster.local:8765": 200,
			"localhost:8765": 200, "10.1.2.3": 200,
			"svc.cluster.local": 421, "evil.example": 421, "orchestrator.example.com.evil.example": 421,
		}},
		{tokens, "tokens", clientTok, map[string]int{"evil.example": 200, "orchestrator.ns.svc.cluster.local": 200}},
		{tokensAllowed, "tokens, allowed hosts", clientTok, map[string]int{
			"orchestrator.example.com": 200, "10.1.2.3:8765": 200, "localhost": 200, "evil.example": 421,
		}},
	} {
		for host, want := range c.hosts {
			rec := serve(c.h, "GET", "/agents", c.token, nil, "Host", host)
			if rec.Code != want {
				t.Errorf("%s: GET /agents with Host %q: %d %s, want %d", c.name, host, rec.Code, rec.Body, want)
			}
		}
		// Probes name the coordinator however they reach it.
		for _, path := range []string{"/health", "/ready"} {
			if rec := serve(c.h, "GET", path, "", nil, "Host", "orchestrator.other-namespace.svc:8765"); rec.Code != 200 {
				t.Errorf("%s: GET %s with a Service's name: %d %s", c.name, path, rec.Code, rec.Body)
			}
		}
	}
}

// TestBrowserConfigValidate: entries that could never match are refused by Validate, and NewHandler
// panics on them rather than serving without the protection it was told to give.
func TestBrowserConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{AllowedOrigins: []string{"https://orchestrator.example.com", "http://localhost:3000", "chrome-extension://abcdef"}}, true},
		{Config{AllowedHosts: []string{"orchestrator.example.com", "*.svc.cluster.local", "10.0.0.1", "orchestrator"}}, true},
		{Config{AllowedOrigins: []string{"orchestrator.example.com"}}, false},
		{Config{AllowedOrigins: []string{"https://orchestrator.example.com/ui/"}}, false},
		{Config{AllowedOrigins: []string{"*"}}, false},
		{Config{AllowedOrigins: []string{"https://*.example.com"}}, false},
		{Config{AllowedOrigins: []string{"https://user@orchestrator.example.com"}}, false},
		{Config{AllowedHosts: []string{"https://orchestrator.example.com"}}, false},
		{Config{AllowedHosts: []string{"orchestrator.example.com:8765"}}, false},
		{Config{AllowedHosts: []string{""}}, false},
		{Config{AllowedHosts: []string{"*"}}, false},
		{Config{AllowedHosts: []string{".example.com"}}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("Validate(%q, %q) = %v, want ok %v", c.cfg.AllowedOrigins, c.cfg.AllowedHosts, err, c.ok)
		}
		if err != nil {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("NewHandler(%q, %q) did not panic", c.cfg.AllowedOrigins, c.cfg.AllowedHosts)
					}
				}()
				NewHandler(newCoordinator(t, coordinator.Config{}), c.cfg)
			}()
		}
	}
}

// TestRouteRawBodyTakesAnyMediaType: a route that says RawBody takes any body; the same route without it
// refuses one that is not JSON.
func TestRouteRawBodyTakesAnyMediaType(t *testing.T) {
	t.Parallel()
	for _, raw := range []bool{false, true} {
		rd := routeDef{Route: Route{Method: "PUT", Pattern: "/sessions/{id}/artifacts/{name}", RawBody: raw}}
		req := httptest.NewRequest("PUT", "/sessions/s/artifacts/a.png", strings.NewReader("\x89PNG"))
		req.Header.Set("Content-Type", "image/png")
		rec := httptest.NewRecorder()
		refused := checkMediaType(rec, req, rd)
		if refused == raw {
			t.Errorf("RawBody %v: refused %v (%d %s)", raw, refused, rec.Code, rec.Body)
		}
	}
}

// TestEventDataOutOfFloatRange: a number no 64-bit float holds is 400 invalid_event, and none of the
// events of that request is stored; large numbers within range, and tiny ones, are kept.
func TestEventDataOutOfFloatRange(t *testing.T) {
	t.Parallel()
	env := openEnv(t, Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	session := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})).SessionID
	path := "/sessions/" + session + "/events"
	stored := func() int {
		evs := must[[]*orchestrator.Event](t, "ListEvents")(env.coord.ListEvents(ctx, session, 0, 1000, 0))
		return len(evs)
	}
	n := stored()
	for _, body := range []string{
		`{"event_type":"progress","value":1e999}`,
		`{"event_type":"progress","value":-1e999}`,
		`{"event_type":"progress","value":1.8e308}`,
		`[{"event_type":"progress","message":"fine"},{"event_type":"progress","deep":{"a":[1,2,{"b":1E+400}]}}]`,
		`{"events":[{"event_type":"progress","v":` + "1" + strings.Repeat("0", 400) + `}]}`,
	} {
		rec := serve(env.srv.Config.Handler, "POST", path, "", []byte(body))
		if m := errorBody(t, rec, http.StatusBadRequest); m["error"] != "invalid_event" || !strings.Contains(m["message"].(string), "64-bit float") {
			t.Errorf("POST %s: %v", body, m)
		}
	}
	if got := stored(); got != n {
		t.Errorf("%d events stored after refused appends, want %d", got, n)
	}
	rec := serve(env.srv.Config.Handler, "POST", path, "", []byte(`{"event_type":"progress","big":1.7976931348623157e308,"tiny":1e-999,"int":123456789012345678901234567890}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("numbers within range: %d %s", rec.Code, rec.Body)
	}
}

// TestRedactURL: passwords go, in every URL of a list, parsed or not; the rest stays as written.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:8765":                          "http://127.0.0.1:8765",
		"http://user:s3cret@127.0.0.1:8765/prefix":       "http://user:xxxxx@127.0.0.1:8765/prefix",
		"http://user@127.0.0.1:8765":                     "http://user@127.0.0.1:8765",
		"http://a:p1@h1:1,http://b:p2@h2:2":              "http://a:xxxxx@h1:1,http://b:xxxxx@h2:2",
		"http://user:s3cret@host:port-not-a-number/":     "http://user:xxxxx@host:port-not-a-number/",
		"user:s3cret@host:8765":                          "user:xxxxx@host:8765",
		"http://user:p@ss:w0rd@host/":                    "http://user:xxxxx@host/",
		"http://user:s3cret@127.0.0.1:8765/?q=a@b":       "http://user:xxxxx@127.0.0.1:8765/?q=a@b",
		"ftp://user:s3cret@host with space/":             "ftp://user:xxxxx@host with space/",
		"http://user:s%20cret@127.0.0.1:8765/":           "http://user:xxxxx@127.0.0.1:8765/",
		"not a url at all":                               "not a url at all",
		"http://127.0.0.1:8765/path@with-at":             "http://127.0.0.1:8765/path@with-at",
		" http://user:s3cret@127.0.0.1:8765, http://x:1": "http://user:xxxxx@127.0.0.1:8765, http://x:1",
	} {
		got := RedactURL(in)
		if got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "p@ss") {
			t.Errorf("RedactURL(%q) = %q keeps the password", in, got)
		}
	}
	if _, err := NewClient("http://user:s3cret@host:8765/?q=1", ClientConfig{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("NewClient's error %v shows the password", err)
	}
}
