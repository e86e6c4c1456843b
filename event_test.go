package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEventMarshalJSON pins the flat wire form of an event: the envelope first (event_type, session_id,
// seq, timestamp in UTC), then the payload's fields in key order, without any envelope key the payload
// carries.
func TestEventMarshalJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 9, 30, 0, 123456000, time.FixedZone("CET", 3600))
	envelope := `{"event_type":"stderr","session_id":"ses_1","seq":3,"timestamp":"2026-11-22T08:30:00.123456Z"`
	for _, tt := range []struct {
		name, data, want string
	}{
		{"payload after the envelope, keys sorted", `{"z":1,"line":"fetching /"}`, envelope + `,"line":"fetching /","z":1}`},
		{"envelope keys of the payload dropped", `{"seq":99,"event_type":"forged","session_id":"ses_x","timestamp":"then","line":"x"}`, envelope + `,"line":"x"}`},
		{"only envelope keys", `{"seq":99}`, envelope + `}`},
		{"empty object", `{}`, envelope + `}`},
		{"no payload", ``, envelope + `}`},
		{"a payload that is not an object", `[1,2]`, envelope + `}`},
		{"JSON null", `null`, envelope + `}`},
		{"nested values kept as they are", `{"content":[{"type":"text","text":"hi"}]}`, envelope + `,"content":[{"type":"text","text":"hi"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Event{SessionID: "ses_1", Seq: 3, Type: EventStderr, Time: at, Data: json.RawMessage(tt.data)}
			got, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("json.Marshal(%s): %v", tt.data, err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal of data %s\ngot  %s\nwant %s", tt.data, got, tt.want)
			}
		})
	}
	if _, err := json.Marshal(Event{Type: "x", Data: json.RawMessage(`{"a":`)}); err == nil {
		t.Error("json.Marshal of an event whose payload is a broken object succeeded")
	}
}

// TestEventJSONRoundTrip: what MarshalJSON writes, UnmarshalJSON reads back into the same event.
func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := Event{SessionID: "ses_1", Seq: 7, Type: EventRunEnded,
		Time: time.Date(2026, 11, 22, 8, 30, 0, 1000, time.UTC), Data: json.RawMessage(`{"run_id":"run_1","status":"completed"}`)}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	if out.SessionID != in.SessionID || out.Seq != in.Seq || out.Type != in.Type || !out.Time.Equal(in.Time) ||
		string(out.Data) != string(in.Data) {
		t.Errorf("round trip of %s\ngot  %+v (data %s)\nwant %+v (data %s)", b, out, out.Data, in, in.Data)
	}
	// A slice of events, as the events endpoints answer.
	var list []*Event
	if err := json.Unmarshal([]byte(`[`+string(b)+`,{"event_type":"progress","seq":8}]`), &list); err != nil || len(list) != 2 ||
		list[1].Type != EventProgress || list[1].Seq != 8 || string(list[1].Data) != `{}` {
		t.Errorf("json.Unmarshal of a list = %v, %v", list, err)
	}
}

// TestEventUnmarshalJSONErrors: a malformed event is an error that names what is wrong, and decoding into
// a used Event leaves nothing of the previous one.
func TestEventUnmarshalJSONErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{`[]`, "event must be a JSON object"},
		{`null`, "event must be a JSON object"},
		{`"x"`, "event must be a JSON object"},
		{`{"event_type":1}`, "event_type must be a string"},
		{`{"session_id":[]}`, "session_id must be a string"},
		{`{"seq":"3"}`, "seq must be an integer"},
		{`{"seq":1.5}`, "seq must be an integer"},
		{`{"timestamp":"yesterday"}`, "timestamp must be an RFC 3339 time"},
	} {
		var e Event
		if err := json.Unmarshal([]byte(tt.in), &e); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("json.Unmarshal(%s) error = %v, want one containing %q", tt.in, err, tt.want)
		}
	}
	e := Event{SessionID: "ses_old", Seq: 4, Type: "old", Data: json.RawMessage(`{"old":true}`)}
	if err := json.Unmarshal([]byte(`{"event_type":"new"}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.SessionID != "" || e.Seq != 0 || e.Type != "new" || string(e.Data) != `{}` {
		t.Errorf("decoding into a used Event kept its old fields: %+v (data %s)", e, e.Data)
	}
}

// TestNewEvent: the payload is data marshalled, an empty object for nil, raw JSON as is, and for a value
// that cannot be marshalled an object that says why instead of a lost event.
func TestNewEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		data any
		want string
	}{
		{"nil", nil, `{}`},
		{"raw JSON", json.RawMessage(`{"line":"x"}`), `{"line":"x"}`},
		{"a map", map[string]int{"n": 1}, `{"n":1}`},
		{"a struct", struct {
			Message string `json:"message"`
		}{"half way"}, `{"message":"half way"}`},
		{"unmarshalable", map[string]any{"c": make(chan int)}, `{"marshal_error":"json: unsupported type: chan int"}`},
	} {
		e := NewEvent(EventProgress, tt.data)
		if e.Type != EventProgress || string(e.Data) != tt.want {
			t.Errorf("NewEvent(%s) = %s %s, want progress %s", tt.name, e.Type, e.Data, tt.want)
		}
	}
	var d struct{ Line string }
	e := NewEvent(EventStderr, map[string]string{"line": "x"})
	if err := e.DecodeData(&d); err != nil || d.Line != "x" {
		t.Errorf("DecodeData = %+v, %v", d, err)
	}
}
