package httpapi

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// concretePath fills a route pattern's wildcards.
func concretePath(pattern string) string {
	r := strings.NewReplacer("{name...}", "report.txt", "{name}", "some-agent", "{id}", "some-id")
	return r.Replace(pattern)
}

// TestRolesEveryRoute is generated from the route table: every route is called without a token, with an
// unknown token and with each role's token, and must answer 401 / 403 exactly when the role is not
// allowed — so no request without the right role reaches a handler.
func TestRolesEveryRoute(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	_, reg := env.runnerClient(t, registration("roles-host"))
	cred := credential(reg)
	callers := []struct {
		name  string
		token string
		role  Role
	}{
		{"none", "", ""},
		{"bogus", "not-a-configured-token", ""},
		{"admin", adminTok, RoleAdmin},
		{"client", clientTok, RoleClient},
		{"runner", runnerTok, RoleRunner},
		{"metrics", metricsTok, RoleMetrics},
		{"runner_instance", cred, RoleRunnerInstance},
		// A configured token with a prefix of another's bytes must not match it.
		{"prefix", adminTok[:len(adminTok)-1], ""},
		// Runner credentials: a wrong secret, a secret of the right shape for an unknown runner, the
		// secret alone, and the shared runner token in a runner credential's shape.
		{"runner_wrong_secret", RunnerCredential(reg.RunnerID, ids.RunnerSecret+"AAAA"), ""},
		{"runner_unknown", RunnerCredential("lnch_0000000000000000", reg.RunnerSecret), ""},
		{"runner_secret_alone", reg.RunnerSecret, ""},
		{"runner_token_as_credential", RunnerCredential(reg.RunnerID, runnerTok), ""},
	}
	if len(routeTable) < 30 {
		t.Fatalf("route table has %d routes; the test expects the whole API", len(routeTable))
	}
	for _, rd := range routeTable {
		for _, c := range callers {
			t.Run(rd.String()+"/"+c.name, func(t *testing.T) {
				var body []byte
				if rd.Method == "POST" || rd.Method == "PUT" || rd.Method == "PATCH" {
					body = []byte(`{}`)
				}
				target := concretePath(rd.Pattern)
				if rd.Pattern == "/runner/runs" {
					target += "?wait=0"
				}
				rec := serve(env.handler, rd.Method, target, c.token, body)
				switch {
				case rd.Public:
					if rec.Code == 401 || rec.Code == 403 {
						t.Fatalf("public route answered %d: %s", rec.Code, rec.Body)
					}
				case c.role == "":
					m := errorBody(t, rec, http.StatusUnauthorized)
					if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("401 without a Bearer challenge: %q", rec.Header().Get("WWW-Authenticate"))
					}
					if c.token != "" && m["error"] != "invalid_token" {
						t.Errorf("unknown token: error = %v, want invalid_token", m["error"])
					}
				case rd.Allows(c.role):
					// A runner's credential may be refused by scope (runner_mismatch, parent_session_required)
					// on a route its role may call, never by role ("forbidden").
					if rec.Code == 401 || rec.Code == 403 && jsonErrorBody(t, rec)["error"] == "forbidden" || rec.Code >= 500 {
						t.Fatalf("role %s is allowed but got %d: %s", c.role, rec.Code, rec.Body)
					}
				default:
					errorBody(t, rec, http.StatusForbidden)
				}
			})
		}
	}
}

// TestRolePolicy pins the policy itself, so a change to it is deliberate.
func TestRolePolicy(t *testing.T) {
	t.Parallel()
	want := map[string]string{ // route → roles besides admin
		"GET /health":                            "public",
		"GET /ready":                             "public",
		"GET /agents":                            "client runner_instance",
		"GET /agents/{name}":                     "client runner_instance",
		"GET /agents/{name}/schema":              "client runner_instance",
		"POST /agents":                           "",
		"PUT /agents/{name}":                     "",
		"PATCH /agents/{name}":                   "",
		"DELETE /agents/{name}":                  "",
		"POST /runs":                             "client runner_instance",
		"GET /runs":                              "client",
		"GET /runs/{id}":                         "client runner_instance",
		"GET /runs/{id}/result":                  "client runner_instance",
		"POST /runs/{id}/stop":                   "client",
		"GET /sessions":                          "client runner_instance",
		"GET /sessions/{id}":                     "client runner_instance",
		"GET /sessions/{id}/result":              "client runner_instance",
		"GET /sessions/{id}/tree":                "client runner_instance",
		"POST /sessions/{id}/stop":               "client runner_instance",
		"GET /sessions/{id}/artifacts":           "client runner_instance",
		"GET /sessions/{id}/artifacts/{name...}": "client runner_instance",
		"PUT /sessions/{id}/artifacts/{name...}": "client runner_instance",
		"DELETE /sessions/{id}":                  "client",
		"POST /sessions/{id}/rerun":              "client",
		"POST /sessions/rerun":                   "client",
		"GET /sessions/{id}/events":              "client runner_instance",
		"GET /sessions/{id}/events/stream":       "client runner_instance",
		"POST /sessions/{id}/events":             "client runner_instance",
		"POST /sessions/{id}/input-requests":     "client runner_instance",
		"GET /input-requests":                    "client runner_instance",
		"GET /input-requests/{id}":               "client runner_instance",
		"POST /input-requests/{id}/answer":       "client",
		"POST /schedules":                        "client",
		"GET /schedules":                         "client runner_instance",
		"GET /schedules/{id}":                    "client runner_instance",
		"PATCH /schedules/{id}":                  "client",
		"DELETE /schedules/{id}":                 "client",
		"POST /mcp":                              "client",
		"GET /mcp":                               "client",
		"DELETE /mcp":                            "client",
		"GET /metrics":                           "metrics",
		"GET /ui/":                               "public",
		"GET /runners":                           "",
		"DELETE /runners/{id}":                   "",
		"POST /runner/register":                  "runner",
		"POST /runner/heartbeat":                 "runner_instance",
		"GET /runner/runs":                       "runner_instance",
		"POST /runner/runs/{id}/started":         "runner_instance",
		"POST /runner/runs/{id}/completed":       "runner_instance",
		"POST /runner/runs/{id}/failed":          "runner_instance",
		"POST /runner/runs/{id}/stopped":         "runner_instance",
		"POST /runner/reports":                   "runner_instance",
		"DELETE /runner/{id}":                    "runner_instance",
	}
	routes := Routes()
	if len(routes) != len(want) {
		t.Errorf("Routes() has %d routes, the policy %d", len(routes), len(want))
	}
	for _, rt := range routes {
		var got []string
		if rt.Public {
			got = append(got, "public")
		}
		for _, r := range rt.Roles {
			got = append(got, string(r))
		}
		w, ok := want[rt.String()]
		if !ok {
			t.Errorf("route %s is not in the policy", rt)
			continue
		}
		if strings.Join(got, " ") != w {
			t.Errorf("route %s: roles %q, want %q", rt, strings.Join(got, " "), w)
		}
	}
}

// TestDocRoleTable: the route table in doc.go says what the route table does — every route, with its
// roles — so the package documentation cannot drift from the policy.
func TestDocRoleTable(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	letters := map[string]string{"C": "client", "T": "runner", "R": "runner_instance", "M": "metrics"}
	doc := map[string]string{} // "METHOD /pattern" → roles besides admin, as TestRolePolicy spells them
	for _, line := range strings.Split(string(src), "\n") {
		line, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || strings.ToUpper(f[0]) != f[0] || !strings.HasPrefix(f[1], "/") {
			continue
		}
		path := f[1]
		if i := strings.IndexAny(path, "?["); i >= 0 {
			path = path[:i]
		}
		var roles []string
		for _, tok := range f[2:] {
			switch {
			case tok == "open":
				roles = append(roles, "public")
			case tok == "A":
			case letters[tok] != "":
				roles = append(roles, letters[tok])
			default:
				goto done
			}
		}
	done:
		// "POST /runner/runs/{id}/started|completed|…" and "POST|GET|DELETE /mcp" stand for several routes.
		paths := []string{path}
		if head, alts, ok := strings.Cut(path, "|"); ok {
			dir := head[:strings.LastIndexByte(head, '/')+1]
			paths = []string{head}
			for _, a := range strings.Split(alts, "|") {
				paths = append(paths, dir+a)
			}
		}
		for _, m := range strings.Split(f[0], "|") {
			for _, p := range paths {
				doc[m+" "+p] = strings.Join(roles, " ")
			}
		}
	}
	for _, rt := range Routes() {
		var want []string
		if rt.Public {
			want = append(want, "public")
		}
		for _, r := range rt.Roles {
			want = append(want, string(r))
		}
		got, ok := doc[rt.String()]
		if !ok {
			t.Errorf("doc.go's route table lacks %s", rt)
			continue
		}
		if got != strings.Join(want, " ") {
			t.Errorf("doc.go says %s is for %q; the route table says %q", rt, got, strings.Join(want, " "))
		}
		delete(doc, rt.String())
	}
	for r := range doc {
		t.Errorf("doc.go's route table lists %s, which the route table does not have", r)
	}
}

// TestOpenHandler: without tokens every route is open.
func TestOpenHandler(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t, coordinator.Config{})
	h := NewHandler(coord, Config{})
	rec := serve(h, "GET", "/runners", "", nil)
	if rec.Code != 200 {
		t.Fatalf("open GET /runners: %d %s", rec.Code, rec.Body)
	}
}

func TestTokenAuth(t *testing.T) {
	t.Parallel()
	a := NewTokenAuth(map[string]Role{"aaaa": RoleAdmin, "bbbb": RoleClient, "cccc": RoleRunner})
	for _, tc := range []struct {
		tok  string
		want Role
		ok   bool
	}{
		{"aaaa", RoleAdmin, true},
		{"bbbb", RoleClient, true},
		{"cccc", RoleRunner, true},
		{"aaa", "", false},
		{"aaaaa", "", false},
		{"", "", false},
		{"AAAA", "", false},
	} {
		got, ok := a.Role(tc.tok)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Role(%q) = %q, %v; want %q, %v", tc.tok, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		header string
		tok    string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"Bearer  abc ", "abc", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"", "", false},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", tc.header)
		tok, ok := BearerToken(req)
		if tok != tc.tok || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.header, tok, ok, tc.tok, tc.ok)
		}
	}
}

func TestParseTokens(t *testing.T) {
	t.Parallel()
	got, err := ParseTokens("a1, a2", "c1,,", " r1 ")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Role{"a1": RoleAdmin, "a2": RoleAdmin, "c1": RoleClient, "r1": RoleRunner}
	if len(got) != len(want) {
		t.Fatalf("ParseTokens = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("ParseTokens = %v, want %v", got, want)
		}
	}
	if _, err := ParseTokens("same", "same", ""); err == nil {
		t.Fatal("a token in two roles was accepted")
	}
	if empty, err := ParseTokens("", "", ""); err != nil || len(empty) != 0 {
		t.Fatalf("ParseTokens of nothing = %v, %v", empty, err)
	}
}

// The token variables of the environment, as the binaries read them, hold one token or a list.
func TestParseTokensFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvAdminToken, "adm")
	t.Setenv(EnvClientToken, "c1,c2")
	t.Setenv(EnvRunnerToken, "")
	got, err := ParseTokens(os.Getenv(EnvAdminToken), os.Getenv(EnvClientToken), os.Getenv(EnvRunnerToken))
	if err != nil || len(got) != 3 || got["adm"] != RoleAdmin || got["c2"] != RoleClient {
		t.Fatalf("ParseTokens of the environment = %v, %v", got, err)
	}
}

func TestCheckListenAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr           string
		open, insecure bool
		ok             bool
	}{
		{"127.0.0.1:8765", true, false, true},
		{"[::1]:8765", true, false, true},
		{"localhost:8765", true, false, true},
		{"127.0.0.2:8765", true, false, true},
		{":8765", true, false, false},
		{"0.0.0.0:8765", true, false, false},
		{"10.1.2.3:8765", true, false, false},
		{"example.com:8765", true, false, false},
		{":8765", true, true, true},
		{":8765", false, false, true},
		{"no-port", true, false, false},
	} {
		err := CheckListenAddr(tc.addr, tc.open, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListenAddr(%q, open=%v, insecure=%v) = %v, want ok=%v", tc.addr, tc.open, tc.insecure, err, tc.ok)
		}
	}
}

// BenchmarkAuthenticate is what authenticating one request costs: with a configured token, and with a
// runner's own credential (its hash in the coordinator's cache, as on every request but the first).
func BenchmarkAuthenticate(b *testing.B) {
	env := newEnv(b, Config{}, coordinator.Config{})
	_, reg := env.runnerClient(b, registration("bench-host"))
	ta := NewTokenAuth(testTokens)
	ta.runners = env.coord
	rt := Route{Method: "GET", Pattern: "/agents", Roles: clientsRunners}
	for _, tc := range []struct{ name, token string }{{"configured-token", clientTok}, {"runner-credential", credential(reg)}} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/agents", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ta.Authenticate(req, rt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
