// Package gofunc runs Go functions as deterministic agents, in-process: a Go service announces typed tasks
// on its runner, and callers invoke them like any other agent.
//
//	type AddParams struct {
//		A int `json:"a"`
//		B int `json:"b"`
//	}
//	type Sum struct {
//		Sum int `json:"sum"`
//	}
//
//	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
//		gofunc.Progress(ctx, "adding %d and %d", p.A, p.B)
//		return Sum{p.A + p.B}, nil
//	})
//	ex := gofunc.New(add)
//	// announce ex.Blueprints() when the runner registers; the runner calls ex.Execute for each run.
//
// # Schemas
//
// [NewTask] derives the parameters_schema from P with jsonschema.For (google/jsonschema-go): a struct gives an
// object whose fields without omitempty/omitzero are required and which allows no other properties; a
// `jsonschema:"…"` tag becomes the field's description. When R is a struct (or a pointer to one) its schema
// becomes the output_schema. Tags cannot say enum, default or minimum: replace the schema with
// [Task.WithParametersSchema] when you need them. [NewRawTask] takes both schemas explicitly and passes
// JSON through untouched.
//
// # Blueprints
//
// A task's blueprint is a deterministic agent without a command: the Go function is the implementation.
// [orchestrator.Blueprint.Validate] accepts that; only [orchestrator.LoadBlueprints], which reads blueprints
// for the command-running executor, requires a command.
//
// # Results
//
// The function's result, marshalled to JSON, is both ResultText and ResultData; result_type is
// "deterministic". ExitCode mirrors a Go program's: 0 when the function returned, 1 when it returned an
// error (Error is the error's text), 2 when it panicked (Error is "panic: …"; the panic is recovered, the
// stack logged, and the runner keeps running), -1 when the run was stopped or timed out. An output schema
// on the invocation is enforced like the deterministic executor's: an invalid result fails the run with the
// validation errors, without retries.
//
// # Context
//
// The function's ctx is cancelled when the run is stopped, or when the blueprint's timeout (see
// [Task.WithTimeout]) expires; it also carries the invocation: [Emit] and [Progress] add events to the
// session while the function runs, and [InvocationFrom] returns the invocation (session id, metadata, env).
// A function that ignores cancellation is given [Config].StopGrace to return; after that Execute returns a
// stopped result without it, the function's goroutine is abandoned (Go cannot kill it), a warning is
// logged, and its later events are refused.
package gofunc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/internal/schemacache"
)

// ResultType is the result_type of every result this executor returns: Go function agents are
// deterministic agents.
const ResultType = "deterministic"

// DefaultStopGrace is the default of [Config].StopGrace.
const DefaultStopGrace = 5 * time.Second

// Exit codes, mirroring a Go program's.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitPanic   = 2
	ExitStopped = -1
)

// schemaDraft is written into inferred schemas: jsonschema.For produces 2020-12 schemas, and the project
// reads a schema without "$schema" as draft-07.
const schemaDraft = "https://json-schema.org/draft/2020-12/schema"

// Func is the raw form of a task's function: parameters JSON in, result JSON out.
type Func func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Task is one Go function offered as an agent. Build it with [NewTask] or [NewRawTask]; the With methods
// return adjusted copies.
type Task struct {
	bp orchestrator.Blueprint
	fn Func
}

// NewTask makes fn an agent called name. Parameters (a JSON object, validated and with defaults applied by
// the coordinator) are decoded into P with encoding/json; the result R is marshalled with encoding/json.
// P must be a struct, a pointer to a struct, or a map with string keys, since parameters are a JSON object.
//
// NewTask panics when name is not a valid agent name or no schema can be derived from P or R: like
// registering an HTTP handler, a mistake in a program's task table shows at start-up.
func NewTask[P, R any](name, description string, fn func(ctx context.Context, params P) (R, error)) Task {
	paramsSchema, err := inferSchema[P](true)
	if err != nil {
		panic(fmt.Sprintf("gofunc.NewTask(%q): parameters: %v", name, err))
	}
	var outputSchema json.RawMessage
	if isStruct(reflect.TypeFor[R]()) {
		if outputSchema, err = inferSchema[R](false); err != nil {
			panic(fmt.Sprintf("gofunc.NewTask(%q): result: %v", name, err))
		}
	}
	raw := func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p P
		if trimmed := bytes.TrimSpace(params); len(trimmed) > 0 && string(trimmed) != "null" {
			if err := json.Unmarshal(trimmed, &p); err != nil {
				return nil, &paramsError{err}
			}
		}
		r, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("marshal result: %w", err)
		}
		return out, nil
	}
	return newTask(name, description, paramsSchema, outputSchema, raw)
}

// NewRawTask makes fn an agent called name with explicit schemas (either may be nil: any object, no output
// schema). fn gets the parameters JSON as the coordinator stored it and returns JSON (or nothing); a result
// that is not valid JSON fails the run.
//
// NewRawTask panics when name is not a valid agent name or fn is nil.
func NewRawTask(name, description string, parametersSchema, outputSchema json.RawMessage, fn Func) Task {
	return newTask(name, description, parametersSchema, outputSchema, fn)
}

func newTask(name, description string, paramsSchema, outputSchema json.RawMessage, fn Func) Task {
	if err := orchestrator.ValidateName(name); err != nil {
		panic(fmt.Sprintf("gofunc: task name: %v", err))
	}
	if fn == nil {
		panic(fmt.Sprintf("gofunc: task %q has a nil function", name))
	}
	return Task{
		bp: orchestrator.Blueprint{
			Name:             name,
			Type:             orchestrator.AgentTypeDeterministic,
			Description:      description,
			ParametersSchema: paramsSchema,
			OutputSchema:     outputSchema,
		},
		fn: fn,
	}
}

// Name returns the task's agent name.
func (t Task) Name() string { return t.bp.Name }

// Blueprint returns a copy of the task's blueprint.
func (t Task) Blueprint() *orchestrator.Blueprint {
	bp := t.bp
	bp.Tags = append([]string(nil), t.bp.Tags...)
	return &bp
}

// WithTags returns t with the blueprint's tags set.
func (t Task) WithTags(tags ...string) Task {
	t.bp.Tags = append([]string(nil), tags...)
	return t
}

// WithParametersSchema returns t with its parameters_schema replaced, for what struct tags cannot say
// (enum, default, minimum, format).
func (t Task) WithParametersSchema(schema json.RawMessage) Task {
	t.bp.ParametersSchema = schema
	return t
}

// WithOutputSchema returns t with its output_schema replaced (nil: none).
func (t Task) WithOutputSchema(schema json.RawMessage) Task {
	t.bp.OutputSchema = schema
	return t
}

// WithTimeout returns t with the blueprint's timeout_seconds set: a run still going after d has its
// context cancelled and fails with "timed out after d".
func (t Task) WithTimeout(d time.Duration) Task {
	t.bp.TimeoutSeconds = d.Seconds()
	return t
}

// Config configures an [Executor]. The zero value is ready to use.
type Config struct {
	// StopGrace is how long a stopped or timed-out function has to return after its context is cancelled
	// before Execute returns without it. Zero or negative means DefaultStopGrace (5s).
	StopGrace time.Duration
	// Logger receives panics (with their stacks), abandoned functions and event errors. Nil discards them.
	Logger *slog.Logger
}

// Executor runs [Task]s. It implements [orchestrator.Executor] and is safe for concurrent use.
type Executor struct {
	cfg     Config
	order   []string
	tasks   map[string]Task
	schemas *schemacache.Cache
}

var _ orchestrator.Executor = (*Executor)(nil)

// New returns an executor for tasks with the default [Config]. It panics when two tasks share a name.
func New(tasks ...Task) *Executor { return NewWithConfig(Config{}, tasks...) }

// NewWithConfig returns an executor for tasks with cfg. It panics when two tasks share a name.
func NewWithConfig(cfg Config, tasks ...Task) *Executor {
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Executor{cfg: cfg, tasks: make(map[string]Task, len(tasks)), schemas: schemacache.New(64)}
	for _, t := range tasks {
		if t.fn == nil {
			panic("gofunc: a Task must be built with NewTask or NewRawTask")
		}
		if _, dup := e.tasks[t.bp.Name]; dup {
			panic(fmt.Sprintf("gofunc: two tasks are named %q", t.bp.Name))
		}
		e.tasks[t.bp.Name] = t
		e.order = append(e.order, t.bp.Name)
	}
	return e
}

// Blueprints returns the tasks' blueprints, in the order the tasks were given, for the runner to announce.
func (e *Executor) Blueprints() []*orchestrator.Blueprint {
	out := make([]*orchestrator.Blueprint, 0, len(e.order))
	for _, name := range e.order {
		out = append(out, e.tasks[name].Blueprint())
	}
	return out
}

// Execute runs the task named by inv's blueprint (or, without one, by inv.AgentName less any "@runner"
// suffix) and returns its result; see the package documentation.
//
// It returns an error, without calling the function, for an unknown task, a resume, parameters that do not
// decode into the task's parameter type, or a malformed output schema.
func (e *Executor) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_invocation", "no invocation")
	}
	name := inv.AgentName
	if inv.Blueprint != nil && inv.Blueprint.Name != "" {
		name = inv.Blueprint.Name
	} else if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	task, ok := e.tasks[name]
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "agent_not_found", "no Go function task named %q", name)
	}
	if inv.Mode == orchestrator.RunTypeResume {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "resume_not_supported", "Deterministic agents do not support resumption")
	}
	if events == nil {
		events = orchestrator.DiscardEvents
	}
	schema, err := e.schemas.CompileOutput(inv.OutputSchema)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return stoppedResult("stopped"), nil
	}

	timeout := task.bp.Timeout()
	if inv.Blueprint != nil {
		timeout = inv.Blueprint.Timeout()
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { cancel(errTimeout) })
		defer t.Stop()
	}
	c := &call{inv: inv, sink: events}
	fctx = context.WithValue(fctx, callKey{}, c)
	log := e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", name)

	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				log.Error("gofunc task panicked", "panic", v, "stack", string(debug.Stack()))
				o = outcome{panicked: true, err: fmt.Errorf("panic: %v", v)}
			}
			done <- o
		}()
		o.out, o.err = task.fn(fctx, inv.Parameters)
	}()

	var o outcome
	abandoned := false
	select {
	case o = <-done:
	case <-fctx.Done():
		grace := time.NewTimer(e.cfg.StopGrace)
		select {
		case o = <-done:
		case <-grace.C:
			abandoned = true
			log.Warn("gofunc task ignored cancellation; abandoning its goroutine", "grace", e.cfg.StopGrace)
		}
		grace.Stop()
	}
	cause := context.Cause(fctx) // nil unless stopped or timed out
	cancel(nil)
	c.finish()

	var pe *paramsError
	switch {
	case !abandoned && errors.As(o.err, &pe):
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "parameters of %q: %v", name, pe.err)
	case abandoned || (o.err != nil && !o.panicked && cause != nil):
		// An error after a stop or timeout is the stop's doing (usually ctx.Err() handed back).
		if errors.Is(cause, errTimeout) {
			return stoppedResult("timed out after " + timeout.String()), nil
		}
		return stoppedResult("stopped"), nil
	case o.panicked:
		return &orchestrator.Result{ResultType: ResultType, Error: o.err.Error(), ExitCode: intPtr(ExitPanic)}, nil
	case o.err != nil:
		return &orchestrator.Result{ResultType: ResultType, Error: o.err.Error(), ExitCode: intPtr(ExitError)}, nil
	}

	res := &orchestrator.Result{ResultType: ResultType, ExitCode: intPtr(ExitOK)}
	if out := bytes.TrimSpace(o.out); len(out) > 0 {
		if !json.Valid(out) {
			res.Error = "the task returned invalid JSON"
			res.ExitCode = intPtr(ExitError)
			res.ResultText = string(out)
			return res, nil
		}
		res.ResultText = string(out)
		res.ResultData = json.RawMessage(bytes.Clone(out))
	}
	outputcheck.Apply(res, schema, "the task's result")
	return res, nil
}

var errTimeout = errors.New("gofunc: task timed out")

type outcome struct {
	out      json.RawMessage
	err      error
	panicked bool
}

// paramsError marks a failure to decode the parameters, which is the caller's input, not the task's doing.
type paramsError struct{ err error }

func (e *paramsError) Error() string { return "decode parameters: " + e.err.Error() }

func stoppedResult(msg string) *orchestrator.Result {
	return &orchestrator.Result{ResultType: ResultType, Error: msg, ExitCode: intPtr(ExitStopped)}
}

func intPtr(i int) *int { return &i }

// inferSchema derives a schema from T. For parameters the schema must describe a JSON object.
func inferSchema[T any](object bool) (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if object {
		t := reflect.TypeFor[T]()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct && (t.Kind() != reflect.Map || t.Key().Kind() != reflect.String) {
			return nil, fmt.Errorf("type %v is not a struct or a map with string keys, and parameters are a JSON object", reflect.TypeFor[T]())
		}
		// A pointer gives ["null","object"]; parameters are always an object.
		s.Type, s.Types = "object", nil
	}
	s.Schema = schemaDraft
	return json.Marshal(s)
}

func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}
