package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/apidoc"
)

// openAPIPath is the API's OpenAPI description, relative to this package.
const openAPIPath = "../docs/openapi.yaml"

var (
	apiDocOnce sync.Once
	apiDoc     *apidoc.Doc
	apiDocErr  error
)

func loadAPIDoc(t testing.TB) *apidoc.Doc {
	t.Helper()
	apiDocOnce.Do(func() { apiDoc, apiDocErr = apidoc.Load(openAPIPath) })
	if apiDocErr != nil {
		t.Fatalf("loading the OpenAPI description: %v", apiDocErr)
	}
	return apiDoc
}

// patternPath turns a ServeMux pattern's path into an OpenAPI path template: "{name...}" becomes "{name}"
// and a trailing "{$}" goes.
func patternPath(pattern string) string {
	p := strings.TrimSuffix(pattern, "{$}")
	return strings.ReplaceAll(p, "...}", "}")
}

// documentedRoles are the roles an OpenAPI x-roles should list for rt: admin, which may call every
// route, and the route's own roles.
func documentedRoles(rt Route) []string {
	out := []string{string(RoleAdmin)}
	for _, r := range rt.Roles {
		if r != RoleAdmin {
			out = append(out, string(r))
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIDescribesEveryRoute keeps docs/openapi.yaml in step with the route table: every route is
// documented with its method, path, roles and long-poll flag, and every documented operation is served.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadAPIDoc(t)
	documented := map[string]*apidoc.Operation{}
	for _, op := range doc.Operations() {
		documented[op.Method+" "+op.Path] = op
	}
	served := map[string]bool{}
	for _, rd := range routeTable {
		path := patternPath(rd.Pattern)
		key := rd.Method + " " + path
		served[key] = true
		roles := documentedRoles(rd.Route)
		op, ok := documented[key]
		if !ok {
			how := fmt.Sprintf("x-roles: [%s]", strings.Join(roles, ", "))
			if rd.Public {
				how = "security: [] (a public route)"
			}
			if rd.LongPoll {
				how += ", x-long-poll: true"
			}
			t.Errorf("route %s (httpapi/routes.go) is not in docs/openapi.yaml: add paths[%q].%s with an operationId, %s, "+
				"its parameters, request body and every response it gives (see the conventions at the top of the file)",
				rd.Route, path, strings.ToLower(rd.Method), how)
			continue
		}
		if rd.Public {
			if !op.Public {
				t.Errorf("%s is public (no token needed): say security: [] in docs/openapi.yaml", op)
			}
			if len(op.Roles) > 0 {
				t.Errorf("%s is public: drop its x-roles %v in docs/openapi.yaml", op, op.Roles)
			}
		} else {
			if op.Public {
				t.Errorf("%s needs a token: drop security: [] in docs/openapi.yaml", op)
			}
			got := slices.Sorted(slices.Values(op.Roles))
			if !slices.Equal(got, roles) {
				t.Errorf("%s: docs/openapi.yaml says x-roles %v; the route admits %v: set x-roles: [%s]", op, got, roles, strings.Join(roles, ", "))
			}
		}
		if op.LongPoll != rd.LongPoll {
			t.Errorf("%s: docs/openapi.yaml says x-long-poll: %v; the route table says %v", op, op.LongPoll, rd.LongPoll)
		}
	}
	for key, op := range documented {
		if !served[key] {
			t.Errorf("docs/openapi.yaml documents %s (%s), which httpapi/routes.go does not serve: remove it, or add the route", key, op.ID)
		}
	}
}

// TestOpenAPILint checks that docs/openapi.yaml is a well-formed OpenAPI 3.1 description (see
// apidoc.Doc.Lint).
func TestOpenAPILint(t *testing.T) {
	for _, err := range loadAPIDoc(t).Lint() {
		t.Error(err)
	}
}

// checkedHandler serves h and checks each of its answers against docs/openapi.yaml (see
// apidoc.Doc.CheckResponse), failing t on an answer the description does not document. newEnv serves
// through it, so the tests that use it check the description too.
func checkedHandler(t testing.TB, h http.Handler) http.Handler {
	doc := loadAPIDoc(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		if tw.status == 0 {
			if r.Context().Err() != nil {
				return // the caller went away, and nothing was answered
			}
			tw.status = http.StatusOK
		}
		if err := doc.CheckResponse(r.Method, r.URL.EscapedPath(), tw.status, w.Header().Get("Content-Type"), tw.body.Bytes()); err != nil {
			t.Errorf("openapi: %v", err)
		}
	})
}

// teeWriter keeps a copy of what is written through it.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (flushes, write deadlines).
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestOpenAPIDocumentsTheEdges checks answers that the end-to-end tests cannot provoke against the
// description: a store that cannot write, tokens that are missing or unknown, MCP not served, unknown
// routes and methods, HEAD, and a report over its size limit.
func TestOpenAPIDocumentsTheEdges(t *testing.T) {
	t.Parallel()
	st := &writeFailingStore{Store: openStore(t, t.TempDir()+"/o.db"), fail: errors.New("disk full")}
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h := checkedHandler(t, NewHandler(coord, Config{Tokens: testTokens, MaxBodyBytes: 4096, MaxReportBytes: 4096}))
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(coord.RegisterRunner(ctxT(t), registration("edge-host")))
	big := []byte(`{"result":{"result_type":"agent","result_text":"` + strings.Repeat("x", 8192) + `"}}`)
	for _, tc := range []struct {
		method, target, token string
		body                  []byte
		want                  int
	}{
		{"GET", "/ready", "", nil, http.StatusServiceUnavailable},
		{"GET", "/agents", "", nil, http.StatusUnauthorized},
		{"GET", "/agents", "not-a-token", nil, http.StatusUnauthorized},
		{"HEAD", "/agents", clientTok, nil, http.StatusOK},
		{"POST", "/mcp", clientTok, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.StatusNotFound},
		{"GET", "/mcp", clientTok, nil, http.StatusNotFound},
		{"DELETE", "/mcp", clientTok, nil, http.StatusNotFound},
		{"POST", "/health", "", nil, http.StatusMethodNotAllowed},
		{"GET", "/nowhere", clientTok, nil, http.StatusNotFound},
		{"POST", "/runner/runs/run_x/completed", credential(reg), big, http.StatusRequestEntityTooLarge},
		{"POST", "/runner/reports", credential(reg), big, http.StatusRequestEntityTooLarge},
		{"POST", "/agents", adminTok, big, http.StatusRequestEntityTooLarge},
	} {
		if rec := serve(h, tc.method, tc.target, tc.token, tc.body); rec.Code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.target, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestOpenAPIDocumentsBrowserChecks: every route the browser checks apply to documents their answers —
// 403 and 421 on every route but the probes, 415 on every route that may change something and takes JSON
// (see browser.go).
func TestOpenAPIDocumentsBrowserChecks(t *testing.T) {
	doc := loadAPIDoc(t)
	for _, rd := range routeTable {
		op, _ := doc.Match(rd.Method, concretePath(rd.Pattern))
		if op == nil {
			continue // TestOpenAPIDescribesEveryRoute says so
		}
		var want []string
		if browserPolicies[rd.String()] != policyProbe {
			want = append(want, "403", "421")
		}
		if stateChanging[rd.Method] && !rd.RawBody {
			want = append(want, "415")
		}
		for _, status := range want {
			if !slices.Contains(doc.Statuses(op), status) {
				t.Errorf("%s does not document %s in docs/openapi.yaml (browser.go answers it)", op, status)
			}
		}
	}
}
