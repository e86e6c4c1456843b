// Package executortest is the conformance suite every [orchestrator.Executor] runs, in the manner of nomad's
// shared task-driver cases: one table of behaviours, unchanged for every implementation; each
// implementation's test only says how to build an executor and how to make it perform a few canonical
// behaviours ([Behavior]).
//
//	func TestConformance(t *testing.T) {
//		executortest.Run(t, executortest.Harness{
//			NewExecutor: func(t *testing.T) orchestrator.Executor { return myexec.New(...) },
//			Invocation:  func(t *testing.T, b executortest.Behavior, params json.RawMessage) *orchestrator.Invocation { ... },
//		})
//	}
//
// The cases: the shape of a successful result (result_type, result_data when the output is JSON), a
// failure (Error set, a non-zero exit code when there is one), events delivered while the run is still
// going and never after Execute returned, a cancel that returns promptly with a failed result and leaves
// nothing running, a cancel before the start, an output_schema that is violated (fail fast, every
// validation error reported) and one that is met, and concurrent runs that do not see each other's
// parameters, results or events.
//
// A change to the executor contract ([orchestrator.Executor]) changes this suite.
package executortest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// Behavior names a canonical behaviour the suite asks the executor under test to perform.
type Behavior string

const (
	// Echo completes successfully with output that is the invocation's parameters, as JSON: result_data
	// must equal the parameters (a JSON object), as the example echo-json agent does.
	Echo Behavior = "echo"
	// Fail fails, with an error message that contains [FailMessage].
	Fail Behavior = "fail"
	// Stream emits at least [StreamEvents] events, then completes like Echo.
	Stream Behavior = "stream"
	// Block emits at least one event, then keeps running until its context is cancelled (or it is
	// otherwise stopped by the executor). It must not end by itself for the duration of the test.
	Block Behavior = "block"
)

// FailMessage is what a [Fail] run must report in its error.
const FailMessage = "conformance: something broke"

// StreamEvents is how many events a [Stream] run emits at least.
const StreamEvents = 3

// Harness tells the suite how to drive one executor implementation.
type Harness struct {
	// NewExecutor returns the executor under test. It is called once per case, and cases run in parallel.
	NewExecutor func(t *testing.T) orchestrator.Executor
	// Invocation returns an invocation that makes the executor perform b with params (a JSON object). The
	// suite fills SessionID and RunID when they are empty, and sets OutputSchema itself for the schema cases.
	Invocation func(t *testing.T, b Behavior, params json.RawMessage) *orchestrator.Invocation
	// ResultType is the result_type every result must carry. Empty means "deterministic".
	ResultType string
	// Stopped, when set, is called after Execute returned for a cancelled [Block] run, with the events the
	// run emitted. It fails t if anything the run started is still running (a process, a goroutine).
	Stopped func(t *testing.T, inv *orchestrator.Invocation, events []orchestrator.Event)
	// CancelWithin bounds how long Execute may take to return once its context is cancelled. Zero means 3s.
	// Configure the executor's own grace periods below it.
	CancelWithin time.Duration
	// Timeout bounds every other wait of the suite (a run to finish, a first event to arrive). Zero means 30s.
	Timeout time.Duration
}

// Run runs the conformance cases against h as parallel subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.NewExecutor == nil || h.Invocation == nil {
		t.Fatal("executortest: Harness.NewExecutor and Harness.Invocation are required")
	}
	if h.ResultType == "" {
		h.ResultType = "deterministic"
	}
	if h.CancelWithin <= 0 {
		h.CancelWithin = 3 * time.Second
	}
	if h.Timeout <= 0 {
		h.Timeout = 30 * time.Second
	}
	s := &suite{h: h}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"SuccessResultShape", s.successResultShape},
		{"FailureSetsError", s.failureSetsError},
		{"EventsStreamBeforeReturn", s.eventsStreamBeforeReturn},
		{"CancelStopsPromptly", s.cancelStopsPromptly},
		{"CancelledBeforeStart", s.cancelledBeforeStart},
		{"OutputSchemaViolationFails", s.outputSchemaViolationFails},
		{"OutputSchemaSatisfied", s.outputSchemaSatisfied},
		{"ConcurrentRunsAreIsolated", s.concurrentRunsAreIsolated},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t)
		})
	}
}

type suite struct{ h Harness }

// outputSchema is what the schema cases give: result_data must be an object with a string "answer".
var outputSchema = json.RawMessage(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`)

func (s *suite) invocation(t *testing.T, b Behavior, params string) *orchestrator.Invocation {
	t.Helper()
	inv := s.h.Invocation(t, b, json.RawMessage(params))
	if inv == nil {
		t.Fatalf("Harness.Invocation(%q) returned nil", b)
	}
	if inv.SessionID == "" {
		inv.SessionID = ids.New(ids.Session)
	}
	if inv.RunID == "" {
		inv.RunID = ids.New(ids.Run)
	}
	if inv.Mode == "" {
		inv.Mode = orchestrator.RunTypeStart
	}
	return inv
}

// execution is one Execute call in flight.
type execution struct {
	inv  *orchestrator.Invocation
	sink *recorder
	done chan struct{}
	res  *orchestrator.Result
	err  error
}

func (s *suite) start(ctx context.Context, t *testing.T, ex orchestrator.Executor, inv *orchestrator.Invocation) *execution {
	t.Helper()
	e := &execution{inv: inv, sink: newRecorder(), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.res, e.err = ex.Execute(ctx, inv, e.sink)
		e.sink.markReturned()
	}()
	t.Cleanup(func() {
		// Never leave an Execute running past its test, even when the test failed early.
		select {
		case <-e.done:
		case <-time.After(s.h.Timeout):
			t.Errorf("Execute(%s) still running when the test ended", inv.SessionID)
		}
		if n := e.sink.lateEmits(); n > 0 {
			t.Errorf("executor emitted %d event(s) after Execute returned; events must all be emitted before it returns", n)
		}
	})
	return e
}

// wait waits for e to return within d and checks the contract every call must keep.
func (s *suite) wait(t *testing.T, e *execution, d time.Duration) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(d):
		t.Fatalf("Execute did not return within %v", d)
	}
	if e.err == nil && e.res == nil {
		t.Fatal("Execute returned a nil Result and a nil error")
	}
}

// run executes inv to its end.
func (s *suite) run(t *testing.T, inv *orchestrator.Invocation) *execution {
	t.Helper()
	e := s.start(t.Context(), t, s.h.NewExecutor(t), inv)
	s.wait(t, e, s.h.Timeout)
	return e
}

func (s *suite) successResultShape(t *testing.T) {
	params := `{"count":3,"message":"hello","nested":{"list":[1,"two",null]},"ratio":0.5}`
	e := s.run(t, s.invocation(t, Echo, params))
	if e.err != nil {
		t.Fatalf("Execute(echo %s) error = %v, want nil", params, e.err)
	}
	res := e.res
	if res.Failed() {
		t.Fatalf("Execute(echo) failed: error %q, exit code %v", res.Error, fmtExit(res.ExitCode))
	}
	if res.ResultType != s.h.ResultType {
		t.Errorf("ResultType = %q, want %q", res.ResultType, s.h.ResultType)
	}
	if res.ExitCode != nil && *res.ExitCode != 0 {
		t.Errorf("ExitCode = %d, want 0 (or unset)", *res.ExitCode)
	}
	if !jsonEqual(res.ResultData, json.RawMessage(params)) {
		t.Errorf("ResultData = %s, want %s", res.ResultData, params)
	}
	if strings.TrimSpace(res.ResultText) == "" {
		t.Errorf("ResultText is empty, want the raw output")
	} else if !jsonEqual(json.RawMessage(res.ResultText), json.RawMessage(params)) {
		t.Errorf("ResultText = %q, want the output %s", res.ResultText, params)
	}
	if res.Error != "" || len(res.ValidationErrors) > 0 || res.Truncated {
		t.Errorf("Error = %q, ValidationErrors = %v, Truncated = %v; want none", res.Error, res.ValidationErrors, res.Truncated)
	}
	// The wire form is the API's result shape.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("json.Marshal(Result) = %v", err)
	}
	var wire map[string]json.RawMessage
	_ = json.Unmarshal(b, &wire)
	for _, k := range []string{"result_type", "result_text", "result_data"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("result JSON %s lacks %q", b, k)
		}
	}
}

func (s *suite) failureSetsError(t *testing.T) {
	e := s.run(t, s.invocation(t, Fail, `{"message":"x"}`))
	if e.err != nil {
		t.Fatalf("Execute(fail) error = %v, want nil and a failed Result", e.err)
	}
	res := e.res
	if !res.Failed() || res.Error == "" {
		t.Fatalf("Execute(fail) = error %q, exit code %v; want a failed result with an error", res.Error, fmtExit(res.ExitCode))
	}
	if !strings.Contains(res.Error, FailMessage) {
		t.Errorf("Error = %q, want it to contain %q", res.Error, FailMessage)
	}
	if res.ExitCode != nil && *res.ExitCode == 0 {
		t.Errorf("ExitCode = 0 for a failed run, want non-zero (or unset)")
	}
	if res.ResultType != s.h.ResultType {
		t.Errorf("ResultType = %q, want %q", res.ResultType, s.h.ResultType)
	}
}

func (s *suite) eventsStreamBeforeReturn(t *testing.T) {
	params := `{"message":"streaming"}`
	inv := s.invocation(t, Stream, params)
	e := s.run(t, inv)
	if e.err != nil || e.res.Failed() {
		t.Fatalf("Execute(stream) = %+v, %v; want success", e.res, e.err)
	}
	if !jsonEqual(e.res.ResultData, json.RawMessage(params)) {
		t.Errorf("ResultData = %s, want %s", e.res.ResultData, params)
	}
	evs := e.sink.all()
	if len(evs) < StreamEvents {
		t.Fatalf("got %d events, want at least %d", len(evs), StreamEvents)
	}
	checkEvents(t, inv, evs)
}

func checkEvents(t *testing.T, inv *orchestrator.Invocation, evs []orchestrator.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Type == "" {
			t.Errorf("event %d has no type", i)
		}
		if ev.Type == orchestrator.EventResult {
			t.Errorf("event %d is a %q event; executors return the result, the runner records it", i, ev.Type)
		}
		if ev.SessionID != "" && ev.SessionID != inv.SessionID {
			t.Errorf("event %d has session %q, want %q (or empty)", i, ev.SessionID, inv.SessionID)
		}
		var obj map[string]any
		if err := json.Unmarshal(ev.Data, &obj); err != nil || obj == nil {
			t.Errorf("event %d data %s is not a JSON object", i, ev.Data)
		}
	}
}

func (s *suite) cancelStopsPromptly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inv := s.invocation(t, Block, `{"message":"block"}`)
	e := s.start(ctx, t, s.h.NewExecutor(t), inv)
	// The first event proves the work has started and that events are delivered while it runs: a Block
	// run cannot have returned yet.
	select {
	case <-e.sink.first:
	case <-e.done:
		t.Fatalf("Execute(block) returned before it was cancelled: %+v, %v", e.res, e.err)
	case <-time.After(s.h.Timeout):
		t.Fatalf("no event within %v from a block run", s.h.Timeout)
	}
	cancel()
	cancelled := time.Now()
	s.wait(t, e, s.h.CancelWithin+time.Second)
	if took := time.Since(cancelled); took > s.h.CancelWithin {
		t.Errorf("Execute returned %v after cancel, want within %v", took, s.h.CancelWithin)
	}
	if e.err == nil {
		if !e.res.Failed() || e.res.Error == "" {
			t.Errorf("cancelled Execute = error %q, exit code %v; want a failed result with an error", e.res.Error, fmtExit(e.res.ExitCode))
		}
	}
	if s.h.Stopped != nil {
		s.h.Stopped(t, inv, e.sink.all())
	}
}

func (s *suite) cancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	inv := s.invocation(t, Block, `{"message":"never"}`)
	e := s.start(ctx, t, s.h.NewExecutor(t), inv)
	s.wait(t, e, s.h.CancelWithin)
	if e.err == nil && !e.res.Failed() {
		t.Errorf("Execute with a cancelled context = %+v, want a failed result or an error", e.res)
	}
	if e.err == nil && s.h.Stopped != nil {
		s.h.Stopped(t, inv, e.sink.all())
	}
}

func (s *suite) outputSchemaViolationFails(t *testing.T) {
	inv := s.invocation(t, Echo, `{"message":"no answer here"}`)
	inv.OutputSchema = outputSchema
	e := s.run(t, inv)
	if e.err != nil {
		t.Fatalf("Execute = %v, want nil and a failed Result", e.err)
	}
	res := e.res
	if !res.Failed() {
		t.Fatalf("output without the required \"answer\" passed output_schema %s", outputSchema)
	}
	if !strings.Contains(res.Error, "output_schema") {
		t.Errorf("Error = %q, want it to name output_schema", res.Error)
	}
	if len(res.ValidationErrors) == 0 {
		t.Errorf("ValidationErrors is empty, want the schema failures")
	}
}

func (s *suite) outputSchemaSatisfied(t *testing.T) {
	params := `{"answer":"42"}`
	inv := s.invocation(t, Echo, params)
	inv.OutputSchema = outputSchema
	e := s.run(t, inv)
	if e.err != nil || e.res.Failed() {
		t.Fatalf("Execute(echo %s) with a matching output_schema = %+v, %v; want success", params, e.res, e.err)
	}
	if !jsonEqual(e.res.ResultData, json.RawMessage(params)) {
		t.Errorf("ResultData = %s, want %s", e.res.ResultData, params)
	}
}

func (s *suite) concurrentRunsAreIsolated(t *testing.T) {
	const n = 8
	ex := s.h.NewExecutor(t) // one executor, many runs: what a runner with max_concurrent > 1 does
	execs := make([]*execution, n)
	params := make([]string, n)
	for i := range n {
		b := Echo
		if i%2 == 1 {
			b = Stream
		}
		params[i] = fmt.Sprintf(`{"message":"run %d","n":%d}`, i, i)
		execs[i] = s.start(t.Context(), t, ex, s.invocation(t, b, params[i]))
	}
	for i, e := range execs {
		s.wait(t, e, s.h.Timeout)
		if e.err != nil || e.res.Failed() {
			t.Errorf("run %d = %+v, %v; want success", i, e.res, e.err)
			continue
		}
		if !jsonEqual(e.res.ResultData, json.RawMessage(params[i])) {
			t.Errorf("run %d ResultData = %s, want %s", i, e.res.ResultData, params[i])
		}
		checkEvents(t, e.inv, e.sink.all())
		if i%2 == 1 && len(e.sink.all()) < StreamEvents {
			t.Errorf("run %d got %d events, want at least %d", i, len(e.sink.all()), StreamEvents)
		}
	}
}

// recorder is the suite's EventSink: it keeps every event and notes any that arrive after Execute
// returned.
type recorder struct {
	mu       sync.Mutex
	events   []orchestrator.Event
	returned bool
	late     int
	first    chan struct{}
	once     sync.Once
}

func newRecorder() *recorder { return &recorder{first: make(chan struct{})} }

func (r *recorder) Emit(_ context.Context, events ...orchestrator.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.returned {
		r.late += len(events)
		return fmt.Errorf("execution has returned")
	}
	r.events = append(r.events, events...)
	if len(r.events) > 0 {
		r.once.Do(func() { close(r.first) })
	}
	return nil
}

func (r *recorder) markReturned() {
	r.mu.Lock()
	r.returned = true
	r.mu.Unlock()
}

func (r *recorder) lateEmits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.late
}

func (r *recorder) all() []orchestrator.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]orchestrator.Event(nil), r.events...)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func fmtExit(code *int) string {
	if code == nil {
		return "unset"
	}
	return fmt.Sprint(*code)
}
