package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// TestOutputSchemas: every tool declares an output schema, an object schema. (That every answer matches
// its tool's schema is checked by callParams, for every call of every test.)
func TestOutputSchemas(t *testing.T) {
	f := newFixture(t)
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{}), nil, nil)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.Tools) != len(allTools) {
		t.Fatalf("%d tools, want %d", len(lt.Tools), len(allTools))
	}
	for _, tl := range lt.Tools {
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		b, _ := json.Marshal(tl.OutputSchema)
		if err := json.Unmarshal(b, &s); err != nil || s.Type != "object" || len(s.Properties) == 0 {
			t.Errorf("%s: output schema %s, want an object schema", tl.Name, b)
		}
	}
}

// TestCapabilities: the server advertises tools without listChanged (it cannot send the notification),
// and nothing it does not serve.
func TestCapabilities(t *testing.T) {
	f := newFixture(t)
	endpoint := f.serveMCP(t, mcpserver.Config{})
	for _, version := range []string{"", "2025-11-25"} { // the newest protocol (server/discover), and initialize
		cs := connectHTTPVersion(t, endpoint, nil, nil, version)
		caps := cs.InitializeResult().Capabilities
		if caps == nil || caps.Tools == nil || caps.Tools.ListChanged {
			t.Errorf("protocol %q: tools capability = %+v, want tools without listChanged", version, caps)
			continue
		}
		// Compared as JSON, the wire form, so that every capability counts, deprecated ones (logging) too.
		raw, err := json.Marshal(caps)
		if err != nil {
			t.Fatal(err)
		}
		var advertised map[string]any
		if err := json.Unmarshal(raw, &advertised); err != nil {
			t.Fatal(err)
		}
		if _, ok := advertised["tools"]; len(advertised) != 1 || !ok {
			t.Errorf("protocol %q: capabilities %s advertise more than tools", version, raw)
		}
	}
}

// TestArgumentErrors: arguments that do not match a tool's input schema are one tool error naming every
// problem — missing and unknown arguments included, each with what to do — whatever the transport.
func TestArgumentErrors(t *testing.T) {
	f := newFixture(t)
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{}), nil, nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string // one per problem, in order
	}{
		{"start_agent_session", map[string]any{"agent": "add", "mode": "fast", "parameters": "x"}, []string{
			"missing required argument 'agent_name': name of the agent to invoke",
			"unknown argument 'agent'; did you mean 'agent_name'?",
			"argument 'mode': 'fast' is not one of ['sync', 'async_poll', 'async_callback']",
			"argument 'parameters': 'x' is not of type 'object'",
		}},
		{"get_agent_session_result", map[string]any{"sessionId": "ses_x", "wait_seconds": -1, "zzz": 1}, []string{
			"missing required argument 'session_id'",
			"unknown argument 'sessionId'; did you mean 'session_id'?",
			"unknown argument 'zzz'; get_agent_session_result takes session_id, wait_seconds",
			"argument 'wait_seconds': -1 is less than the minimum of 0",
		}},
		{"list_agent_blueprints", map[string]any{"tags": []any{"a", 5}}, []string{
			"argument 'tags' at $.tags[1]: 5 is not of type 'string'",
		}},
		{"resume_agent_session", map[string]any{"session_id": "ses_x", "promt": "more", "mdoe": "sync"}, []string{
			"missing required argument 'prompt'",
			"unknown argument 'mdoe'; did you mean 'mode'?",
			"unknown argument 'promt'; did you mean 'prompt'?",
		}},
	} {
		e := failed(t, call(t, cs, tc.tool, tc.args))
		if e.Error != "invalid_arguments" || e.Tool != tc.tool || len(e.ValidationErrors) != len(tc.want) {
			t.Errorf("%s %v: %s, want %d problems", tc.tool, tc.args, e.Raw, len(tc.want))
			continue
		}
		for i, want := range tc.want {
			got := e.ValidationErrors[i]
			if !strings.HasPrefix(got.Message, want) || !strings.HasPrefix(got.Path, "$.") {
				t.Errorf("%s: problem %d = %+v, want a message starting %q", tc.tool, i, got, want)
			}
			if !strings.Contains(e.Hint, got.Message) {
				t.Errorf("%s: the hint does not say %q:\n%s", tc.tool, got.Message, e.Hint)
			}
		}
	}
	// Nothing was started by the refused calls.
	if page, err := f.coord.ListSessions(context.Background(), orchestrator.SessionFilter{}); err != nil || len(page.Sessions) != 0 {
		t.Errorf("sessions after refused calls: %v %v", page, err)
	}
	// Valid arguments pass, defaults included (mode defaults to sync).
	out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}}))
	if !out.Status.Ended() || out.Result == nil || !slices.Contains([]string{`{"sum":3}`}, string(out.Result.ResultData)) {
		t.Errorf("valid start = %+v", out)
	}
	// Arguments that are not an object at all.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_agent_schema", Arguments: []any{1}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "invalid_arguments") {
		t.Errorf("array arguments: %v %s", err, text(res))
	}
}
