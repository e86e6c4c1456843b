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

// sseServer serves the API with a short write timeout, which streams and long polls must be exempt from
// (env.srv; env.client calls it), and returns a client for the test's other calls. That client calls the
// same handler through a server without the timeout: an ordinary request is not exempt, and on a loaded
// machine (under -race) it may take longer than 150ms.
func sseServer(t *testing.T) (*testEnv, *Client) {
	coord := newCoordinator(t, coordinator.Config{})
	h := NewHandler(coord, Config{Tokens: testTokens, Heartbeat: 30 * time.Millisecond})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = 150 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	untimed := httptest.NewServer(h)
	t.Cleanup(untimed.Close)
	setup := &testEnv{coord: coord, handler: h, srv: untimed}
	return &testEnv{coord: coord, handler: h, srv: srv}, setup.client(t, clientTok)
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
	env, setup := sseServer(t)
	client := env.client(t, clientTok) // through the server with the write timeout
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(setup.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	s, err := client.WaitSession(ctx, res.SessionID, 300*time.Millisecond)
	if err != nil || s.Status != orchestrator.SessionPending {
		t.Fatalf("WaitSession past the write timeout = %+v, %v", s, err)
	}
	evs, err := client.ListEvents(ctx, res.SessionID, 0, 10, 300*time.Millisecond)
	if err != nil || len(evs) != 0 {
		t.Fatalf("ListEvents past the write timeout = %v, %v", evs, err)
	}
}

// readToEnd reads the stream's frames until it closes and returns the event frames (comments skipped);
// it fails the test unless the stream closes cleanly right after an "end" frame.
func readToEnd(t *testing.T, br *bufio.Reader) []sseFrame {
	t.Helper()
	var frames []sseFrame
	for {
		f, err := readFrame(br)
		if err == io.EOF && f.id == "" && f.data == "" && f.event == "" {
			if n := len(frames); n == 0 || frames[n-1].event != "end" {
				t.Fatalf("the stream closed without an end frame after %+v", frames)
			}
			return frames
		}
		if err != nil {
			t.Fatalf("reading the stream after %+v: %v", frames, err)
		}
		if f.id == "" && f.data == "" {
			continue // a comment
		}
		if n := len(frames); n > 0 && frames[n-1].event == "end" {
			t.Fatalf("frame %+v after the end frame", f)
		}
		frames = append(frames, f)
	}
}

// checkEnd checks the stream's frames: events with ids first..last in order, then the end frame with the
// session's final status.
func checkEnd(t *testing.T, frames []sseFrame, sessionID string, first, last int64, status orchestrator.SessionStatus) {
	t.Helper()
	if int64(len(frames)) != last-first+2 {
		t.Fatalf("got %d frames %+v, want events %d..%d and the end frame", len(frames), frames, first, last)
	}
	for i, f := range frames[:len(frames)-1] {
		if f.id != strconv.FormatInt(first+int64(i), 10) {
			t.Fatalf("frame %d = %+v, want id %d", i, f, first+int64(i))
		}
	}
	end := frames[len(frames)-1]
	var data struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
		LastSeq   int64  `json:"last_seq"`
	}
	check(t, "end data", json.Unmarshal([]byte(end.data), &data))
	if end.id != "" || data.SessionID != sessionID || data.Status != string(status) || data.LastSeq != last {
		t.Fatalf("end frame = %+v, want no id, session %s, status %s, last_seq %d", end, sessionID, status, last)
	}
}

// TestSSEEndedSessionCloses: the stream of an ended session replays its events, sends the end frame and
// closes, for an AI session and for a deterministic one, from the start and from any Last-Event-ID.
func TestSSEEndedSessionCloses(t *testing.T) {
	t.Parallel()
	env, client := sseServer(t)
	ctx := ctxT(t)

	// An AI session with a few events, stopped before a runner took it.
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	ai := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	for i := 1; i <= 3; i++ {
		must[[]*orchestrator.Event](t, "AppendEvents")(client.AppendEvents(ctx, ai.SessionID, []orchestrator.Event{
			orchestrator.NewEvent(orchestrator.EventProgress, map[string]any{"message": "step " + strconv.Itoa(i)}),
		}))
	}
	must[*orchestrator.Session](t, "StopSession")(client.StopSession(ctx, ai.SessionID))

	// A deterministic session its runner completed.
	rid := must[*orchestrator.Registration](t, "RegisterRunner")(env.coord.RegisterRunner(ctx, registration("host", crawler()))).RunnerID
	det := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`),
	}))
	work := must[*orchestrator.Work](t, "PollWork")(env.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: rid, Max: 1, Wait: time.Second}))
	if len(work.Runs) != 1 {
		t.Fatalf("PollWork = %+v, want the run", work)
	}
	check(t, "started", env.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: det.RunID, Status: orchestrator.RunRunning}))
	must[[]*orchestrator.Event](t, "AppendEvents")(client.AppendEvents(ctx, det.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]any{"line": "fetching /"}),
	}))
	check(t, "completed", env.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: det.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultText: "{}", ExitCode: new(0)}}))

	for _, tc := range []struct {
		name      string
		sessionID string
		status    orchestrator.SessionStatus
	}{
		{"ai stopped", ai.SessionID, orchestrator.SessionStopped},
		{"deterministic completed", det.SessionID, orchestrator.SessionCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, tc.sessionID))
			last := s.LastEventSeq
			if last < 3 {
				t.Fatalf("session has %d events, want at least 3", last)
			}
			for _, from := range []int64{0, 2, last - 1, last, last + 5} {
				path := "/sessions/" + tc.sessionID + "/events"
				frames := readToEnd(t, openStream(t, ctx, env.srv.URL+path, "Accept", "text/event-stream", "Last-Event-ID", strconv.FormatInt(from, 10)))
				// From beyond the last event, the end frame reports the position the client is at.
				checkEnd(t, frames, tc.sessionID, from+1, max(from, last), tc.status)
				if from < last && frames[len(frames)-2].event != orchestrator.EventRunEnded {
					t.Fatalf("from %d: last event %+v, want run_ended", from, frames[len(frames)-2])
				}
			}
			// The /stream route, with ?after= and a small page limit: the replay still goes to the end.
			frames := readToEnd(t, openStream(t, ctx, env.srv.URL+"/sessions/"+tc.sessionID+"/events/stream?after=0&limit=1"))
			checkEnd(t, frames, tc.sessionID, 1, last, tc.status)
		})
	}
}

// TestSSEStreamClosesWhenSessionEnds: a stream open while the session runs stays open (with heartbeats)
// until the session ends, then sends the last events and the end frame, and closes.
func TestSSEStreamClosesWhenSessionEnds(t *testing.T) {
	t.Parallel()
	env, client := sseServer(t)
	ctx := ctxT(t)
	rid := must[*orchestrator.Registration](t, "RegisterRunner")(env.coord.RegisterRunner(ctx, registration("host", crawler()))).RunnerID
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`),
	}))
	work := must[*orchestrator.Work](t, "PollWork")(env.coord.PollWork(ctx, orchestrator.PollParams{RunnerID: rid, Max: 1, Wait: time.Second}))
	if len(work.Runs) != 1 {
		t.Fatalf("PollWork = %+v, want the run", work)
	}
	check(t, "started", env.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: res.RunID, Status: orchestrator.RunRunning}))

	br := openStream(t, ctx, env.srv.URL+"/sessions/"+res.SessionID+"/events/stream")
	first := nextEvent(t, br)
	if first.event != orchestrator.EventRunStarted {
		t.Fatalf("first frame = %+v, want run_started", first)
	}
	// Idle while the session runs: heartbeats, and the stream stays open.
	for heartbeats := 0; heartbeats < 2; {
		f, err := readFrame(br)
		check(t, "reading heartbeats", err)
		if f.id != "" || f.event != "" {
			t.Fatalf("unexpected frame %+v while the session runs", f)
		}
		if len(f.comments) > 0 && f.comments[0] == "heartbeat" {
			heartbeats++
		}
	}
	must[[]*orchestrator.Event](t, "AppendEvents")(client.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]any{"line": "fetching /"}),
	}))
	if f := nextEvent(t, br); f.event != orchestrator.EventStderr {
		t.Fatalf("frame = %+v, want the stderr line", f)
	}
	check(t, "failed", env.coord.ReportRun(ctx, orchestrator.RunReport{RunnerID: rid, RunID: res.RunID, Status: orchestrator.RunFailed,
		Result: &orchestrator.Result{ExitCode: new(3), Error: "exit status 3"}}))
	frames := readToEnd(t, br)
	s := must[*orchestrator.Session](t, "GetSession")(client.GetSession(ctx, res.SessionID))
	checkEnd(t, frames, res.SessionID, firstSeq(t, frames), s.LastEventSeq, orchestrator.SessionFailed)
	if frames[len(frames)-2].event != orchestrator.EventRunEnded {
		t.Fatalf("last event %+v, want run_ended", frames[len(frames)-2])
	}
}

// firstSeq is the sequence number of the first frame.
func firstSeq(t *testing.T, frames []sseFrame) int64 {
	t.Helper()
	n, err := strconv.ParseInt(frames[0].id, 10, 64)
	check(t, "frame id", err)
	return n
}
