package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// deepSchema nests n property subschemas (21 bytes a level): at 800 levels, 17 KB that took the
// coordinator 15 seconds to compile before the limits.
func deepSchema(n int) string {
	return strings.Repeat(`{"properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n)
}

// fanOutSchema is 1.4 KB whose references fan out 2^18 ways.
func fanOutSchema() string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/definitions/d0","definitions":{`)
	for i := range 18 {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/definitions/d%d"},{"$ref":"#/definitions/d%d"}]},`, i, i+1, i+1)
	}
	b.WriteString(`"d18":{}}}`)
	return b.String()
}

// checkTooComplex checks an answer is a 400 schema_too_complex naming the limit, its value and what the
// schema reaches, and that the message says where the schema was.
func checkTooComplex(t *testing.T, what string, body map[string]any, measure string, measured float64, where string) {
	t.Helper()
	limit := map[string]float64{"depth": orchestrator.MaxSchemaDepth, "evaluations": orchestrator.MaxSchemaEvaluations}[measure]
	if body["error"] != "schema_too_complex" || body["measure"] != measure || body["measured"] != measured ||
		body["limit"] != limit || !strings.Contains(fmt.Sprint(body["message"]), where) {
		t.Errorf("%s: got %v; want schema_too_complex, measure %q, measured %v, limit %v, and %q in the message",
			what, body, measure, measured, limit, where)
	}
}

// TestOverLimitSchemasRefusedOverHTTP: from every route that brings a schema — a run's output_schema,
// alone or in a batch, the agent registry and a runner's registration — a schema beyond a limit is a
// prompt 400 schema_too_complex that names the limit, and nothing is created.
func TestOverLimitSchemasRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, coordinator.Config{})
	if _, err := e.coord.CreateAgent(ctxT(t), &orchestrator.Blueprint{Name: "writer"}); err != nil {
		t.Fatal(err)
	}
	deep, fan := deepSchema(800), fanOutSchema()

	for _, tt := range []struct {
		schema, measure string
		measured        float64
	}{{deep, "depth", 1601}, {fan, "evaluations", 2045}} {
		rec := serve(e.handler, "POST", "/runs", clientTok,
			[]byte(`{"agent_name":"writer","prompt":"hi","output_schema":`+tt.schema+`}`))
		checkTooComplex(t, "POST /runs", errorBody(t, rec, http.StatusBadRequest), tt.measure, tt.measured, "output_schema: ")
	}

	// Through the served API, whose answers are checked against docs/openapi.yaml, and the Client.
	_, err := e.client(t, clientTok).StartRun(ctxT(t), orchestrator.StartRunParams{AgentName: "writer", Prompt: "hi",
		OutputSchema: json.RawMessage(deep)})
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "schema_too_complex" || !errors.Is(err, orchestrator.ErrInvalid) ||
		oe.Details["measure"] != "depth" || oe.Details["measured"] != float64(1601) {
		t.Errorf("Client.StartRun with a deep output_schema: %v (details %v), want schema_too_complex for depth 1601", err, oe)
	}

	rec := serve(e.handler, "POST", "/runs", clientTok,
		[]byte(`{"runs":[{"agent_name":"writer","prompt":"fine"},{"agent_name":"writer","prompt":"hi","output_schema":`+deep+`}]}`))
	body := errorBody(t, rec, http.StatusBadRequest)
	items, _ := body["items"].([]any)
	if body["error"] != "invalid_runs" || len(items) != 1 {
		t.Fatalf("POST /runs batch: %v, want invalid_runs with one item", body)
	}
	item, _ := items[0].(map[string]any)
	if item["index"] != float64(1) {
		t.Errorf("batch item %v, want index 1", item)
	}
	checkTooComplex(t, "POST /runs batch item", item, "depth", 1601, "output_schema: ")
	if page, err := e.coord.ListSessions(ctxT(t), orchestrator.SessionFilter{}); err != nil || len(page.Sessions) != 0 {
		t.Errorf("sessions after the refusals: %+v, %v; want none", page, err)
	}

	rec = serve(e.handler, "POST", "/agents", adminTok, []byte(`{"name":"deep","type":"agent","output_schema":`+deep+`}`))
	checkTooComplex(t, "POST /agents", errorBody(t, rec, http.StatusBadRequest), "depth", 1601, `blueprint "deep": output_schema: `)
	if rec := serve(e.handler, "GET", "/agents/deep", adminTok, nil); rec.Code != http.StatusNotFound {
		t.Errorf("GET /agents/deep after the refusal: %d %s, want 404", rec.Code, rec.Body)
	}
	rec = serve(e.handler, "PUT", "/agents/writer", adminTok, []byte(`{"type":"agent","parameters_schema":`+fan+`}`))
	checkTooComplex(t, "PUT /agents/writer", errorBody(t, rec, http.StatusBadRequest), "evaluations", 2045, `blueprint "writer": parameters_schema: `)
	if a, err := e.coord.GetAgent(ctxT(t), "writer"); err != nil || len(a.Blueprint.ParametersSchema) != 0 {
		t.Errorf("agent writer after the refused PUT: %+v, %v; want it unchanged", a, err)
	}

	reg, _ := json.Marshal(registration("host-a", &orchestrator.Blueprint{Name: "deep-tool", Type: orchestrator.AgentTypeDeterministic,
		Command: "true", ParametersSchema: json.RawMessage(deep)}))
	rec = serve(e.handler, "POST", "/runner/register", runnerTok, reg)
	checkTooComplex(t, "POST /runner/register", errorBody(t, rec, http.StatusBadRequest), "depth", 1601, `blueprint "deep-tool": parameters_schema: `)
	if runners, err := e.coord.ListRunners(ctxT(t)); err != nil || len(runners) != 0 {
		t.Errorf("runners after the refused registration: %d, %v; want none", len(runners), err)
	}
	if _, err := e.coord.GetAgent(ctxT(t), "deep-tool"); err == nil {
		t.Error("the refused registration's agent exists")
	}
}
