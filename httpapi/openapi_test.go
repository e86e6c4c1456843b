package httpapi

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

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
