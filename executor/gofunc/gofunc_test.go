package gofunc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/executor/internal/eventtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	var running sync.Map // session id → *int, guarded by mu
	var mu sync.Mutex
	tasks := []gofunc.Task{
		gofunc.NewRawTask("echo", "returns its parameters", nil, nil,
			func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }),
		gofunc.NewRawTask("fail", "fails", nil, nil,
			func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New(executortest.FailMessage)
			}),
		gofunc.NewRawTask("stream", "emits events, then returns its parameters", nil, nil,
			func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
				for i := 1; i <= executortest.StreamEvents; i++ {
					if err := gofunc.Progress(ctx, "event %d", i); err != nil {
						return nil, err
					}
				}
				return p, nil
			}),
		gofunc.NewRawTask("block", "runs until stopped", nil, nil,
			func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				inv, _ := gofunc.InvocationFrom(ctx)
				n, _ := running.LoadOrStore(inv.SessionID, new(int))
				mu.Lock()
				*n.(*int)++
				mu.Unlock()
				defer func() {
					mu.Lock()
					*n.(*int)--
					mu.Unlock()
				}()
				_ = gofunc.Progress(ctx, "ready")
				<-ctx.Done()
				return nil, ctx.Err()
			}),
	}
	executortest.Run(t, executortest.Harness{
		NewExecutor: func(t *testing.T) orchestrator.Executor {
			return gofunc.NewWithConfig(gofunc.Config{StopGrace: time.Second}, tasks...)
		},
		Invocation: func(t *testing.T, b executortest.Behavior, params json.RawMessage) *orchestrator.Invocation {
			var task gofunc.Task
			for _, tk := range tasks {
				if tk.Name() == string(b) {
					task = tk
				}
			}
			return &orchestrator.Invocation{AgentName: task.Name(), Blueprint: task.Blueprint(), Parameters: params}
		},
		ResultType: gofunc.ResultType,
		Stopped: func(t *testing.T, inv *orchestrator.Invocation, _ []orchestrator.Event) {
			n, ok := running.Load(inv.SessionID)
			if !ok {
				return // never started
			}
			mu.Lock()
			defer mu.Unlock()
			if *n.(*int) != 0 {
				t.Errorf("the task's function is still running after Execute returned")
			}
		},
	})
}

type crawlParams struct {
	URL      string   `json:"url" jsonschema:"the page to start from"`
	Depth    int      `json:"depth,omitempty"`
	Patterns []string `json:"patterns,omitempty"`
}

type crawlResult struct {
	Pages int      `json:"pages"`
	URLs  []string `json:"urls"`
}

func crawl(ctx context.Context, p crawlParams) (crawlResult, error) {
	if err := gofunc.Progress(ctx, "crawling %s to depth %d", p.URL, p.Depth); err != nil {
		return crawlResult{}, err
	}
	return crawlResult{Pages: p.Depth + 1, URLs: []string{p.URL}}, nil
}

func TestNewTaskInfersSchemas(t *testing.T) {
	t.Parallel()
	bp := gofunc.NewTask("crawler", "Crawls", crawl).WithTags("web").Blueprint()
	if err := bp.Validate(); err != nil {
		t.Fatalf("Blueprint().Validate() = %v", err)
	}
	if bp.Type != orchestrator.AgentTypeDeterministic || bp.Command != "" || bp.Description != "Crawls" ||
		!reflect.DeepEqual(bp.Tags, []string{"web"}) {
		t.Errorf("blueprint = %+v", bp)
	}
	var ps struct {
		Schema               string                     `json:"$schema"`
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(bp.ParametersSchema, &ps); err != nil {
		t.Fatal(err)
	}
	if ps.Type != "object" || !reflect.DeepEqual(ps.Required, []string{"url"}) || ps.AdditionalProperties == nil ||
		*ps.AdditionalProperties || len(ps.Properties) != 3 || !strings.Contains(ps.Schema, "2020-12") {
		t.Errorf("parameters_schema = %s", bp.ParametersSchema)
	}
	if !strings.Contains(string(ps.Properties["url"]), "the page to start from") {
		t.Errorf("url property %s lacks the jsonschema tag's description", ps.Properties["url"])
	}
	if len(bp.OutputSchema) == 0 {
		t.Errorf("no output_schema derived from a struct result")
	}
	// The inferred schemas are usable: the real validator accepts a good result and rejects a bad one.
	s, err := orchestrator.CompileSchema(bp.OutputSchema)
	if err != nil {
		t.Fatalf("CompileSchema(output) = %v", err)
	}
	if errs := s.Validate(map[string]any{"pages": 1.0, "urls": []any{"x"}}); len(errs) > 0 {
		t.Errorf("valid result rejected: %v", errs)
	}
	if errs := s.Validate(map[string]any{"pages": "one"}); len(errs) == 0 {
		t.Errorf("invalid result accepted")
	}

	pointer := gofunc.NewTask("ptr", "", func(context.Context, *crawlParams) (map[string]int, error) { return nil, nil }).Blueprint()
	if !strings.Contains(string(pointer.ParametersSchema), `"type":"object"`) || pointer.OutputSchema != nil {
		t.Errorf("pointer params / map result: parameters_schema %s, output_schema %s", pointer.ParametersSchema, pointer.OutputSchema)
	}
}

func TestNewTaskPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"bad name":          func() { gofunc.NewTask("bad name", "", crawl) },
		"scalar parameters": func() { gofunc.NewTask("n", "", func(context.Context, int) (int, error) { return 0, nil }) },
		"func in params": func() {
			gofunc.NewTask("f", "", func(context.Context, struct{ F func() }) (int, error) { return 0, nil })
		},
		"nil raw func":    func() { gofunc.NewRawTask("r", "", nil, nil, nil) },
		"duplicate names": func() { gofunc.New(gofunc.NewTask("a", "", crawl), gofunc.NewTask("a", "", crawl)) },
		"zero Task":       func() { gofunc.New(gofunc.Task{}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func invocation(task gofunc.Task, params string) *orchestrator.Invocation {
	return &orchestrator.Invocation{
		Mode: orchestrator.RunTypeStart, SessionID: "ses_t", RunID: "run_t",
		AgentName: task.Name(), Blueprint: task.Blueprint(), Parameters: json.RawMessage(params),
	}
}

func TestTypedTask(t *testing.T) {
	t.Parallel()
	task := gofunc.NewTask("crawler", "Crawls", crawl)
	ex := gofunc.New(task)
	rec := &eventtest.Recorder{}
	inv := invocation(task, `{"url":"https://x.com","depth":2}`)
	inv.OutputSchema = task.Blueprint().OutputSchema
	res, err := ex.Execute(t.Context(), inv, rec)
	if err != nil || res.Failed() {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	want := `{"pages":3,"urls":["https://x.com"]}`
	if string(res.ResultData) != want || res.ResultText != want || *res.ExitCode != gofunc.ExitOK || res.ResultType != "deterministic" {
		t.Errorf("result = %+v, want data and text %s, exit 0", res, want)
	}
	evs := rec.All()
	if len(evs) != 1 || evs[0].Type != orchestrator.EventProgress || evs[0].SessionID != "ses_t" || evs[0].Time.IsZero() ||
		string(evs[0].Data) != `{"message":"crawling https://x.com to depth 2"}` {
		t.Errorf("events = %+v", evs)
	}

	_, err = ex.Execute(t.Context(), invocation(task, `{"url":1}`), nil)
	if !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("Execute with undecodable parameters: error = %v, want ErrInvalid", err)
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fn        gofunc.Func
		wantCode  int
		wantError string
		wantData  string
	}{
		{"error", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("no luck") },
			gofunc.ExitError, "no luck", ""},
		{"panic", func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") },
			gofunc.ExitPanic, "panic: boom", ""},
		{"nil-map panic", func(context.Context, json.RawMessage) (json.RawMessage, error) {
			var m map[string]int
			//lint:ignore SA5000 the task panics with a runtime error on purpose
			m["x"] = 1
			return nil, nil
		}, gofunc.ExitPanic, "panic: assignment to entry in nil map", ""},
		{"invalid JSON", func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage("{nope"), nil },
			gofunc.ExitError, "the task returned invalid JSON", ""},
		{"no output", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil },
			gofunc.ExitOK, "", ""},
		{"scalar output", func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(" 42 "), nil },
			gofunc.ExitOK, "", "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := gofunc.NewRawTask("t", "", nil, nil, tt.fn)
			res, err := gofunc.New(task).Execute(t.Context(), invocation(task, `{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if *res.ExitCode != tt.wantCode || res.Error != tt.wantError || string(res.ResultData) != tt.wantData {
				t.Errorf("result = exit %d, error %q, data %s; want %d, %q, %s",
					*res.ExitCode, res.Error, res.ResultData, tt.wantCode, tt.wantError, tt.wantData)
			}
		})
	}
}

func TestOutputSchemaFailFast(t *testing.T) {
	t.Parallel()
	task := gofunc.NewRawTask("t", "", nil, json.RawMessage(`{"type":"object","required":["n"]}`),
		func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"m":1}`), nil
		})
	inv := invocation(task, `{}`)
	inv.OutputSchema = task.Blueprint().OutputSchema
	res, err := gofunc.New(task).Execute(t.Context(), inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed() || !strings.Contains(res.Error, "output_schema") || len(res.ValidationErrors) == 0 {
		t.Errorf("result = %+v, want an output_schema failure", res)
	}

	inv.OutputSchema = json.RawMessage(`{"type":"strang"}`)
	if _, err := gofunc.New(task).Execute(t.Context(), inv, nil); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("malformed output_schema: error = %v, want ErrInvalid", err)
	}
}

// A function that ignores its context is abandoned after the grace period; its late events are refused.
func TestStopAbandonsFunctionIgnoringContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	lateEmit := make(chan error, 1)
	task := gofunc.NewRawTask("stubborn", "", nil, nil, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		_ = gofunc.Progress(ctx, "started")
		<-release
		lateEmit <- gofunc.Progress(ctx, "too late")
		return nil, nil
	})
	ex := gofunc.NewWithConfig(gofunc.Config{StopGrace: 100 * time.Millisecond}, task)
	ctx, cancel := context.WithCancel(t.Context())
	rec := &eventtest.Recorder{}
	started := make(chan struct{})
	sink := orchestrator.EventSinkFunc(func(ctx context.Context, evs ...orchestrator.Event) error {
		close(started)
		return rec.Emit(ctx, evs...)
	})
	done := make(chan *orchestrator.Result, 1)
	go func() {
		res, _ := ex.Execute(ctx, invocation(task, `{}`), sink)
		done <- res
	}()
	<-started
	cancel()
	var res *orchestrator.Result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Execute did not return after the grace period")
	}
	if res.Error != "stopped" || *res.ExitCode != gofunc.ExitStopped {
		t.Errorf("result = %+v, want stopped, -1", res)
	}
	close(release)
	if err := <-lateEmit; !errors.Is(err, gofunc.ErrInvocationEnded) {
		t.Errorf("Emit after Execute returned = %v, want ErrInvocationEnded", err)
	}
	if n := len(rec.All()); n != 1 {
		t.Errorf("sink got %d events, want 1", n)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	task := gofunc.NewRawTask("slow", "", nil, nil, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}).WithTimeout(50 * time.Millisecond)
	res, err := gofunc.New(task).Execute(t.Context(), invocation(task, `{}`), nil)
	if err != nil || res.Error != "timed out after 50ms" || *res.ExitCode != gofunc.ExitStopped {
		t.Errorf("Execute = %+v, %v; want timed out after 50ms, exit -1", res, err)
	}
}

func TestLookupAndInvalidInvocations(t *testing.T) {
	t.Parallel()
	task := gofunc.NewRawTask("echo", "", nil, nil, func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil })
	ex := gofunc.New(task)

	inv := &orchestrator.Invocation{AgentName: "echo@lnch_abc", Parameters: json.RawMessage(`{"a":1}`)}
	if res, err := ex.Execute(t.Context(), inv, nil); err != nil || string(res.ResultData) != `{"a":1}` {
		t.Errorf("by suffixed agent name: %+v, %v", res, err)
	}
	if _, err := ex.Execute(t.Context(), &orchestrator.Invocation{AgentName: "nope"}, nil); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("unknown task: error = %v, want ErrNotFound", err)
	}
	resume := invocation(task, `{}`)
	resume.Mode = orchestrator.RunTypeResume
	if _, err := ex.Execute(t.Context(), resume, nil); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("resume: error = %v, want ErrInvalid", err)
	}
}

func TestEmitOutsideInvocation(t *testing.T) {
	t.Parallel()
	if err := gofunc.Progress(t.Context(), "x"); !errors.Is(err, gofunc.ErrNoInvocation) {
		t.Errorf("Progress outside a task = %v, want ErrNoInvocation", err)
	}
	if _, ok := gofunc.InvocationFrom(t.Context()); ok {
		t.Errorf("InvocationFrom outside a task reported an invocation")
	}
}

func TestBlueprints(t *testing.T) {
	t.Parallel()
	ex := gofunc.New(gofunc.NewTask("b", "", crawl), gofunc.NewTask("a", "", crawl))
	bps := ex.Blueprints()
	if len(bps) != 2 || bps[0].Name != "b" || bps[1].Name != "a" {
		t.Fatalf("Blueprints() = %v, want b, a", bps)
	}
	bps[0].Description = "changed"
	if ex.Blueprints()[0].Description != "" {
		t.Errorf("Blueprints() shares its blueprints with the caller")
	}
}

func ExampleNewTask() {
	type addParams struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sum struct {
		Sum int `json:"sum"`
	}
	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p addParams) (sum, error) {
		_ = gofunc.Progress(ctx, "adding %d and %d", p.A, p.B)
		return sum{p.A + p.B}, nil
	})
	ex := gofunc.New(add)

	events := orchestrator.EventSinkFunc(func(_ context.Context, evs ...orchestrator.Event) error {
		for _, ev := range evs {
			fmt.Printf("event %s %s\n", ev.Type, ev.Data)
		}
		return nil
	})
	res, err := ex.Execute(context.Background(), &orchestrator.Invocation{
		Blueprint:  ex.Blueprints()[0],
		Parameters: json.RawMessage(`{"a":2,"b":3}`),
	}, events)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(ex.Blueprints()[0].ParametersSchema))
	fmt.Println(res.ResultType, string(res.ResultData), *res.ExitCode)
	// Output:
	// event progress {"message":"adding 2 and 3"}
	// {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"$schema":"https://json-schema.org/draft/2020-12/schema","required":["a","b"],"additionalProperties":false}
	// deterministic {"sum":5} 0
}
