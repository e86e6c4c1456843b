package orchestratortest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/orchestratortest"
)

// fakeTB records what the helpers report. Fatalf ends the calling goroutine as testing.T's does, so the
// helpers are called through run.
type fakeTB struct {
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn on a goroutine of its own and returns the failure it reported ("" for none).
func run(fn func(tb orchestratortest.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for _, fn := range slices.Backward(f.cleanups) {
		fn()
	}
	return strings.Join(f.failures, "\n")
}

var _ orchestratortest.TB = (*testing.T)(nil)
var _ orchestratortest.TB = (*testing.B)(nil)

var schema = json.RawMessage(`{"type": "object", "properties": {
	"to": {"type": "string"}, "lang": {"type": "string", "default": "en"}, "opts": {"type": "object"}}}`)

func newCoordinator(t *testing.T, exec orchestrator.Executor) *orchestratortest.Coordinator {
	return orchestratortest.New(t, orchestratortest.Config{
		Agents: []*orchestrator.Blueprint{
			{Name: "email", Type: orchestrator.AgentTypeDeterministic, Command: "send-email", ParametersSchema: schema},
			{Name: "gpu-job", Type: orchestrator.AgentTypeDeterministic, Demands: &orchestrator.Demands{Tags: []string{"gpu"}}},
			{Name: "writer", Description: "Writes things"},
		},
		Executor: exec,
	})
}

func start(t *testing.T, c orchestrator.Coordinator, p orchestrator.StartRunParams) *orchestrator.StartRunResult {
	t.Helper()
	res, err := c.StartRun(t.Context(), p)
	if err != nil {
		t.Fatalf("StartRun(%+v): %v", p, err)
	}
	return res
}

func TestNewRunsAndRecords(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, nil)

	res := start(t, c, orchestrator.StartRunParams{AgentName: "email", Parameters: json.RawMessage(`{"to": "ann"}`), Mode: orchestrator.ModeSync})
	if res.Status != orchestrator.SessionCompleted || res.Result.ResultType != "deterministic" || *res.Result.ExitCode != 0 {
		t.Fatalf("sync run of a deterministic agent = %+v, want completed with exit code 0", res)
	}
	res = start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "a poem", Mode: orchestrator.ModeSync})
	if res.Status != orchestrator.SessionCompleted || res.Result.ResultType != "agent" {
		t.Fatalf("sync run of an AI agent = %+v, want completed", res)
	}
	res = start(t, c, orchestrator.StartRunParams{AgentName: "gpu-job", Mode: orchestrator.ModeSync})
	if res.Status != orchestrator.SessionCompleted {
		t.Fatalf("sync run of an agent demanding a tag = %+v, want completed", res)
	}

	invs := c.Invocations()
	if len(invs) != 3 {
		t.Fatalf("Invocations() = %d, want 3", len(invs))
	}
	if invs[0].AgentName != "email" || string(invs[0].Parameters) != `{"lang":"en","to":"ann"}` {
		t.Errorf("first invocation = %s %s, want email with the schema's default applied", invs[0].AgentName, invs[0].Parameters)
	}
	if invs[1].Blueprint.Name != "writer" || string(invs[1].Parameters) != `{"prompt":"a poem"}` {
		t.Errorf("second invocation = %s %s, want writer's prompt", invs[1].Blueprint.Name, invs[1].Parameters)
	}
}

func TestExecutor(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, orchestratortest.ExecutorFunc(func(_ context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
		return &orchestrator.Result{ResultType: "agent", ResultText: "answer to " + inv.AgentName}, nil
	}))
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "x", Mode: orchestrator.ModeSync})
	if res.Result.ResultText != "answer to writer" {
		t.Fatalf("result = %+v, want the executor's", res.Result)
	}
}

func TestRequireStarted(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, nil)
	ctx := t.Context()
	parent := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "plan", Mode: orchestrator.ModeSync})
	email := start(t, c, orchestrator.StartRunParams{
		AgentName: "email", Parameters: json.RawMessage(`{"to": "ann", "opts": {"cc": "bob", "bcc": "eve"}}`),
		Metadata: json.RawMessage(`{"order": 42}`), ParentSessionID: parent.SessionID,
		Demands: &orchestrator.Demands{Tags: []string{"mail"}},
	})
	start(t, c, orchestrator.StartRunParams{AgentName: "email", Parameters: json.RawMessage(`{"to": "bob"}`)})

	var got *orchestrator.Run
	if f := run(func(tb orchestratortest.TB) {
		got = orchestratortest.RequireStarted(ctx, tb, c, "email", &orchestratortest.RequireStartedOpts{
			Parameters:      map[string]any{"to": "ann", "lang": "en", "opts": map[string]string{"cc": "bob"}},
			Metadata:        json.RawMessage(`{"order": 42}`),
			Mode:            orchestrator.ModeAsyncPoll,
			ParentSessionID: parent.SessionID,
			Demands:         &orchestrator.Demands{Tags: []string{"mail"}},
		})
	}); f != "" {
		t.Fatalf("RequireStarted of a run that was started failed: %s", f)
	}
	if got == nil || got.ID != email.RunID {
		t.Fatalf("RequireStarted returned %v, want run %s", got, email.RunID)
	}
	if f := run(func(tb orchestratortest.TB) {
		orchestratortest.RequireStarted(ctx, tb, c, "writer", &orchestratortest.RequireStartedOpts{Prompt: "plan", Status: orchestrator.RunCompleted})
	}); f != "" {
		t.Errorf("RequireStarted by prompt and status failed: %s", f)
	}

	fails := []struct {
		name  string
		agent string
		opts  *orchestratortest.RequireStartedOpts
		want  []string // in the failure message
	}{
		{"no run", "gpu-job", nil, []string{`no run of agent "gpu-job" was started`}},
		{"two match", "email", nil, []string{`2 runs of agent "email" match, want 1`, email.RunID}},
		{"parameter differs", "email", &orchestratortest.RequireStartedOpts{Parameters: map[string]string{"to": "carl"}},
			[]string{"none of the 2 runs", `"to":"ann"`, `{"to":"carl"} contained`}},
		{"nested parameter differs", "email", &orchestratortest.RequireStartedOpts{Parameters: json.RawMessage(`{"opts": {"cc": "eve"}}`)},
			[]string{`{"opts":{"cc":"eve"}} contained`}},
		{"parameter missing", "email", &orchestratortest.RequireStartedOpts{Parameters: map[string]any{"to": "ann", "urgent": true}},
			[]string{`"urgent":true`}},
		{"metadata", "email", &orchestratortest.RequireStartedOpts{Metadata: map[string]int{"order": 43}}, []string{"metadata"}},
		{"mode", "email", &orchestratortest.RequireStartedOpts{Mode: orchestrator.ModeSync}, []string{`mode "async_poll", want "sync"`}},
		{"parent", "email", &orchestratortest.RequireStartedOpts{ParentSessionID: "ses_other"}, []string{`want "ses_other"`}},
		{"tag", "email", &orchestratortest.RequireStartedOpts{Demands: &orchestrator.Demands{Tags: []string{"fax"}}}, []string{`want "fax" among them`}},
		{"type", "writer", &orchestratortest.RequireStartedOpts{Type: orchestrator.RunTypeResume}, []string{"type start, want resume"}},
		{"prompt", "writer", &orchestratortest.RequireStartedOpts{Prompt: "other"}, []string{`{"prompt":"other"} contained`}},
		{"unmarshallable", "writer", &orchestratortest.RequireStartedOpts{Parameters: func() {}}, []string{"cannot be marshalled"}},
	}
	for _, tc := range fails {
		f := run(func(tb orchestratortest.TB) { orchestratortest.RequireStarted(ctx, tb, c, tc.agent, tc.opts) })
		if f == "" {
			t.Errorf("%s: RequireStarted(%q, %+v) passed, want a failure", tc.name, tc.agent, tc.opts)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(f, w) {
				t.Errorf("%s: failure %q does not say %q", tc.name, f, w)
			}
		}
	}
}

func TestRequireNotStarted(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, nil)
	ctx := t.Context()
	res := start(t, c, orchestrator.StartRunParams{AgentName: "email", Parameters: json.RawMessage(`{"to": "ann"}`)})

	for _, tc := range []struct {
		agent string
		opts  *orchestratortest.RequireStartedOpts
	}{
		{"writer", nil},
		{"email", &orchestratortest.RequireStartedOpts{Parameters: map[string]string{"to": "bob"}}},
	} {
		if f := run(func(tb orchestratortest.TB) { orchestratortest.RequireNotStarted(ctx, tb, c, tc.agent, tc.opts) }); f != "" {
			t.Errorf("RequireNotStarted(%q, %+v) failed: %s", tc.agent, tc.opts, f)
		}
	}
	f := run(func(tb orchestratortest.TB) {
		orchestratortest.RequireNotStarted(ctx, tb, c, "email", &orchestratortest.RequireStartedOpts{Parameters: map[string]string{"to": "ann"}})
	})
	if !strings.Contains(f, `1 runs of agent "email" match, want none`) || !strings.Contains(f, res.RunID) {
		t.Errorf("RequireNotStarted of a started run: failure %q, want one naming %s", f, res.RunID)
	}
}

func TestRequireManyStarted(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, nil)
	ctx := t.Context()
	a := start(t, c, orchestrator.StartRunParams{AgentName: "email", Parameters: json.RawMessage(`{"to": "ann"}`), Mode: orchestrator.ModeSync})
	b := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "thanks"})

	var got []*orchestrator.Run
	if f := run(func(tb orchestratortest.TB) {
		got = orchestratortest.RequireManyStarted(ctx, tb, c, []orchestratortest.ExpectedStart{
			{AgentName: "email", Opts: &orchestratortest.RequireStartedOpts{Parameters: map[string]string{"to": "ann"}}},
			{AgentName: "writer", Opts: &orchestratortest.RequireStartedOpts{Prompt: "thanks"}},
		})
	}); f != "" {
		t.Fatalf("RequireManyStarted of the runs started failed: %s", f)
	}
	if len(got) != 2 || got[0].ID != a.RunID || got[1].ID != b.RunID {
		t.Fatalf("RequireManyStarted returned %v, want runs %s, %s", got, a.RunID, b.RunID)
	}

	for _, tc := range []struct {
		name     string
		expected []orchestratortest.ExpectedStart
		want     string
	}{
		{"order", []orchestratortest.ExpectedStart{{AgentName: "writer"}, {AgentName: "email"}}, `run 1 (` + a.RunID + `): agent "email", want "writer"`},
		{"missing", []orchestratortest.ExpectedStart{{AgentName: "email"}, {AgentName: "writer"}, {AgentName: "email"}}, `run 3: want agent "email", but only 2 runs were started`},
		{"extra", []orchestratortest.ExpectedStart{{AgentName: "email"}}, `run 2 (` + b.RunID + `) of agent "writer" was not expected`},
		{"none expected", nil, "2 runs started, 0 expected"},
		{"opts", []orchestratortest.ExpectedStart{{AgentName: "email", Opts: &orchestratortest.RequireStartedOpts{Mode: orchestrator.ModeAsyncPoll}}, {AgentName: "writer"}},
			`run 1 (` + a.RunID + `) of agent "email": mode "sync", want "async_poll"`},
	} {
		f := run(func(tb orchestratortest.TB) { orchestratortest.RequireManyStarted(ctx, tb, c, tc.expected) })
		if !strings.Contains(f, tc.want) {
			t.Errorf("%s: failure %q, want it to say %q", tc.name, f, tc.want)
		}
	}
}

// The assertions read any Coordinator, here one with no runs at all and a failing one.
func TestRequireListError(t *testing.T) {
	t.Parallel()
	f := run(func(tb orchestratortest.TB) {
		orchestratortest.RequireStarted(t.Context(), tb, failingCoordinator{}, "x", nil)
	})
	if !strings.Contains(f, "list the runs: boom") {
		t.Errorf("failure %q, want the list error", f)
	}
}

type failingCoordinator struct{ orchestrator.Coordinator }

func (failingCoordinator) ListRuns(context.Context, orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	return nil, fmt.Errorf("boom")
}

func TestNewFails(t *testing.T) {
	t.Parallel()
	f := run(func(tb orchestratortest.TB) {
		orchestratortest.New(tb, orchestratortest.Config{Agents: []*orchestrator.Blueprint{{Name: "no spaces allowed"}}})
	})
	if !strings.Contains(f, "orchestratortest: create the agents") {
		t.Errorf("New with an invalid agent: failure %q, want one saying the agents could not be created", f)
	}
}
