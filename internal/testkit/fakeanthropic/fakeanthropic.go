// Package fakeanthropic is a stand-in for the Anthropic Messages API on loopback, so that tests can run the
// real Claude Code CLI (ANTHROPIC_BASE_URL=<URL>, any ANTHROPIC_API_KEY) through whole turns offline,
// deterministically and for free.
//
// Replies are scripted: the first user message that contains the word SCENARIO chooses one by the word
// after it ("SCENARIO text", "SCENARIO tool mcp__orchestrator__list_agent_blueprints {}", …; see
// [Scenarios]). A request without one is answered "ok". Every reply of a scenario that answers carries
// the same usage, [Usage], and streams the way the real API does: message_start with output_tokens 1,
// the content blocks, then message_delta with the final output_tokens.
//
// Errors come as the API sends them: a status, an {"type":"error","error":{…}} body and, for a usage
// limit, the anthropic-ratelimit-unified-* headers that a Claude subscription's limit sends.
package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Usage is the usage of every message the server answers with: input 11, output 7, cache writes 5, cache
// reads 3 — small, distinct numbers, so that a test can tell which figure went where.
var Usage = MessageUsage{InputTokens: 11, OutputTokens: 7, CacheCreationInputTokens: 5, CacheReadInputTokens: 3}

// MessageUsage is a message's usage, in the API's names.
type MessageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Scenarios are the words that may follow SCENARIO in a prompt:
//
//	text              answers "hello from the fake API"
//	count             answers "earlier answers: N", N the conversation's assistant messages: 1 after one
//	                  --resume, which shows the conversation was resumed
//	json              answers {"wrong": 1}, and {"answer": "fixed"} once a later user message says the
//	                  answer "does not match" (an output-schema correction)
//	tool NAME JSON    calls the tool NAME with the input JSON (the rest of the line), then answers
//	                  "tool said: " and the tool's result
//	deny              asks for Bash and Write in one message, then answers "I was refused: …"
//	maxturns          asks for Read every time (for --max-turns)
//	overloaded        529 overloaded_error, every time
//	overloaded-once   529 overloaded_error for the first request with tools this server sees with this
//	                  scenario line (the agent's own, not a side request such as a session title), then
//	                  answers "hello after a retry"
//	overloaded-turn1  529 overloaded_error until the conversation is resumed with another prompt, then
//	                  answers "resumed; earlier answers: N" (a retry that resumes the Claude session
//	                  succeeds)
//	ratelimit         429 rate_limit_error with retry-after: 1
//	usagelimit        429 rate_limit_error with the headers of a subscription's usage limit: status
//	                  rejected, the five-hour claim, and a reset time an hour ahead ([Server.ResetAt])
//	servererror       500 api_error
//	badrequest        400 invalid_request_error
var Scenarios = []string{"text", "count", "json", "tool", "deny", "maxturns", "overloaded", "overloaded-once", "overloaded-turn1",
	"ratelimit", "usagelimit", "servererror", "badrequest"}

// Request is what the server records of one request.
type Request struct {
	N        int      `json:"n"`
	Method   string   `json:"method"`
	Path     string   `json:"path"`
	Model    string   `json:"model,omitempty"`
	Stream   bool     `json:"stream,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	Scenario string   `json:"scenario,omitempty"`
	Status   int      `json:"status"`
	// Last is the text of the request's last message (tool results rendered as "[tool_result ID] …").
	Last string `json:"last,omitempty"`
}

// Server is the stand-in API. Its zero value is not usable: use [New] or [Start].
type Server struct {
	// ResetAt is the reset time the usagelimit scenario announces, whole seconds. Default: an hour ahead.
	ResetAt time.Time
	// LimitClaim is the limit the usagelimit scenario says was hit: five_hour (the default), seven_day, ….
	LimitClaim string

	mu   sync.Mutex
	n    int
	seen map[string]bool
	// firstTexts holds, per overloaded-turn1 scenario line, the user text blocks of its first request.
	firstTexts map[string]int
	requests   []Request
}

// New returns a server; serve it with net/http (it is an http.Handler).
func New() *Server {
	return &Server{ResetAt: time.Now().Add(time.Hour).Truncate(time.Second), LimitClaim: "five_hour", seen: map[string]bool{}, firstTexts: map[string]int{}}
}

// Start serves a new server on a loopback port until the test ends, and returns it with its base URL.
func Start(t testing.TB) (*Server, string) {
	t.Helper()
	s := New()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// Requests returns the requests served so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

type request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func blocks(content json.RawMessage) []block {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(content, &bs)
	return bs
}

// texts renders a message's content as text, tool results included.
func texts(content json.RawMessage) string {
	var out []string
	for _, b := range blocks(content) {
		switch b.Type {
		case "text":
			out = append(out, b.Text)
		case "tool_result":
			out = append(out, fmt.Sprintf("[tool_result %s] %s", b.ToolUseID, texts(b.Content)))
		}
	}
	return strings.Join(out, "\n")
}

// scenario returns the scenario line of the first user message that names one ("" for none).
func scenario(msgs []message) string {
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		t := texts(m.Content)
		if i := strings.Index(t, "SCENARIO "); i >= 0 {
			line, _, _ := strings.Cut(t[i+len("SCENARIO "):], "\n")
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// toolResults counts the tool results of the conversation, and returns the last one's text.
func toolResults(msgs []message) (int, string) {
	n, last := 0, ""
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_result" {
				n++
				last = fmt.Sprintf("[tool_result %s] %s", b.ToolUseID, texts(b.Content))
			}
		}
	}
	return n, last
}

// answers counts the assistant messages of the conversation: the earlier turns' answers.
func answers(msgs []message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// userTexts counts the text blocks of the conversation's user messages. Claude Code sends a turn's prompt
// as a text block, and merges the prompts of turns that got no answer into one user message, so a
// resumed conversation has more of them than the turn it resumes.
func userTexts(msgs []message) int {
	n := 0
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "text" {
				n++
			}
		}
	}
	return n
}

// reply is a scripted answer: content blocks and a stop reason, or an error.
type reply struct {
	blocks  []block
	stop    string
	status  int
	errType string
	errMsg  string
	header  http.Header
}

func text(s string) reply {
	return reply{blocks: []block{{Type: "text", Text: s}}, stop: "end_turn", status: 200}
}

func failure(status int, typ, msg string) reply {
	return reply{status: status, errType: typ, errMsg: msg}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (s *Server) plan(req *request) reply {
	line := scenario(req.Messages)
	word, rest, _ := strings.Cut(line, " ")
	k, last := toolResults(req.Messages)
	tool := func(i int, name string, input json.RawMessage) block {
		return block{Type: "tool_use", ID: fmt.Sprintf("toolu_fake%02d%02d", k, i), Name: name, Input: input}
	}
	switch word {
	case "text":
		return text("hello from the fake API")
	case "count":
		return text(fmt.Sprintf("earlier answers: %d", answers(req.Messages)))
	case "json":
		for _, m := range req.Messages[1:] {
			if m.Role == "user" && strings.Contains(texts(m.Content), "does not match") {
				return text(`{"answer": "fixed"}`)
			}
		}
		return text(`{"wrong": 1}`)
	case "tool":
		name, input, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if k > 0 {
			return text("tool said: " + cut(last, 2000))
		}
		if !json.Valid([]byte(input)) {
			input = "{}"
		}
		return reply{blocks: []block{tool(1, name, json.RawMessage(input))}, stop: "tool_use", status: 200}
	case "deny":
		if k > 0 {
			return text("I was refused: " + cut(last, 300))
		}
		return reply{blocks: []block{
			tool(1, "Bash", json.RawMessage(`{"command":"touch denied-file","description":"create a file"}`)),
			tool(2, "Write", json.RawMessage(`{"file_path":"/denied/denied.txt","content":"x"}`)),
		}, stop: "tool_use", status: 200}
	case "maxturns":
		return reply{blocks: []block{tool(1, "Read", json.RawMessage(`{"file_path":"README.txt"}`))}, stop: "tool_use", status: 200}
	case "overloaded":
		return failure(529, "overloaded_error", "Overloaded (fake)")
	case "overloaded-once":
		// Once for the agent's own request (the one with tools), not for a side request such as the
		// session title Claude Code asks for.
		s.mu.Lock()
		first := len(req.Tools) > 0 && !s.seen[line]
		if len(req.Tools) > 0 {
			s.seen[line] = true
		}
		s.mu.Unlock()
		if first {
			return failure(529, "overloaded_error", "Overloaded (fake)")
		}
		return text("hello after a retry")
	case "overloaded-turn1":
		// The agent's first request (the one with tools) sets how many prompts the first turn has; a
		// request with more is a resumed conversation.
		s.mu.Lock()
		if _, ok := s.firstTexts[line]; !ok && len(req.Tools) > 0 {
			s.firstTexts[line] = userTexts(req.Messages)
		}
		k, ok := s.firstTexts[line]
		s.mu.Unlock()
		if !ok || userTexts(req.Messages) <= k {
			return failure(529, "overloaded_error", "Overloaded (fake)")
		}
		return text(fmt.Sprintf("resumed; earlier answers: %d", answers(req.Messages)))
	case "ratelimit":
		r := failure(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit (fake)")
		r.header = http.Header{"Retry-After": {"1"}}
		return r
	case "usagelimit":
		r := failure(429, "rate_limit_error", "This request would exceed your account's rate limit. Please try again later. (fake)")
		r.header = http.Header{
			"Anthropic-Ratelimit-Unified-Status":                  {"rejected"},
			"Anthropic-Ratelimit-Unified-Reset":                   {strconv.FormatInt(s.ResetAt.Unix(), 10)},
			"Anthropic-Ratelimit-Unified-Representative-Claim":    {"five_hour"},
			"Anthropic-Ratelimit-Unified-5h-Status":               {"rejected"},
			"Anthropic-Ratelimit-Unified-5h-Reset":                {strconv.FormatInt(s.ResetAt.Unix(), 10)},
			"Anthropic-Ratelimit-Unified-5h-Utilization":          {"1.0"},
			"Anthropic-Ratelimit-Unified-Fallback":                {"available"},
			"Anthropic-Ratelimit-Unified-Overage-Status":          {"rejected"},
			"Anthropic-Ratelimit-Unified-Overage-Disabled-Reason": {"overage_not_provisioned"},
		}
		return r
	case "servererror":
		return failure(500, "api_error", "Internal server error (fake)")
	case "badrequest":
		return failure(400, "invalid_request_error", "fake invalid request")
	}
	return text("ok")
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	rec := Request{N: n, Method: r.Method, Path: r.URL.Path}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}()
	w.Header().Set("request-id", "req_fake")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		rec.Status = http.StatusNotFound
		writeError(w, http.StatusNotFound, "not_found_error", "fake: no such endpoint")
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		rec.Status = http.StatusBadRequest
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fake: body: "+err.Error())
		return
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	if len(req.Messages) > 0 {
		rec.Last = cut(texts(req.Messages[len(req.Messages)-1].Content), 300)
	}
	rec.Scenario = scenario(req.Messages)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		rec.Status = http.StatusOK
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 42})
		return
	}
	p := s.plan(&req)
	rec.Status = p.status
	if p.status != http.StatusOK {
		for k, v := range p.header {
			w.Header()[k] = v
		}
		writeError(w, p.status, p.errType, p.errMsg)
		return
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	msg := map[string]any{"id": fmt.Sprintf("msg_fake%d", n), "type": "message", "role": "assistant", "model": model,
		"content": p.blocks, "stop_reason": p.stop, "stop_sequence": nil, "usage": Usage}
	if !req.Stream {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	stream(w, msg, p)
}

// stream sends msg as the API's server-sent events.
func stream(w http.ResponseWriter, msg map[string]any, p reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	first := Usage
	first.OutputTokens = 1 // as the real API: the final count comes with message_delta
	start["content"], start["stop_reason"], start["usage"] = []any{}, nil, first
	ev("message_start", map[string]any{"type": "message_start", "message": start})
	for i, b := range p.blocks {
		switch b.Type {
		case "text":
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		case "tool_use":
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": p.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": Usage.OutputTokens}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"})
}
