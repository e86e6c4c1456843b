package fakeanthropic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends a Messages API request with the given messages and returns the status, the headers and the
// body (for a stream, the data of each event, in order).
func post(t *testing.T, url string, stream bool, tools bool, msgs ...map[string]any) (int, http.Header, []string) {
	t.Helper()
	req := map[string]any{"model": "claude-test", "stream": stream, "messages": msgs, "max_tokens": 100}
	if tools {
		req["tools"] = []any{map[string]any{"name": "Read"}}
	}
	b, _ := json.Marshal(req)
	resp, err := http.Post(url+"/v1/messages?beta=true", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !stream || resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, []string{string(body)}
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
		}
	}
	return resp.StatusCode, resp.Header, events
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestStream(t *testing.T) {
	t.Parallel()
	s, url := Start(t)
	status, _, evs := post(t, url, true, true, user("SCENARIO text"))
	if status != http.StatusOK || len(evs) != 6 {
		t.Fatalf("status %d, events %q", status, evs)
	}
	// message_start carries the usage as the stream began (output 1), message_delta the final output.
	for _, want := range []string{`"type":"message_start"`, `"output_tokens":1`, `"input_tokens":11`} {
		if !strings.Contains(evs[0], want) {
			t.Errorf("message_start %s lacks %s", evs[0], want)
		}
	}
	if !strings.Contains(evs[2], `"text":"hello from the fake API"`) || !strings.Contains(evs[4], `"output_tokens":7`) {
		t.Errorf("events %q", evs)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Scenario != "text" || r[0].Status != 200 || !r[0].Stream {
		t.Errorf("requests %+v", r)
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	s, url := Start(t)
	for _, tt := range []struct {
		scenario string
		status   int
		header   string // a header the answer must carry
		body     string // a part of the body
	}{
		{"overloaded", 529, "", `"type":"overloaded_error"`},
		{"ratelimit", 429, "Retry-After", `"type":"rate_limit_error"`},
		{"usagelimit", 429, "Anthropic-Ratelimit-Unified-Reset", `"type":"rate_limit_error"`},
		{"servererror", 500, "", `"type":"api_error"`},
		{"badrequest", 400, "", `"type":"invalid_request_error"`},
		{"json", 200, "", `{\"wrong\": 1}`},
		{"tool mcp__orchestrator__list_agent_blueprints {\"tags\":[\"x\"]}", 200, "", `"name":"mcp__orchestrator__list_agent_blueprints","input":{"tags":["x"]}`},
		{"deny", 200, "", `"name":"Write"`},
		{"unknown", 200, "", `"text":"ok"`},
	} {
		status, h, body := post(t, url, false, true, user("SCENARIO "+tt.scenario))
		if status != tt.status || (tt.header != "" && h.Get(tt.header) == "") || !strings.Contains(body[0], tt.body) {
			t.Errorf("%s: %d %v %s", tt.scenario, status, h, body)
		}
	}
	if got := s.Requests()[2]; got.Status != 429 {
		t.Errorf("request record %+v", got)
	}

	// A tool's result comes back in the answer; a correction fixes the json answer.
	_, _, body := post(t, url, false, true, user("SCENARIO tool Read {}"),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "file text"}}})
	if !strings.Contains(body[0], `tool said: [tool_result toolu_1] file text`) {
		t.Errorf("tool result: %s", body)
	}
	_, _, body = post(t, url, false, true, user("SCENARIO json"), map[string]any{"role": "assistant", "content": `{"wrong": 1}`}, user("Your answer does not match"))
	if !strings.Contains(body[0], `{\"answer\": \"fixed\"}`) {
		t.Errorf("correction: %s", body)
	}
	_, _, body = post(t, url, false, true, user("SCENARIO count"), map[string]any{"role": "assistant", "content": "earlier answers: 0"}, user("again"))
	if !strings.Contains(body[0], "earlier answers: 1") {
		t.Errorf("count: %s", body)
	}
}

// overloaded-once fails the agent's first request only; overloaded-turn1 fails until the conversation is
// resumed with another prompt.
func TestPassingOverload(t *testing.T) {
	t.Parallel()
	_, url := Start(t)
	want := func(status int, tools bool, msgs ...map[string]any) {
		t.Helper()
		if got, _, body := post(t, url, false, tools, msgs...); got != status {
			t.Errorf("status %d (%s), want %d", got, body, status)
		}
	}
	want(200, false, user("SCENARIO overloaded-once")) // a side request (no tools) is not the agent's
	want(529, true, user("SCENARIO overloaded-once"))
	want(200, true, user("SCENARIO overloaded-once"))

	first := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "<reminder>"}, map[string]any{"type": "text", "text": "SCENARIO overloaded-turn1"}}}
	want(529, true, first)
	want(529, true, first) // the CLI's own retry
	resumed := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "<reminder>"},
		map[string]any{"type": "text", "text": "SCENARIO overloaded-turn1"}, map[string]any{"type": "text", "text": "continue"}}}
	want(200, true, resumed)
}
