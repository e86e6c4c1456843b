package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
)

// Claude Code's stream-json output (claude -p --output-format stream-json --verbose) is one JSON object
// per line:
//
//	{"type":"system","subtype":"init","session_id":"…","cwd":"…","tools":[…],"model":"…",
//	    "mcp_servers":[{"name":"orchestrator","status":"connected"},{"name":"web","status":"failed"}],…}
//	{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"…"},
//	    {"type":"tool_use","id":"toolu_…","name":"Bash","input":{…}}],…},"parent_tool_use_id":null,"session_id":"…"}
//	{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_…",
//	    "content":"…","is_error":false}]},"session_id":"…"}
//	{"type":"result","subtype":"success","is_error":false,"result":"…","session_id":"…","num_turns":1,
//	    "duration_ms":1234,"total_cost_usd":0.01,"usage":{"input_tokens":9,"output_tokens":510,
//	    "cache_read_input_tokens":36391,"cache_creation_input_tokens":12871,…},
//	    "modelUsage":{"claude-…":{"inputTokens":9,"outputTokens":510,"cacheReadInputTokens":36391,
//	    "cacheCreationInputTokens":12871,"costUSD":0.01,…}},
//	    "permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_…","tool_input":{…}}],…}
//
// The final result's subtype is "success" or an error ("error_max_turns", "error_during_execution", …,
// which carry "errors" instead of "result" and may have is_error false). A model API failure is a result
// with is_error and api_error_status (529, 429, …; null for a connection failure), after an assistant
// message of model "<synthetic>" whose "error" names the kind (server_error, rate_limit, …). Later
// versions (2.1.332) add model_usage_since_last_result: the turn's own usage, where modelUsage and
// total_cost_usd count the whole Claude session across --resume.
//
// Besides those, the executor reads
//
//	{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":515.8,
//	    "error_status":529,"error":"overloaded"}            the CLI retries a failed API call
//	{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795840539,
//	    "rateLimitType":"five_hour",…}}                     a subscription's usage limit, and its reset
//
// Other lines (system status, stream events, …) are ignored.
type streamLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Message   *streamMessage  `json:"message"`
	Parent    *string         `json:"parent_tool_use_id"`
	IsError   bool            `json:"is_error"`
	Result    string          `json:"result"`
	Errors    json.RawMessage `json:"errors"`
	NumTurns  int             `json:"num_turns"`
	Duration  float64         `json:"duration_ms"`
	CostUSD   float64         `json:"total_cost_usd"`
	Model     string          `json:"model"`
	// The init line's MCP servers, each with its status: connected, pending, failed, needs-auth, ….
	MCPServers []mcpServerStatus `json:"mcp_servers"`
	// The result line's refused tool uses and token usage (in total, and per model in modelUsage).
	PermissionDenials []orchestrator.PermissionDenial `json:"permission_denials"`
	Usage             *lineUsage                      `json:"usage"`
	ModelUsage        map[string]*modelUsage          `json:"modelUsage"`
	// ModelUsageSince is the turn's own usage per model, where the CLI reports it (2.1.332).
	ModelUsageSince map[string]*modelUsage `json:"model_usage_since_last_result"`
	// APIErrorStatus is the HTTP status of the model API call that failed the turn.
	APIErrorStatus *int `json:"api_error_status"`
	// Error is an assistant line's error kind (server_error, rate_limit, overloaded,
	// authentication_failed, …), or an api_retry line's.
	Error json.RawMessage `json:"error"`
	// An api_retry line's figures.
	Attempt      int      `json:"attempt"`
	MaxRetries   int      `json:"max_retries"`
	RetryDelayMS float64  `json:"retry_delay_ms"`
	ErrorStatus  *int     `json:"error_status"`
	RateLimit    *rateLim `json:"rate_limit_info"`
}

// rateLim is a rate_limit_event's rate_limit_info.
type rateLim struct {
	Status   string  `json:"status"`   // allowed, allowed_warning, rejected
	ResetsAt float64 `json:"resetsAt"` // Unix seconds
	Type     string  `json:"rateLimitType"`
}

// errorKind returns an error field that is a string ("" otherwise).
func (l *streamLine) errorKind() string {
	var s string
	if json.Unmarshal(l.Error, &s) != nil {
		return ""
	}
	return s
}

type mcpServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// lineUsage is a result line's usage (the Messages API's names).
type lineUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// modelUsage is one model's entry in a result line's modelUsage (Claude Code's camelCase names).
type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

type streamMessage struct {
	// ID and Usage are the API message's: the CLI prints a message once per content block, each line
	// repeating them.
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *lineUsage      `json:"usage"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Limits that keep events under the coordinator's event size limit (256 KiB by default).
const (
	// maxEventText bounds a text, a tool input or a tool result in one event.
	maxEventText = 64 << 10
	// maxStreamLine bounds one stream-json line; a longer one (a huge tool result) is skipped.
	maxStreamLine = 32 << 20
)

// turnStream follows the stream of one claude process: it emits the session's events as the lines
// arrive and keeps what the executor needs once the process has ended.
type turnStream struct {
	sessionID string // the orchestrator session
	sink      orchestrator.EventSink
	ctx       context.Context
	log       *slog.Logger
	// onSession is called with Claude Code's session id when a line names one.
	onSession func(id string)
	// onInit is called with the init line.
	onInit func(l *streamLine)
	// onRetry is called with each api_retry line.
	onRetry func(l *streamLine)
	// usage counts the API messages' usage; nil counts nothing.
	usage *meter

	result    *streamLine // the final result line
	lastText  string      // the text of the last top-level assistant message
	lastError string      // the error kind of the last assistant line that had one
	rateLimit *rateLim    // the last rate_limit_event that said rejected
	lines     int
}

// read consumes r line by line until EOF.
func (s *turnStream) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > maxStreamLine {
				s.log.Warn("claude stream line too long; skipped", "bytes_so_far", len(buf))
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
				buf = buf[:0]
				if err != nil {
					return
				}
			}
			continue
		}
		if line := bytes.TrimSpace(buf); len(line) > 0 {
			s.handle(line)
		}
		buf = buf[:0]
		if err != nil {
			return
		}
	}
}

func (s *turnStream) handle(line []byte) {
	s.lines++
	var l streamLine
	if err := json.Unmarshal(line, &l); err != nil || l.Type == "" {
		s.log.Debug("claude stdout line that is not stream-json", "line", cut(string(line), 512))
		return
	}
	if l.SessionID != "" {
		s.onSession(l.SessionID)
	}
	switch l.Type {
	case "system":
		switch {
		case l.Subtype == "init" && s.onInit != nil:
			s.onInit(&l)
		case l.Subtype == "api_retry" && s.onRetry != nil:
			s.onRetry(&l)
		}
	case "rate_limit_event":
		if l.RateLimit != nil && l.RateLimit.Status == "rejected" {
			s.rateLimit = l.RateLimit
		}
	case "assistant":
		s.assistant(&l)
	case "user":
		s.user(&l)
	case "result":
		s.result = &l
	}
}

func (s *turnStream) assistant(l *streamLine) {
	if l.Message == nil {
		return
	}
	if kind := l.errorKind(); kind != "" {
		s.lastError = kind
	}
	var texts []map[string]string
	var calls []orchestrator.Event
	for _, b := range blocks(l.Message.Content) {
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, map[string]string{"type": "text", "text": cut(b.Text, maxEventText)})
			}
		case "tool_use":
			data := map[string]any{"tool_use_id": b.ID, "name": b.Name}
			if len(b.Input) > maxEventText {
				data["input_truncated"] = true
				data["input_preview"] = cut(string(b.Input), maxEventText)
			} else if len(b.Input) > 0 {
				data["input"] = b.Input
			}
			if l.Parent != nil && *l.Parent != "" {
				data["parent_tool_use_id"] = *l.Parent
			}
			calls = append(calls, s.event(orchestrator.EventToolCall, data))
		}
	}
	var evs []orchestrator.Event
	if len(texts) > 0 {
		msg := map[string]any{"role": "assistant", "content": texts}
		if l.Parent != nil && *l.Parent != "" {
			msg["parent_tool_use_id"] = *l.Parent
		} else {
			parts := make([]string, len(texts))
			for i, t := range texts {
				parts[i] = t["text"]
			}
			s.lastText = strings.Join(parts, "\n")
		}
		evs = append(evs, s.event(orchestrator.EventMessage, msg))
	}
	evs = append(evs, calls...)
	if d := s.usage.message(l.Message); d != nil {
		evs = append(evs, s.event(orchestrator.EventUsage, d))
	}
	s.emit(evs...)
}

func (s *turnStream) user(l *streamLine) {
	if l.Message == nil {
		return
	}
	var evs []orchestrator.Event
	for _, b := range blocks(l.Message.Content) {
		if b.Type != "tool_result" {
			continue
		}
		text := toolResultText(b.Content)
		data := map[string]any{"tool_use_id": b.ToolUseID, "content": cut(text, maxEventText)}
		if len(text) > maxEventText {
			data["truncated"] = true
		}
		if b.IsError {
			data["is_error"] = true
		}
		if l.Parent != nil && *l.Parent != "" {
			data["parent_tool_use_id"] = *l.Parent
		}
		evs = append(evs, s.event(orchestrator.EventToolResult, data))
	}
	s.emit(evs...)
}

func (s *turnStream) event(typ string, data any) orchestrator.Event {
	ev := orchestrator.NewEvent(typ, data)
	ev.SessionID, ev.Time = s.sessionID, time.Now().UTC()
	return ev
}

func (s *turnStream) emit(evs ...orchestrator.Event) {
	if len(evs) == 0 {
		return
	}
	if err := s.sink.Emit(s.ctx, evs...); err != nil {
		s.log.Warn("emit events", "events", len(evs), "error", err)
	}
}

// blocks decodes a message's content: an array of blocks, or a plain string (one text block).
func blocks(content json.RawMessage) []contentBlock {
	var bs []contentBlock
	if json.Unmarshal(content, &bs) == nil {
		return bs
	}
	var text string
	if json.Unmarshal(content, &text) == nil && text != "" {
		return []contentBlock{{Type: "text", Text: text}}
	}
	return nil
}

// toolResultText renders a tool result's content: a string, or its blocks (text as is, others named).
func toolResultText(content json.RawMessage) string {
	var text string
	if json.Unmarshal(content, &text) == nil {
		return text
	}
	var parts []string
	for _, b := range blocks(content) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else if b.Type != "" {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// errorText renders a result line's errors: a list of strings (or of objects with a message).
func errorText(raw json.RawMessage) string {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	var parts []string
	for _, e := range list {
		var s string
		if json.Unmarshal(e, &s) == nil {
			parts = append(parts, s)
			continue
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e, &obj) == nil && obj.Message != "" {
			parts = append(parts, obj.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
