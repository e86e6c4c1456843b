package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Event types written by the library. Executors may append events of other types; types are free-form
// lowercase words.
const (
	// EventMessage: a conversation message ({"role": "assistant", "content": [...]}).
	EventMessage = "message"
	// EventStderr: one line a deterministic command wrote to stderr ({"line": "..."}, with "truncated": true
	// when the line was cut at the executor's limit).
	EventStderr = "stderr"
	// EventStderrDropped: stderr lines that could not be kept ({"dropped_lines": n, "reason": …}): the
	// executor's queue was full ("queue_full": the program wrote faster than the session could record), or
	// the coordinator did not store them ("not_stored", with "error"). It stands where the lines would have
	// been, so a reader knows the log has a gap and how large.
	EventStderrDropped = "stderr_dropped"
	// EventProgress: a progress note from an executor ({"message": "..."}).
	EventProgress = "progress"
	// EventToolCall and EventToolResult: an AI agent's tool use.
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	// EventResult: the structured result (the fields of [Result]). The newest one of a run is the session's
	// result, ahead of the last assistant message.
	EventResult = "result"
	// EventRunStarted, EventRunEnded: lifecycle markers written by the coordinator ({"run_id", "status", ...}).
	EventRunStarted = "run_started"
	EventRunEnded   = "run_ended"
	// EventExecutorSession: an executor tells its own session id for resume ({"executor_session_id": "..."}).
	EventExecutorSession = "executor_session"
	// EventCallback: a parent session was resumed with its children's results.
	EventCallback = "callback"
	// EventOutputTruncated: a run's output was cut to fit a limit, and its result says so (Truncated).
	// {"by": "executor" or "runner", "limit_bytes", "kept_bytes", "message", …}: an executor cut a program's
	// output at its own limit ("stream", "output_bytes"), or the runner cut a result to what the coordinator
	// accepts ("result_bytes" and "kept_bytes" are sizes as JSON, "result_data_dropped",
	// "result_text_bytes", "kept_text_bytes").
	EventOutputTruncated = "output_truncated"
	// EventUsage: what one model call (or any spend an agent reports) consumed, as a delta: a [Usage] with
	// its Model set and Models empty ({"model", "input_tokens", "output_tokens", "cache_read_input_tokens",
	// "cache_creation_input_tokens", "cost_usd"}). A zero cost_usd means the reporter does not know it.
	EventUsage = "usage"
	// EventInputRequested: the session opened an [InputRequest] and waits for a person ({"request_id",
	// "kind", "prompt", "schema", "expires_at"?}).
	EventInputRequested = "input_requested"
	// EventInputClosed: an input request was answered, expired or cancelled ({"request_id", "kind",
	// "status", "answer"?, "answered_by"?}).
	EventInputClosed = "input_closed"
)

// Event is an append-only, per-session, sequence-numbered record.
//
// On the wire an event is one flat JSON object: the envelope fields event_type,
// session_id, seq and timestamp next to the payload's own fields
// ({"event_type":"stderr","session_id":"ses_…","seq":3,"timestamp":"…","line":"fetching /"}).
type Event struct {
	SessionID string
	// Seq numbers a session's events from 1, without gaps. The store assigns it.
	Seq  int64
	Type string
	Time time.Time
	// Data is the payload: a JSON object (its envelope keys, if any, are ignored).
	Data json.RawMessage
}

var envelopeKeys = []string{"event_type", "session_id", "seq", "timestamp"}

// MarshalJSON writes the flat wire form.
func (e Event) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"event_type":`)
	writeJSON(&buf, e.Type)
	buf.WriteString(`,"session_id":`)
	writeJSON(&buf, e.SessionID)
	fmt.Fprintf(&buf, `,"seq":%d,"timestamp":`, e.Seq)
	writeJSON(&buf, e.Time.UTC().Format(time.RFC3339Nano))
	data := bytes.TrimSpace(e.Data)
	if len(data) > 2 && data[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("event data: %w", err)
		}
		for _, k := range envelopeKeys {
			delete(m, k)
		}
		if len(m) > 0 {
			rest, err := json.Marshal(m) // sorted keys: stable output
			if err != nil {
				return nil, err
			}
			buf.WriteByte(',')
			buf.Write(rest[1:])
			return buf.Bytes(), nil
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the flat wire form: the envelope fields into the struct, the rest into Data.
func (e *Event) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("event must be a JSON object: %w", err)
	}
	if m == nil {
		return fmt.Errorf("event must be a JSON object")
	}
	*e = Event{}
	if v, ok := m["event_type"]; ok {
		if err := json.Unmarshal(v, &e.Type); err != nil {
			return fmt.Errorf("event_type must be a string")
		}
	}
	if v, ok := m["session_id"]; ok {
		if err := json.Unmarshal(v, &e.SessionID); err != nil {
			return fmt.Errorf("session_id must be a string")
		}
	}
	if v, ok := m["seq"]; ok {
		if err := json.Unmarshal(v, &e.Seq); err != nil {
			return fmt.Errorf("seq must be an integer")
		}
	}
	if v, ok := m["timestamp"]; ok {
		if err := json.Unmarshal(v, &e.Time); err != nil {
			return fmt.Errorf("timestamp must be an RFC 3339 time")
		}
	}
	for _, k := range envelopeKeys {
		delete(m, k)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	e.Data = data
	return nil
}

// NewEvent builds an event with a payload marshalled from data (a struct or map that encodes to an object).
func NewEvent(eventType string, data any) Event {
	var raw json.RawMessage
	switch d := data.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case json.RawMessage:
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		}
		raw = b
	}
	return Event{Type: eventType, Data: raw}
}

// DecodeData unmarshals the payload into v.
func (e *Event) DecodeData(v any) error { return json.Unmarshal(e.Data, v) }

func writeJSON(buf *bytes.Buffer, v any) {
	b, _ := json.Marshal(v)
	buf.Write(b)
}
