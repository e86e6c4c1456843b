package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/cmdline"
)

// webCrawlerBlueprint is the web-crawler's blueprint file, as a runner finds it in its blueprints directory.
const webCrawlerBlueprint = `{
  "name": "web-crawler",
  "description": "Crawls websites to specified depth",
  "command": "python -m crawler.main",
  "parameters_schema": {
    "type": "object",
    "required": ["url"],
    "properties": {
      "url": { "type": "string", "format": "uri" },
      "depth": { "type": "integer", "default": 2 },
      "patterns": { "type": "array", "items": { "type": "string" } }
    }
  }
}`

// echoJSONBlueprint is the example echo-json agent.
const echoJSONBlueprint = `{
  "name": "echo-json",
  "description": "Echoes parameters as JSON (for testing)",
  "command": "python -c \"import sys, json; print(json.dumps(json.loads(sys.stdin.read())))\"",
  "parameters_schema": {
    "type": "object",
    "properties": {
      "message": { "type": "string" },
      "count": { "type": "integer" }
    }
  }
}`

func TestParseBlueprintExamples(t *testing.T) {
	t.Parallel()

	b, err := ParseBlueprint([]byte(webCrawlerBlueprint), AgentTypeDeterministic)
	if err != nil {
		t.Fatalf("ParseBlueprint(web-crawler): %v", err)
	}
	if b.Name != "web-crawler" || b.Type != AgentTypeDeterministic || b.Command != "python -m crawler.main" ||
		b.Description != "Crawls websites to specified depth" {
		t.Errorf("ParseBlueprint(web-crawler) = %+v", b)
	}
	s, err := CompileSchema(b.EffectiveParametersSchema())
	if err != nil {
		t.Fatalf("web-crawler parameters_schema: %v", err)
	}
	out, errs, err := s.Normalize(json.RawMessage(`{"url":"https://example.com","patterns":["*.html","*.md"]}`))
	if err != nil || errs != nil {
		t.Fatalf("web-crawler Normalize: %s %v", formatFieldErrors(errs), err)
	}
	if want := `{"depth":2,"patterns":["*.html","*.md"],"url":"https://example.com"}`; string(out) != want {
		t.Errorf("web-crawler Normalize = %s, want %s", out, want)
	}

	b, err = ParseBlueprint([]byte(echoJSONBlueprint), AgentTypeDeterministic)
	if err != nil {
		t.Fatalf("ParseBlueprint(echo-json): %v", err)
	}
	words, err := cmdline.Split(b.Command)
	if err != nil {
		t.Fatalf("cmdline.Split(%q): %v", b.Command, err)
	}
	want := []string{"python", "-c", "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))"}
	if !slices.Equal(words, want) {
		t.Errorf("echo-json command words = %q, want %q", words, want)
	}
}

func TestParseBlueprint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc   string
		defaultType AgentType
		wantType    AgentType
		wantErr     string // substring; empty means success
		wantCode    string
	}{
		{name: "default type deterministic", doc: `{"name":"a","command":"x"}`, defaultType: AgentTypeDeterministic, wantType: AgentTypeDeterministic},
		{name: "default type agent", doc: `{"name":"a"}`, defaultType: AgentTypeAgent, wantType: AgentTypeAgent},
		{name: "alias autonomous", doc: `{"name":"a","type":"autonomous"}`, defaultType: AgentTypeDeterministic, wantType: AgentTypeAgent},
		{name: "alias procedural", doc: `{"name":"a","type":"Procedural","command":"x"}`, defaultType: AgentTypeAgent, wantType: AgentTypeDeterministic},
		{name: "explicit type wins", doc: `{"name":"a","type":"agent"}`, defaultType: AgentTypeDeterministic, wantType: AgentTypeAgent},
		{name: "all fields", doc: `{"name":"r.x_1-2","type":"agent","description":"d","tags":["gpu","py"],
			"parameters_schema":{"type":"object"},"output_schema":{"type":"object"},"demands":{"hostname":"h","tags":["gpu"]},
			"system_prompt":"p","mcp_servers":{"m":{"command":"x"}},"executor_config":{"model":"m"},"output_retries":2,"disabled":true}`,
			wantType: AgentTypeAgent},

		{name: "bad JSON", doc: `{"name":`, wantErr: "invalid JSON", wantCode: "invalid_blueprint"},
		{name: "two documents", doc: `{"name":"a","command":"x"} {}`, wantErr: "unexpected data after the blueprint", wantCode: "invalid_blueprint"},
		{name: "not an object", doc: `["a"]`, wantErr: "invalid JSON", wantCode: "invalid_blueprint"},
		{name: "unknown field", doc: `{"name":"a","command":"x","parameter_schema":{}}`, wantErr: `unknown field "parameter_schema"`, wantCode: "invalid_blueprint"},
		{name: "unknown type", doc: `{"name":"a","type":"robot"}`, wantErr: `unknown agent type "robot"`, wantCode: "invalid_blueprint"},
		{name: "missing name", doc: `{"command":"x"}`, defaultType: AgentTypeDeterministic, wantErr: "name is required", wantCode: "invalid_blueprint"},
		{name: "bad name", doc: `{"name":"has space","command":"x"}`, defaultType: AgentTypeDeterministic, wantErr: `name "has space" must be`, wantCode: "invalid_blueprint"},
		{name: "name too long", doc: `{"name":"` + strings.Repeat("a", 129) + `","command":"x"}`, defaultType: AgentTypeDeterministic, wantErr: "must be 1-128 characters", wantCode: "invalid_blueprint"},
		{name: "no type and no default", doc: `{"name":"a"}`, wantErr: "type is required", wantCode: "invalid_blueprint"},
		// A deterministic agent run by a Go function has no command; LoadBlueprints requires one.
		{name: "deterministic without command", doc: `{"name":"a"}`, defaultType: AgentTypeDeterministic, wantType: AgentTypeDeterministic},
		{name: "blank command", doc: `{"name":"a","command":"  "}`, defaultType: AgentTypeDeterministic, wantErr: `blueprint "a": command: command is empty`, wantCode: "invalid_blueprint"},
		{name: "unterminated quote in command", doc: `{"name":"a","command":"python -c 'x"}`, defaultType: AgentTypeDeterministic, wantErr: "unterminated ' quote", wantCode: "invalid_blueprint"},
		{name: "malformed parameters_schema", doc: `{"name":"a","command":"x","parameters_schema":{"type":"strang"}}`, defaultType: AgentTypeDeterministic,
			wantErr: `blueprint "a": parameters_schema: invalid schema: at type: 'strang' is not one of`, wantCode: "invalid_schema"},
		{name: "parameters_schema not a schema", doc: `{"name":"a","command":"x","parameters_schema":"url"}`, defaultType: AgentTypeDeterministic,
			wantErr: "parameters_schema: invalid schema: at the root: 'url' is not of type", wantCode: "invalid_schema"},
		{name: "parameters_schema with a remote ref", doc: `{"name":"a","type":"agent","parameters_schema":{"$ref":"https://example.com/s.json"}}`,
			wantErr: `parameters_schema: invalid schema: it refers to "https://example.com/s.json"`, wantCode: "invalid_schema"},
		{name: "malformed output_schema", doc: `{"name":"a","command":"x","output_schema":{"properties":{"n":{"minLength":-1}}}}`, defaultType: AgentTypeDeterministic,
			wantErr: `blueprint "a": output_schema: invalid schema: at properties.n.minLength: -1 is less than the minimum of 0`, wantCode: "invalid_schema"},
		{name: "negative timeout", doc: `{"name":"a","command":"x","timeout_seconds":-1}`, defaultType: AgentTypeDeterministic, wantErr: "timeout_seconds must be between 0 and"},
		{name: "huge timeout", doc: `{"name":"a","command":"x","timeout_seconds":1e300}`, defaultType: AgentTypeDeterministic, wantErr: "timeout_seconds must be between 0 and"},
		{name: "trailing bracket", doc: `{"name":"a","command":"x"}]`, wantErr: "unexpected data after the blueprint", wantCode: "invalid_blueprint"},
		{name: "output_retries out of range", doc: `{"name":"a","type":"agent","output_retries":11}`, wantErr: "output_retries must be between 0 and 10"},
		{name: "bad env name", doc: `{"name":"a","command":"x","env":{"A=B":"1"}}`, defaultType: AgentTypeDeterministic, wantErr: `env name "A=B" is not valid`},
		{name: "bad tag", doc: `{"name":"a","command":"x","tags":["has space"]}`, defaultType: AgentTypeDeterministic, wantErr: `tag "has space"`},
		{name: "mcp_servers of every kind", doc: `{"name":"a","type":"agent","mcp_servers":{"fs":{"command":"npx","args":["-y","fs"],"env":{"K":"v"}},
			"web":{"type":"http","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer x"}},"old":{"type":"sse","url":"http://127.0.0.1:9/sse"},
			"sock":{"type":"ws","url":"wss://x.example"},"more":{"type":"stdio","command":"x","timeout":5}}}`, wantType: AgentTypeAgent},
		{name: "malformed mcp_servers", doc: `{"name":"a","type":"agent","mcp_servers":{"broken":{"type":"http"},"alsobroken":{"command":5}}}`,
			wantErr: `blueprint "a": mcp_servers: "alsobroken": command must be a string; "broken": url is required`, wantCode: "invalid_blueprint"},
		{name: "mcp server fields", doc: `{"name":"a","type":"agent","mcp_servers":{"a":[],"b":{"type":"grpc"},"c":{"type":"sse","url":"ftp://x"},
			"d":{"command":"x","args":"-v","env":{"K":1}},"e":{"type":"http","url":"https://x","headers":["h"]},"f":{"type":7},"g":{"command":" "}}}`,
			wantErr: `mcp_servers: "a": must be an object; "b": type "grpc" is not one of stdio, http, sse, ws; "c": url "ftp://x" must be an absolute http or https URL; ` +
				`"d": args must be a list of strings; "d": env must be an object of strings; "e": headers must be an object of strings; "f": type must be a string; "g": command must not be empty`,
			wantCode: "invalid_blueprint"},
		{name: "runner_id demanded", doc: `{"name":"a","type":"agent","demands":{"runner_id":"lnch_1"}}`, wantErr: "runner_id cannot be set on a blueprint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := ParseBlueprint([]byte(tt.doc), tt.defaultType)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseBlueprint(%s): %v", tt.doc, err)
				}
				if b.Type != tt.wantType {
					t.Errorf("ParseBlueprint(%s).Type = %q, want %q", tt.doc, b.Type, tt.wantType)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseBlueprint(%s) = %+v, want an error containing %q", tt.doc, b, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseBlueprint(%s) error:\ngot  %v\nwant it to contain %q", tt.doc, err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseBlueprint(%s) error %v does not wrap ErrInvalid", tt.doc, err)
			}
			if tt.wantCode != "" && ErrorCode(err) != tt.wantCode {
				t.Errorf("ParseBlueprint(%s) error code = %q, want %q", tt.doc, ErrorCode(err), tt.wantCode)
			}
		})
	}
}

func TestEffectiveParametersSchema(t *testing.T) {
	t.Parallel()
	declared := json.RawMessage(`{"type":"object"}`)
	tests := []struct {
		name string
		b    Blueprint
		want json.RawMessage
	}{
		{"AI agent without schema", Blueprint{Type: AgentTypeAgent}, json.RawMessage(ImplicitPromptSchema)},
		{"AI agent with schema", Blueprint{Type: AgentTypeAgent, ParametersSchema: declared}, declared},
		{"deterministic with schema", Blueprint{Type: AgentTypeDeterministic, ParametersSchema: declared}, declared},
		{"deterministic without schema", Blueprint{Type: AgentTypeDeterministic}, nil},
	}
	for _, tt := range tests {
		if got := tt.b.EffectiveParametersSchema(); !bytes.Equal(got, tt.want) {
			t.Errorf("%s: EffectiveParametersSchema() = %s, want %s", tt.name, got, tt.want)
		}
	}

	// The implicit schema is the {prompt} schema, and it validates as documented.
	s := mustCompile(t, string(ImplicitPromptSchema))
	for _, tc := range []struct {
		params string
		want   []FieldError
	}{
		{`{"prompt":"Research quantum computing trends"}`, nil},
		{`{}`, []FieldError{{Path: "$", Message: "'prompt' is a required property", SchemaPath: "required"}}},
		{`{"prompt":""}`, []FieldError{{Path: "$.prompt", Message: "'' is too short", SchemaPath: "properties.prompt.minLength"}}},
		{`{"prompt":7}`, []FieldError{{Path: "$.prompt", Message: "7 is not of type 'string'", SchemaPath: "properties.prompt.type"}}},
	} {
		if _, errs, err := s.Normalize(json.RawMessage(tc.params)); err != nil || !slices.Equal(errs, tc.want) {
			t.Errorf("implicit schema, params %s:\ngot  %s (%v)\nwant %s", tc.params, formatFieldErrors(errs), err, formatFieldErrors(tc.want))
		}
	}
}

func TestBlueprintTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seconds float64
		want    time.Duration
	}{
		{0, 0}, {-5, 0}, {1.5, 1500 * time.Millisecond}, {3600, time.Hour},
	} {
		if got := (&Blueprint{TimeoutSeconds: tc.seconds}).Timeout(); got != tc.want {
			t.Errorf("Timeout() with timeout_seconds %v = %v, want %v", tc.seconds, got, tc.want)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadBlueprints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"web-crawler.json": webCrawlerBlueprint,
		"echo-json.json":   echoJSONBlueprint,
		"helper.json":      `{"name":"helper","type":"autonomous","system_prompt":"help"}`,
		"README.md":        "not a blueprint",
		"notes.json.bak":   "{",
	})
	bs, err := LoadBlueprints(dir, AgentTypeDeterministic)
	if err != nil {
		t.Fatalf("LoadBlueprints: %v", err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, b.Name+":"+string(b.Type))
	}
	want := []string{"echo-json:deterministic", "helper:agent", "web-crawler:deterministic"} // file name order
	if !slices.Equal(got, want) {
		t.Errorf("LoadBlueprints = %q, want %q", got, want)
	}

	// A coordinator's directory defaults to AI agents.
	agentDir := t.TempDir()
	writeFiles(t, agentDir, map[string]string{"r.json": `{"name":"researcher","description":"Research assistant"}`})
	as, err := LoadBlueprints(agentDir, AgentTypeAgent)
	if err != nil || len(as) != 1 || as[0].Type != AgentTypeAgent {
		t.Errorf("LoadBlueprints(agent dir, AgentTypeAgent) = %+v, %v; want one AI agent", as, err)
	}

	// An empty directory is fine; a missing one is not.
	if bs, err := LoadBlueprints(t.TempDir(), AgentTypeDeterministic); err != nil || len(bs) != 0 {
		t.Errorf("LoadBlueprints(empty dir) = %v, %v; want nothing, no error", bs, err)
	}
	if _, err := LoadBlueprints(filepath.Join(dir, "missing"), AgentTypeDeterministic); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadBlueprints(missing dir) error = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestLoadBlueprintsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.json":        `{"name":"dup","command":"x"}`,
		"b.json":        `{"name":"dup","command":"y"}`,
		"bad-json.json": `{"name":`,
		"no-cmd.json":   `{"name":"nocmd"}`,
		"schema.json":   `{"name":"s","command":"x","parameters_schema":{"required":"url"}}`,
		"ok.json":       `{"name":"ok","command":"x"}`,
	})
	bs, err := LoadBlueprints(dir, AgentTypeDeterministic)
	if err == nil {
		t.Fatalf("LoadBlueprints = %v, want an error", bs)
	}
	if bs != nil {
		t.Errorf("LoadBlueprints returned blueprints %v with its error", bs)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("LoadBlueprints error %v does not wrap ErrInvalid", err)
	}
	msg := err.Error()
	for _, want := range []string{
		filepath.Join(dir, "b.json") + `: name "dup" is already declared in ` + filepath.Join(dir, "a.json"),
		filepath.Join(dir, "bad-json.json") + ": invalid JSON",
		filepath.Join(dir, "no-cmd.json") + `: blueprint "nocmd": command is required`,
		filepath.Join(dir, "schema.json") + `: blueprint "s": parameters_schema: invalid schema: at required: 'url' is not of type 'array'`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("LoadBlueprints error does not contain %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "ok.json") {
		t.Errorf("LoadBlueprints error mentions the valid file ok.json:\n%s", msg)
	}
}

// FuzzParseBlueprint: no input panics; an accepted blueprint is valid, and its JSON form parses back to
// the same blueprint.
func FuzzParseBlueprint(f *testing.F) {
	for _, s := range []string{
		webCrawlerBlueprint,
		echoJSONBlueprint,
		`{"name":"a","type":"procedural","command":"x 'y z'","env":{"K":"v"},"timeout_seconds":1.5}`,
		`{"name":"r","type":"autonomous","tags":["t"],"demands":{"tags":["t"]},"output_retries":0,"mcp_servers":{"m":{}}}`,
		`{"name":"a","command":"x","parameters_schema":{"type":"strang"}}`,
		`{"name":"a","command":"x","allowed_env":["GREETING","LOG_LEVEL"]}`,
		`{"name":"a","command":"x","allowed_env":["LD_PRELOAD"]}`,
		`{"name":"a","command":"x","allowed_env":["path","Bash_Env","GIT_SSH","1X","A=B",""]}`,
		`{}`, `null`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBlueprint(data, AgentTypeDeterministic)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseBlueprint(%q): error %v does not wrap ErrInvalid", data, err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("ParseBlueprint(%q) accepted a blueprint that Validate rejects: %v", data, err)
		}
		// Every name a valid blueprint allows may be set by a run, and nothing else may.
		allowed := map[string]string{}
		for _, n := range b.AllowedEnv {
			allowed[n] = "v"
		}
		if err := b.CheckRunEnv(allowed); err != nil {
			t.Fatalf("ParseBlueprint(%q) accepted allowed_env %q, which CheckRunEnv refuses: %v", data, b.AllowedEnv, err)
		}
		if err := b.CheckRunEnv(map[string]string{"LD_PRELOAD": "x"}); err == nil {
			t.Fatalf("ParseBlueprint(%q): CheckRunEnv accepts LD_PRELOAD", data)
		}
		if b.Command != "" {
			if _, err := cmdline.Split(b.Command); err != nil {
				t.Fatalf("ParseBlueprint(%q) accepted command %q: %v", data, b.Command, err)
			}
		}
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", b, err)
		}
		b2, err := ParseBlueprint(enc, "")
		if err != nil {
			t.Fatalf("ParseBlueprint(json.Marshal(ParseBlueprint(%q))) = %v", data, err)
		}
		if enc2, _ := json.Marshal(b2); !bytes.Equal(enc, enc2) {
			t.Fatalf("blueprint changed through a JSON round trip:\n%s\n%s", enc, enc2)
		}
	})
}
