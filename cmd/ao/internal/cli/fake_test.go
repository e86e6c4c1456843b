package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// fakeCoord is an in-memory coordinator with just what ao calls. The embedded interface is nil: a call
// ao is not expected to make panics.
type fakeCoord struct {
	orchestrator.Coordinator

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	agents   []*orchestrator.AgentInfo
	sessions []*orchestrator.Session
	events   map[string][]*orchestrator.Event
	runners  []*orchestrator.RunnerInfo
	n        int
	// failReads makes the next n GetSession/ListEvents calls fail as an unreachable coordinator would.
	failReads int
	// onStart is called (without the lock) with each session StartRun creates.
	onStart func(s *orchestrator.Session)
	// startErr is what StartRun returns instead, when set.
	startErr error
	stops    []string
	started  []orchestrator.StartRunParams
	// batchErr is what StartRuns returns instead, when set; batches records the size of each call.
	batchErr error
	batches  []int
}

func newFake() *fakeCoord {
	return &fakeCoord{changed: make(chan struct{}), events: map[string][]*orchestrator.Event{}}
}

// app returns an App on f with buffers for its streams; stdin is given.
func (f *fakeCoord) app(stdin string) (*App, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &App{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv:   func(string) string { return "" },
		Connect:  func(string, string) (orchestrator.Coordinator, error) { return f, nil },
		Terminal: func(any) bool { return false },
	}, &out, &errb
}

func (f *fakeCoord) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

var errUnreachable = fmt.Errorf("dial tcp 127.0.0.1:1: connection refused: %w", httpapi.ErrServer)

func (f *fakeCoord) readFault() error {
	if f.failReads > 0 {
		f.failReads--
		return errUnreachable
	}
	return nil
}

// addSession adds a session (created now, one more second after the previous one).
func (f *fakeCoord) addSession(agent string, status orchestrator.SessionStatus) *orchestrator.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	s := &orchestrator.Session{ID: fmt.Sprintf("ses_%04d", f.n), AgentName: agent, AgentType: orchestrator.AgentTypeDeterministic,
		Status: status, CurrentRunID: fmt.Sprintf("run_%04d", f.n), CreatedAt: time.Now().Add(time.Duration(f.n) * time.Second)}
	f.sessions = append(f.sessions, s)
	f.notify()
	return s
}

// emit appends an event to a session.
func (f *fakeCoord) emit(id, typ string, data any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emitLocked(id, typ, data)
}

func (f *fakeCoord) emitLocked(id, typ string, data any) {
	s := f.find(id)
	s.LastEventSeq++
	ev := orchestrator.NewEvent(typ, data)
	ev.SessionID, ev.Seq, ev.Time = id, s.LastEventSeq, time.Now()
	f.events[id] = append(f.events[id], &ev)
	f.notify()
}

// end ends a session with its result and run_ended event, as the coordinator does: in one step.
func (f *fakeCoord) end(id string, status orchestrator.SessionStatus, res *orchestrator.Result, errMsg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.find(id)
	if s.Status.Ended() {
		return
	}
	f.emitLocked(id, orchestrator.EventResult, res)
	f.emitLocked(id, orchestrator.EventRunEnded, map[string]any{"run_id": s.CurrentRunID, "status": status, "error": errMsg})
	now := time.Now()
	s.Status, s.Result, s.Error, s.EndedAt = status, res, errMsg, &now
	f.notify()
}

func (f *fakeCoord) find(id string) *orchestrator.Session {
	for _, s := range f.sessions {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func notFound(id string) error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, "session_not_found", "session %q not found", id)
}

func (f *fakeCoord) ListAgents(_ context.Context, p orchestrator.ListAgentsParams) ([]*orchestrator.AgentInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*orchestrator.AgentInfo
	for _, a := range f.agents {
		if p.Type == "" || a.Type == p.Type {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeCoord) GetAgent(_ context.Context, name string) (*orchestrator.AgentInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.agents {
		if a.Name == name {
			return a, nil
		}
	}
	return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "agent_not_found", "agent %q not found", name)
}

func (f *fakeCoord) StartRun(_ context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	f.mu.Lock()
	f.started = append(f.started, p)
	if f.startErr != nil {
		f.mu.Unlock()
		return nil, f.startErr
	}
	f.mu.Unlock()
	s := f.addSession(p.AgentName, orchestrator.SessionPending)
	f.mu.Lock()
	s.Parameters = p.Parameters
	hook := f.onStart
	f.mu.Unlock()
	if hook != nil {
		go hook(s)
	}
	return &orchestrator.StartRunResult{RunID: s.CurrentRunID, SessionID: s.ID, Status: orchestrator.SessionPending}, nil
}

func (f *fakeCoord) GetSession(_ context.Context, id string) (*orchestrator.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readFault(); err != nil {
		return nil, err
	}
	s := f.find(id)
	if s == nil {
		return nil, notFound(id)
	}
	c := *s
	return &c, nil
}

func (f *fakeCoord) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	deadline := time.Now().Add(wait)
	for {
		f.mu.Lock()
		s, ch := f.find(id), f.changed
		f.mu.Unlock()
		if s == nil {
			return nil, notFound(id)
		}
		if s.Status.Ended() || time.Now().After(deadline) {
			return f.GetSession(ctx, id)
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *fakeCoord) ListSessions(_ context.Context, fl orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var match []*orchestrator.Session
	for _, s := range f.sessions {
		if (len(fl.Statuses) == 0 || slices.Contains(fl.Statuses, s.Status)) && (fl.AgentName == "" || s.AgentName == fl.AgentName) {
			match = append(match, s)
		}
	}
	if fl.NewestFirst {
		match = slices.Clone(match)
		slices.Reverse(match)
	}
	if fl.AfterID != "" {
		i := slices.IndexFunc(match, func(s *orchestrator.Session) bool { return s.ID == fl.AfterID })
		match = match[i+1:]
	}
	page := &orchestrator.SessionPage{Sessions: match}
	if fl.Limit > 0 && len(match) > fl.Limit {
		page.Sessions = match[:fl.Limit]
		page.NextCursor = match[fl.Limit-1].ID
	}
	return page, nil
}

func (f *fakeCoord) ListEvents(ctx context.Context, id string, after int64, limit int, wait time.Duration) ([]*orchestrator.Event, error) {
	deadline := time.Now().Add(wait)
	for {
		f.mu.Lock()
		if err := f.readFault(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		if f.find(id) == nil {
			f.mu.Unlock()
			return nil, notFound(id)
		}
		var out []*orchestrator.Event
		for _, ev := range f.events[id] {
			if ev.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, ev)
			}
		}
		ch := f.changed
		f.mu.Unlock()
		if len(out) > 0 || wait <= 0 || time.Now().After(deadline) {
			return out, nil
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *fakeCoord) StopSession(_ context.Context, id string, _ ...orchestrator.StopOpts) (*orchestrator.Session, error) {
	f.mu.Lock()
	f.stops = append(f.stops, id)
	f.mu.Unlock()
	f.end(id, orchestrator.SessionStopped, &orchestrator.Result{Error: "stopped"}, "stopped")
	return f.GetSession(context.Background(), id)
}

func (f *fakeCoord) ListRuns(_ context.Context, fl orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	return nil, nil
}

func (f *fakeCoord) ListRunners(context.Context) ([]*orchestrator.RunnerInfo, error) {
	return f.runners, nil
}

// stopCount is how many times StopSession was called.
func (f *fakeCoord) stopCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stops)
}

// decodeJSONDoc decodes stdout as exactly one JSON document.
func decodeJSONDoc(t *testing.T, out []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
}

// interrupts returns an Interrupts func and the channel to send Ctrl-C on.
func interrupts() (func() (<-chan os.Signal, func()), chan os.Signal) {
	ch := make(chan os.Signal, 2)
	return func() (<-chan os.Signal, func()) { return ch, func() {} }, ch
}

// StartRuns starts each run as StartRun does, or returns batchErr when it is set (nothing started).
func (f *fakeCoord) StartRuns(ctx context.Context, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	f.mu.Lock()
	err := f.batchErr
	f.batches = append(f.batches, len(ps))
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]*orchestrator.StartRunResult, len(ps))
	for i, p := range ps {
		res, err := f.StartRun(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}
