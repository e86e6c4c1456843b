package cli

import (
	"encoding/json"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func TestRenderSchema(t *testing.T) {
	t.Parallel()
	schema := `{
		"type": "object",
		"required": ["url", "mode"],
		"additionalProperties": false,
		"definitions": {"depth": {"type": "integer", "minimum": 0, "maximum": 5, "default": 2, "description": "How deep."}},
		"properties": {
			"url": {"type": "string", "format": "uri", "pattern": "^https?://", "description": "Start page: an absolute http:// or https:// URL, which is a long enough description to be wrapped over two lines."},
			"depth": {"$ref": "#/definitions/depth"},
			"mode": {"enum": ["fast", "thorough", "a b"], "default": "fast"},
			"patterns": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 10},
			"limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
			"auth": {"type": "object", "title": "Credentials", "properties": {"user": {"type": "string"}, "password": {"type": "string", "description": "Secret."}}}
		}
	}`
	var b strings.Builder
	if err := renderSchema(&b, "Parameters", json.RawMessage(schema), 60); err != nil {
		t.Fatal(err)
	}
	want := `Parameters:
  url            string, required
                 Start page: an absolute http:// or https://
                 URL, which is a long enough description to
                 be wrapped over two lines.
                 format uri; pattern ^https?://
  depth          integer, default 2
                 How deep.
                 minimum 0; maximum 5
  mode           one of: fast | thorough | "a b", required, default fast
  patterns       array of string
                 max items 10
                 each item: min length 1
  limit          integer or null
                 greater than 0
  auth           object
                 Credentials
  auth.user      string
  auth.password  string
                 Secret.
  No other properties are accepted.
`
	if got := b.String(); got != want {
		t.Errorf("renderSchema:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderSchemaWithoutProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ schema, want string }{
		{``, "Parameters: any JSON object (no schema)\n"},
		{`null`, "Parameters: any JSON object (no schema)\n"},
		{`{"type":"object"}`, "Parameters: any JSON object\n"},
		{`{"type":"object","additionalProperties":false}`, "Parameters: none (an empty object)\n"},
		{`{"type":"object","properties":{}, "description":"Anything goes."}`, "Parameters: any JSON object\n  Anything goes.\n"},
	} {
		var b strings.Builder
		if err := renderSchema(&b, "Parameters", json.RawMessage(tc.schema), 80); err != nil {
			t.Fatalf("renderSchema(%s): %v", tc.schema, err)
		}
		if b.String() != tc.want {
			t.Errorf("renderSchema(%s) = %q, want %q", tc.schema, b.String(), tc.want)
		}
	}
	if err := renderSchema(&strings.Builder{}, "Parameters", json.RawMessage(`{"type":`), 80); err == nil {
		t.Error("renderSchema of broken JSON: no error")
	}
}

// TestRenderAgent: ao agents show lays out an agent — an AI agent without a schema gets the implicit
// prompt schema, and the example command line uses --prompt.
func TestRenderAgent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := renderAgent(&b, &orchestrator.AgentInfo{Name: "reviewer", Type: orchestrator.AgentTypeAgent, Description: "Reviews code.", Tags: []string{"code"}}, 80)
	if err != nil {
		t.Fatal(err)
	}
	want := `reviewer (AI agent)

Reviews code.

Tags: code

Parameters:
  prompt  string, required
          min length 1

Run it: ao run reviewer --prompt "…"
`
	if b.String() != want {
		t.Errorf("renderAgent:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	err = renderAgent(&b, &orchestrator.AgentInfo{Name: "crawl", Type: orchestrator.AgentTypeDeterministic, RunnerID: "lnch_1",
		ParametersSchema: json.RawMessage(`{"type":"object","required":["url","depth"],"properties":{"url":{"type":"string"},"depth":{"type":"integer"}}}`),
		OutputSchema:     json.RawMessage(`{"type":"object","properties":{"pages":{"type":"array","items":{"type":"object"}}}}`)}, 80)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"crawl (deterministic agent on runner lnch_1)", "Output (result_data):\n  pages  array of object\n", "Run it: ao run crawl -p url=<string> -p depth=<integer>\n"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("renderAgent:\n%s\nlacks %q", b.String(), s)
		}
	}
}
