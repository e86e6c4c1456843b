package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

type sseFrame struct {
	id, event, data string
	comments        []string
}

// readFrame reads one Server-Sent Events frame (up to a blank line).
func readFrame(br *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return f, nil
		case strings.HasPrefix(line, ":"):
			f.comments = append(f.comments, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "id: "):
			f.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			f.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			f.data += line[6:]
		}
	}
}

// nextEvent skips comment-only frames.
func nextEvent(t *testing.T, br *bufio.Reader) sseFrame {
	t.Helper()
	for {
		f, err := readFrame(br)
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if f.id != "" || f.data != "" {
			return f
		}
	}
}

// sseServer serves the API with a short write timeout, which the stream must be exempt from.
func sseServer(t *testing.T) (*testEnv, *Client) {
	coord := newCoordinator(t, coordinator.Config{})
	h := NewHandler(coord, Config{Tokens: testTokens, Heartbeat: 30 * time.Millisecond})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = 150 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	env := &testEnv{coord: coord, handler: h, srv: srv}
	return env, env.client(t, clientTok)
}

func openStream(t *testing.T, ctx context.Context, url string, header ...string) *bufio.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	check(t, "request", err)
	req.Header.Set("Authorization", "Bearer "+clientTok)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	check(t, "GET stream", err)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return bufio.NewReader(resp.Body)
}

// TestSSEReplayThenFollow: the stream replays from Last-Event-ID, then follows new events as they are
// appended, with heartbeats in between, past the server's write timeout.
func TestSSEReplayThenFollow(t *testing.T) {
	t.Parallel()
	env, client := sseServer(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	for i := 1; i <= 3; i++ {
		must[[]*orchestrator.Event](t, "AppendEvents")(client.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
			orchestrator.NewEvent(orchestrator.EventProgress, map[string]any{"message": "step " + strconv.Itoa(i)}),
		}))
	}

	for _, tc := range []struct {
		name   string
		path   string
		header []string
		first  int64
	}{
		{"Last-Event-ID", "/sessions/" + res.SessionID + "/events", []string{"Accept", "text/event-stream", "Last-Event-ID", "1"}, 2},
		{"stream route with after", "/sessions/" + res.SessionID + "/events/stream?after=2", nil, 3},
		{"from the start", "/sessions/" + res.SessionID + "/events/stream", []string{"Accept", "text/event-stream"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			br := openStream(t, sctx, env.srv.URL+tc.path, tc.header...)
			for seq := tc.first; seq <= 3; seq++ {
				f := nextEvent(t, br)
				var ev map[string]any
				check(t, "event data", json.Unmarshal([]byte(f.data), &ev))
				if f.id != strconv.FormatInt(seq, 10) || f.event != "progress" || ev["seq"] != float64(seq) ||
					ev["session_id"] != res.SessionID || ev["message"] != "step "+strconv.FormatInt(seq, 10) {
					t.Fatalf("frame %+v, want seq %d", f, seq)
				}
			}
		})
	}

	// Follow: an event appended while the stream is open arrives; heartbeats keep an idle stream alive
	// beyond the write timeout.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	br := openStream(t, sctx, env.srv.URL+"/sessions/"+res.SessionID+"/events/stream", "Last-Event-ID", "3")
	heartbeats := 0
	deadline := time.Now().Add(400 * time.Millisecond) // > the server's 150ms write timeout
	for time.Now().Before(deadline) || heartbeats < 2 {
		f, err := readFrame(br)
		check(t, "reading heartbeats", err)
		for _, c := range f.comments {
			if c == "heartbeat" {
				heartbeats++
			}
		}
		if f.id != "" {
			t.Fatalf("unexpected event %+v", f)
		}
	}
	must[[]*orchestrator.Event](t, "AppendEvents")(client.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]any{"line": "late"}),
	}))
	f := nextEvent(t, br)
	if f.id != "4" || f.event != "stderr" || !strings.Contains(f.data, `"line":"late"`) {
		t.Fatalf("followed frame = %+v, want event 4", f)
	}
}

// TestSSEErrorsBeforeStream: a missing session is a JSON 404, not an empty stream.
func TestSSEErrorsBeforeStream(t *testing.T) {
	t.Parallel()
	env, _ := sseServer(t)
	rec := serve(env.handler, "GET", "/sessions/ses_missing/events/stream", clientTok, nil)
	errorBody(t, rec, http.StatusNotFound)
	rec = serve(env.handler, "GET", "/sessions/ses_missing/events", clientTok, nil, "Accept", "text/html, text/event-stream;q=0.9")
	errorBody(t, rec, http.StatusNotFound)
	// HEAD answers the headers and does not hold the request.
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	rec = serve(env.handler, "HEAD", "/sessions/"+res.SessionID+"/events/stream", clientTok, nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD stream: %d %v", rec.Code, rec.Header())
	}
}

// TestLongPollPastWriteTimeout: a long poll longer than the server's write timeout still gets its answer.
func TestLongPollPastWriteTimeout(t *testing.T) {
	t.Parallel()
	env, client := sseServer(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	s, err := client.WaitSession(ctx, res.SessionID, 300*time.Millisecond)
	if err != nil || s.Status != orchestrator.SessionPending {
		t.Fatalf("WaitSession past the write timeout = %+v, %v", s, err)
	}
	evs, err := client.ListEvents(ctx, res.SessionID, 0, 10, 300*time.Millisecond)
	if err != nil || len(evs) != 0 {
		t.Fatalf("ListEvents past the write timeout = %v, %v", evs, err)
	}
}
