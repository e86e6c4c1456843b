package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// eventPage is the body of GET /sessions/{id}/events. LastSeq is the cursor to continue from (the after of
// the next request): the sequence number of the last event returned, or the request's after when there
// were none.
type eventPage struct {
	Events  []*orchestrator.Event `json:"events"`
	LastSeq int64                 `json:"last_seq"`
}

// appendedEvents is the body of a POST /sessions/{id}/events answer: the events as stored, with their
// sequence numbers.
type appendedEvents struct {
	Events []*orchestrator.Event `json:"events"`
}

// wantsStream reports whether the request accepts text/event-stream.
func wantsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// listEvents serves GET /sessions/{id}/events: a page of events after ?after= (default 0), at most ?limit=
// (default 100, capped by the coordinator), long-polled up to ?wait= when there are none yet. With
// "Accept: text/event-stream" it serves the live stream instead (see streamEvents).
func (s *server) listEvents(w http.ResponseWriter, r *http.Request) error {
	if wantsStream(r) {
		return s.streamEvents(w, r)
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return err
	}
	wait, err := s.queryWait(r, "wait", 0)
	if err != nil {
		return err
	}
	extendWriteDeadline(w, wait)
	evs, err := s.coord.ListEvents(r.Context(), id, after, int(limit), wait)
	if err != nil {
		return err
	}
	page := eventPage{Events: evs, LastSeq: after}
	if page.Events == nil {
		page.Events = []*orchestrator.Event{}
	}
	if n := len(evs); n > 0 {
		page.LastSeq = evs[n-1].Seq
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// streamEvents serves the session's events as Server-Sent Events: each event is
//
//	id: <seq>
//	event: <event_type>
//	data: <the flat event JSON>
//
// It replays the events after the Last-Event-ID header (or ?after=, or from the start), then follows new
// ones as they are appended, with a ": heartbeat" comment whenever the stream has been idle for
// Config.Heartbeat. It is exempt from the server's write timeout and ends when the client goes away.
//
// Once the session has ended and its last event has been sent, the stream sends an "end" frame and
// closes:
//
//	event: end
//	data: {"session_id":"ses_…","status":"completed","last_seq":12}
//
// The frame has no id, so a client's Last-Event-ID stays that of the last event; it tells a clean end
// from a dropped connection. A resumed AI session's new events are read by opening the stream again. A
// session that is deleted ends the stream after an "error" event.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var after int64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		after, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || after < 0 {
			return badQuery("Last-Event-ID must be an event sequence number, not %q", v)
		}
	} else if after, err = queryInt(r, "after", 0, 0, 1<<62); err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return err
	}
	ctx := r.Context()
	// Errors are still JSON until the stream starts.
	if _, err := s.coord.GetSession(ctx, id); err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.WriteString(w, ": stream of session "+id+"\n\n"); err != nil {
		return nil
	}
	if rc.Flush() != nil {
		return nil
	}
	var buf bytes.Buffer
	for {
		// The session is read before its events: a session's end and its last events (result, run_ended)
		// are stored in one transaction, so once it is seen ended, every event up to its LastEventSeq can
		// be listed.
		sess, err := s.coord.GetSession(ctx, id)
		var evs []*orchestrator.Event
		if err == nil {
			ended := sess.Status.Ended()
			if ended && after >= sess.LastEventSeq {
				writeEnd(w, sess, after)
				_ = rc.Flush()
				return nil
			}
			wait := s.cfg.Heartbeat
			if ended {
				wait = 0 // the rest is stored: send it and end
			}
			evs, err = s.coord.ListEvents(ctx, id, after, int(limit), wait)
			if err == nil && ended && len(evs) == 0 {
				writeEnd(w, sess, after) // nothing more after all (the count and the events disagree)
				_ = rc.Flush()
				return nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, orchestrator.ErrNotFound) {
				s.log.Error("event stream failed", "session_id", id, "err", err)
				err = errors.New("internal server error")
			}
			b, _ := json.Marshal(map[string]string{"error": orchestrator.ErrorCode(err), "message": err.Error()})
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			_ = rc.Flush()
			return nil
		}
		buf.Reset()
		if len(evs) == 0 {
			buf.WriteString(": heartbeat\n\n")
		}
		for _, ev := range evs {
			if err := writeSSE(&buf, ev); err != nil {
				s.log.Error("event stream: cannot encode event", "session_id", id, "seq", ev.Seq, "err", err)
			}
			after = ev.Seq
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return nil
		}
		if rc.Flush() != nil {
			return nil
		}
	}
}

// writeEnd writes the frame that ends the stream of an ended session (see streamEvents).
func writeEnd(w io.Writer, sess *orchestrator.Session, lastSeq int64) {
	b, _ := json.Marshal(streamEnd{SessionID: sess.ID, Status: sess.Status, LastSeq: lastSeq})
	fmt.Fprintf(w, "event: end\ndata: %s\n\n", b)
}

// streamEnd is the data of the "end" frame of an event stream.
type streamEnd struct {
	SessionID string                     `json:"session_id"`
	Status    orchestrator.SessionStatus `json:"status"`
	// LastSeq is the sequence number of the last event sent (or of the Last-Event-ID the client gave).
	LastSeq int64 `json:"last_seq"`
}

func writeSSE(buf *bytes.Buffer, ev *orchestrator.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	fmt.Fprintf(buf, "id: %d\n", ev.Seq)
	if typ := strings.NewReplacer("\r", "", "\n", "").Replace(ev.Type); typ != "" {
		fmt.Fprintf(buf, "event: %s\n", typ)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		buf.WriteString("data: ")
		buf.Write(line)
		buf.WriteByte('\n')
	}
	buf.WriteByte('\n')
	return nil
}

// decodeEvents reads a POST /sessions/{id}/events body: one flat event object, a JSON array of them, or
// {"events": [...]}.
func decodeEvents(data []byte) ([]orchestrator.Event, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, badBody("request body is required: an event object, an array of events or {\"events\": [...]}")
	}
	switch data[0] {
	case '[':
		var evs []orchestrator.Event
		if err := decodeJSON(data, &evs, false); err != nil {
			return nil, err
		}
		return evs, nil
	case '{':
		var probe map[string]json.RawMessage
		if err := decodeJSON(data, &probe, false); err != nil {
			return nil, err
		}
		_, hasType := probe["event_type"]
		if list, ok := probe["events"]; ok && !hasType {
			var evs []orchestrator.Event
			if err := decodeJSON(list, &evs, false); err != nil {
				return nil, err
			}
			return evs, nil
		}
		var ev orchestrator.Event
		if err := decodeJSON(data, &ev, false); err != nil {
			return nil, err
		}
		return []orchestrator.Event{ev}, nil
	}
	return nil, badBody("the body must be an event object, an array of events or {\"events\": [...]}")
}

func (s *server) appendEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	evs, err := decodeEvents(data)
	if err != nil {
		return err
	}
	for i, ev := range evs {
		if err := checkNumbers(ev.Data); err != nil {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "event %d: data %v", i, err)
		}
	}
	out, err := s.coord.AppendEvents(r.Context(), id, evs)
	if err != nil {
		return err
	}
	if out == nil {
		out = []*orchestrator.Event{}
	}
	writeJSON(w, http.StatusCreated, appendedEvents{out})
	return nil
}
