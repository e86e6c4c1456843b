package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// Each tool declares an input schema and an output schema, both inferred from its Go types (descriptions
// from the jsonschema tags) and completed by hand where tags cannot say enough (enums, bounds, defaults).
//
// The tools are registered with the SDK's untyped Server.AddTool rather than the generic mcp.AddTool, and
// check their own arguments and answers: the SDK validates arguments with google/jsonschema-go, which
// stops at the first problem, while a model corrects itself best when it hears about every problem at
// once. The project's validator (orchestrator.CompileSchema) reports them all, with their paths; the
// advertised inputSchema is the one the arguments are checked against.

// rawSchemas maps json.RawMessage to "any JSON value", the default for the free-form fields.
var rawSchemas = map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): {}}

// typedTool is a tool's definition with the schemas its arguments and answers are checked against.
type typedTool[In, Out any] struct {
	tool  *mcp.Tool
	in    *orchestrator.Schema
	out   *orchestrator.Schema
	props []string          // the arguments the tool takes, in declaration order
	descs map[string]string // each argument's description
	req   []string          // the required arguments
}

// addTool registers t with the schemas inferred from In and Out (adjusted by adjustIn and adjustOut) and
// handler h. A handler's error becomes a tool error (see [server.toolError]); its answer is checked
// against the output schema and sent as structured content and as its JSON text.
func addTool[In, Out any](s *server, srv *mcp.Server, t *mcp.Tool, adjustIn func(props map[string]*jsonschema.Schema),
	adjustOut func(*jsonschema.Schema), h func(context.Context, *mcp.CallToolRequest, In) (Out, error)) {
	in := inferSchema[In](false)
	if adjustIn != nil {
		adjustIn(in.Properties)
	}
	out := inferSchema[Out](true)
	if adjustOut != nil {
		adjustOut(out)
	}
	t.InputSchema, t.OutputSchema = in, out
	tt := &typedTool[In, Out]{tool: t, in: compile(t.Name, "input", in), out: compile(t.Name, "output", out),
		props: in.PropertyOrder, descs: map[string]string{}, req: in.Required}
	for name, p := range in.Properties {
		tt.descs[name] = p.Description
	}
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := tt.arguments(req.Params.Arguments)
		if err != nil {
			return s.toolError(err), nil
		}
		ctx, done := callContext(ctx)
		defer done()
		o, err := h(ctx, req, args)
		if err != nil {
			return s.toolError(err), nil
		}
		return tt.answer(s, o), nil
	})
}

// inferSchema infers T's schema. An output schema says what the answers hold exactly: the handlers never
// send null for a list or an object (an absent one is omitted), so "null" is dropped from the inferred
// types.
func inferSchema[T any](output bool) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: rawSchemas})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	if output {
		dropNull(s)
	}
	return s
}

func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type, s.Types = s.Types[slices.IndexFunc(s.Types, func(t string) bool { return t != "null" })], nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
	if s.AdditionalProperties != nil {
		dropNull(s.AdditionalProperties)
	}
}

// compile compiles one of the package's own schemas; it cannot fail unless the package is broken.
func compile(tool, which string, s *jsonschema.Schema) *orchestrator.Schema {
	raw, err := json.Marshal(s)
	if err == nil {
		var c *orchestrator.Schema
		if c, err = orchestrator.CompileSchema(raw); err == nil {
			return c
		}
	}
	panic(fmt.Sprintf("mcpserver: %s schema of %s: %v", which, tool, err))
}

// arguments checks raw arguments against the tool's input schema and decodes them. A mismatch is an
// *argumentsError listing every problem.
func (tt *typedTool[In, Out]) arguments(raw json.RawMessage) (In, error) {
	var in In
	var v any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return in, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_arguments", "the arguments of %s are not JSON: %v",
				tt.tool.Name, err).With("tool", tt.tool.Name)
		}
	}
	if errs := tt.in.Validate(v); len(errs) > 0 {
		return in, tt.argumentsError(v, errs)
	}
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &in); err != nil {
		// The schema admitted what the Go type cannot hold: a bug here, not the caller's mistake.
		return in, fmt.Errorf("decode the arguments of %s: %w", tt.tool.Name, err)
	}
	return in, nil
}

// argumentsError turns the validator's errors into one entry per problem, each phrased as what to do:
// a missing required argument and an unknown one (with the closest known name) get an entry of their
// own, where the validator reports them together at the root.
func (tt *typedTool[In, Out]) argumentsError(v any, errs []orchestrator.FieldError) *argumentsError {
	e := &argumentsError{tool: tt.tool.Name}
	obj, _ := v.(map[string]any)
	for _, name := range tt.req {
		if _, ok := obj[name]; !ok && obj != nil {
			msg := fmt.Sprintf("missing required argument '%s'", name)
			if d := tt.descs[name]; d != "" {
				msg += ": " + d
			}
			e.errs = append(e.errs, orchestrator.FieldError{Path: "$." + name, Message: msg, SchemaPath: "required"})
		}
	}
	var unknown []string
	for name := range obj {
		if !slices.Contains(tt.props, name) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		msg := fmt.Sprintf("unknown argument '%s'", name)
		if near := closest(name, tt.props); near != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", near)
		} else {
			msg += fmt.Sprintf("; %s takes %s", tt.tool.Name, strings.Join(tt.props, ", "))
		}
		e.errs = append(e.errs, orchestrator.FieldError{Path: "$." + name, Message: msg, SchemaPath: "additionalProperties"})
	}
	for _, fe := range errs {
		if fe.Path == "$" && obj != nil && (fe.SchemaPath == "required" || fe.SchemaPath == "additionalProperties") {
			continue // said above, one entry per argument
		}
		if name, _, ok := argumentOf(fe.Path); ok {
			at := ""
			if fe.Path != "$."+name {
				at = " at " + fe.Path
			}
			fe.Message = fmt.Sprintf("argument '%s'%s: %s", name, at, fe.Message)
		} else if fe.Path == "$" {
			fe.Message = "the arguments: " + fe.Message
		}
		e.errs = append(e.errs, fe)
	}
	return e
}

// argumentOf returns the top-level argument a path like $.mode or $.tags[0] is in.
func argumentOf(path string) (name, rest string, ok bool) {
	p, ok := strings.CutPrefix(path, "$.")
	if !ok || p == "" {
		return "", "", false
	}
	i := strings.IndexAny(p, ".[")
	if i < 0 {
		return p, "", true
	}
	return p[:i], p[i:], true
}

// closest returns the known name the unknown one most likely meant ("agnt" or "agent" → "agent_name",
// "sessionId" → "session_id", "mdoe" → "mode"), or "" when none is close: the fewest edits to the whole
// name or (one more) to its leading words, case, "_" and "-" aside.
func closest(name string, known []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	n := norm(name)
	best, bestDist := "", -1
	for _, k := range known {
		d := levenshtein(n, norm(k))
		words := strings.Split(k, "_")
		for i := 1; i < len(words); i++ {
			d = min(d, 1+levenshtein(n, norm(strings.Join(words[:i], ""))))
		}
		if d <= max(2, len(norm(k))/3) && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ar, br := []rune(a), []rune(b)
	prev := make([]int, len(br)+1)
	cur := make([]int, len(br)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ar); i++ {
		cur[0] = i
		for j := 1; j <= len(br); j++ {
			cost := 1
			if ar[i-1] == br[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(br)]
}

// argumentsError reports arguments that do not match a tool's input schema: every problem, each phrased so
// that the model can fix it.
type argumentsError struct {
	tool string
	errs []orchestrator.FieldError
}

func (e *argumentsError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, fe := range e.errs {
		msgs[i] = fe.Message
	}
	return fmt.Sprintf("the arguments of %s do not match its input schema: %s", e.tool, strings.Join(msgs, "; "))
}

func (e *argumentsError) Unwrap() error { return orchestrator.ErrInvalid }

// body is the tool error's JSON document, shaped like the API's parameter errors.
func (e *argumentsError) body() json.RawMessage {
	problems := "1 problem"
	if len(e.errs) != 1 {
		problems = fmt.Sprintf("%d problems", len(e.errs))
	}
	b, _ := json.Marshal(struct {
		Error            string                    `json:"error"`
		Message          string                    `json:"message"`
		Tool             string                    `json:"tool"`
		ValidationErrors []orchestrator.FieldError `json:"validation_errors"`
	}{"invalid_arguments", fmt.Sprintf("The arguments of %s have %s", e.tool, problems), e.tool, e.errs})
	return b
}

func (e *argumentsError) hint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Fix the arguments and call %s again (each validation_errors entry is one problem; $.name is the argument name):", e.tool)
	for _, fe := range e.errs {
		b.WriteString("\n- " + fe.Message)
	}
	return b.String()
}

// answer renders a handler's answer: structured content and the same JSON as text. An answer that does not
// match the tool's own output schema is a bug in this package; it is logged and reported as an internal
// error rather than sent to a client that would reject it.
func (tt *typedTool[In, Out]) answer(s *server, out Out) *mcp.CallToolResult {
	name := tt.tool.Name
	b, err := json.Marshal(out)
	if err == nil {
		var v any
		if err = json.Unmarshal(b, &v); err == nil {
			if errs := tt.out.Validate(v); len(errs) > 0 {
				err = fmt.Errorf("%s's answer does not match its output schema: %+v", name, errs)
			}
		}
	}
	if err != nil {
		return s.toolError(fmt.Errorf("mcp tool %s: %w", name, err))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}
