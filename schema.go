package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentorchestrator/orchestrator/internal/validate"
)

// FieldError is one way an instance fails its schema.
type FieldError struct {
	// Path is the instance location in JSONPath form: "$" for the root, "$.url", "$.items[2]".
	Path string `json:"path"`
	// Message says what is wrong, worded like Python's jsonschema ("'deep' is not of type 'integer'").
	Message string `json:"message"`
	// SchemaPath is the failing keyword's location in the schema, dot-separated: "properties.url.format".
	SchemaPath string `json:"schema_path"`
}

// ValidationError reports that parameters (or an executor's output) do not match a JSON Schema. It carries
// every error at once and the schema itself, so an AI caller can correct its input; the HTTP and MCP layers
// render it as is (docs/http-api.md).
type ValidationError struct {
	// AgentName is the agent whose schema was checked.
	AgentName string
	// Errors lists every failure, ordered by Path then SchemaPath.
	Errors []FieldError
	// Schema is the schema that was checked, as given.
	Schema json.RawMessage
	// Output is true when the checked instance was an executor's output rather than a caller's parameters.
	Output bool
}

// Code is the machine code of the error: "parameter_validation_failed" or "output_validation_failed".
func (e *ValidationError) Code() string {
	if e.Output {
		return "output_validation_failed"
	}
	return "parameter_validation_failed"
}

// Summary is the fixed human sentence of the error body.
func (e *ValidationError) Summary() string {
	if e.Output {
		return "Output does not match the output_schema"
	}
	return "Parameters do not match agent's parameters_schema"
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Summary())
	for i, fe := range e.Errors {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", fe.Path, fe.Message)
	}
	return b.String()
}

// Is makes a ValidationError match ErrInvalidParameters (or, for output, nothing more specific) and ErrInvalid.
func (e *ValidationError) Is(target error) bool {
	return target == ErrInvalid || (!e.Output && target == ErrInvalidParameters)
}

// Schema is a compiled JSON Schema: it validates instances — reporting every error at once, each with its
// instance path, message and schema path — and applies the schema's defaults.
//
// Drafts: a schema without "$schema" is read as draft-07, the most widely written dialect; "$schema" selects draft-04,
// draft-06, draft-07, 2019-09 or 2020-12. Whatever the draft, "format" is asserted, not just annotated: uri,
// uri-reference, iri, email, hostname, ipv4, ipv6, date-time, date, time, duration, uuid, regex,
// json-pointer, ... (unknown format names are ignored). A value that fails its format is still checked
// against the same schema's pattern, minLength and maxLength, and each failure is reported. "pattern" and the "regex" format use Go's RE2 syntax,
// which runs in linear time on any input but lacks look-around and back-references.
//
// A schema is checked against its draft's meta-schema when compiled, so a malformed schema is refused when
// a blueprint is loaded or registered, not at first use. Only references inside the schema itself resolve:
// a "$ref" (or "$schema") naming another document is a compile error, and the library never reads a file or
// the network on a schema's behalf.
//
// Validation uses github.com/santhosh-tekuri/jsonschema/v6; defaults are applied by
// github.com/google/jsonschema-go (see [Schema.Normalize]). A Schema is immutable and safe for concurrent use.
type Schema struct {
	raw json.RawMessage
	v   *validate.Schema
}

// Limits on what a schema may cost, which [CompileSchema] applies to every schema the library compiles —
// parameters and output schemas, from blueprint files, the agent registry, runners' registrations and run
// requests alike. A schema's cost is not its size: the validator's compile time grows with the cube of the
// nesting, the square of the number of subschemas, and with how its references interlock, and references
// that fan out to the same subschemas multiply the work of every validation. Each limit admits every real
// schema we have measured with a wide margin; docs/http-api.md says more.
const (
	// MaxSchemaDepth bounds how deeply a schema nests arrays and objects: 64 levels, about 30 levels of
	// nested objects in the data it describes. Real schemas stay under 20.
	MaxSchemaDepth = 64
	// SchemaCompileCostPerByte, MinSchemaCompileCost and MaxSchemaCompileCost bound a schema's estimated
	// compile cost, in units of about one step of the validator's slowest loops: a schema of n bytes may
	// cost SchemaCompileCostPerByte × n, at least MinSchemaCompileCost and at most MaxSchemaCompileCost, so
	// the CPU a request spends compiling stays proportional to what it sends (about a microsecond a byte).
	// Real schemas cost 1 to 35 units a byte.
	SchemaCompileCostPerByte = 100
	MinSchemaCompileCost     = 1 << 18
	MaxSchemaCompileCost     = 25_000_000
	// MaxSchemaEvaluations bounds how many subschemas one value may be checked against, through "$ref",
	// "allOf", "anyOf", "oneOf" and the like and through the subschemas of the values around it; a recursion
	// that multiplies at each level of nesting has no bound and is refused. Real schemas need 1 to about
	// 100. Validating n JSON values against an accepted schema evaluates at most n × MaxSchemaEvaluations
	// subschemas.
	MaxSchemaEvaluations = 2000

	// ImplicitPromptSchema is the parameters schema of an AI agent that declares none: a non-empty prompt.
	// It is well within every limit above.
	ImplicitPromptSchema = `{"type":"object","required":["prompt"],"properties":{"prompt":{"type":"string","minLength":1}}}`
)

// CompileSchema parses and compiles a JSON Schema. It fails, with an error wrapping [ErrInvalid] (code
// "invalid_schema") that says what is wrong and where, when raw is not JSON, when the schema does not match
// its draft's meta-schema ({"type":"strang"}, {"minLength":-1}, {"required":"x"}), when a pattern is not a
// valid regular expression, when a "$ref" points outside the schema or loops back without validating
// anything, or when a default that [Schema.Normalize] would apply does not match its own subschema.
//
// A schema beyond one of the limits above fails with code "schema_too_complex" (also wrapping
// [ErrInvalid]), whose details name what was measured ("measure": "depth", "compile_cost" or
// "evaluations"), the limit for this schema ("limit") and what the schema reaches ("measured", or
// "unbounded": true for a recursion that multiplies).
// The limits are checked by walks that cost time linear in the schema, before anything expensive is done:
// a refused schema costs next to nothing, and compiling an accepted one a fraction of a second at most.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	v, err := validate.Compile(raw)
	if err != nil {
		var le *validate.LimitError
		if errors.As(err, &le) {
			e := Errorf(ErrInvalid, "schema_too_complex", "%s", err).With("measure", le.Measure).With("limit", le.Limit)
			if le.Unbounded {
				return nil, e.With("unbounded", true)
			}
			return nil, e.With("measured", le.Measured)
		}
		return nil, Errorf(ErrInvalid, "invalid_schema", "%s", err)
	}
	return &Schema{raw: slices.Clone(raw), v: v}, nil
}

// schemaError says where a schema that [CompileSchema] refused came from ("output_schema: ..."), keeping
// the error's code and details: an over-limit schema is "schema_too_complex" wherever it was found.
func schemaError(err error, format string, args ...any) error {
	var e *Error
	if errors.As(err, &e) {
		cp := *e
		cp.Message = fmt.Sprintf(format, args...) + ": " + e.Message
		cp.Details = maps.Clone(e.Details)
		return &cp
	}
	return Errorf(ErrInvalid, "invalid_schema", "%s: %v", fmt.Sprintf(format, args...), err)
}

// Raw returns the schema as it was given.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks a decoded JSON value (map[string]any, []any, string, float64 or json.Number, bool, nil,
// as encoding/json produces) and returns every error; nil means valid. Errors are sorted by instance
// location (object keys in byte order, array indexes numerically), then SchemaPath, then Message, without
// duplicates, so the same input always gives the same list.
//
// Messages follow the wording of Python's jsonschema, which many schema authors know ("'deep' is not of type
// 'integer'"). A missing required property is reported at the object that lacks it (path "$", message
// "'url' is a required property", schema path "required"); unexpected properties are reported together at
// their object. Errors inside allOf and $ref are reported as their leaves. For a failed anyOf or oneOf, the
// branches that failed only on the value's type, and then those that failed only on a const or enum of the
// value itself, are set aside; if one branch is left its errors are reported (a nullable uri string given
// "x" says "'x' is not a valid URI"), otherwise one error stands for the keyword ("5 is not valid under any
// of the given schemas"). SchemaPath is the failing keyword's location as reached from the root, through
// any "$ref" ("properties.a.$ref.type"); its parts are joined with dots as they are, so a property name
// containing a dot is ambiguous there (Path is not).
func (s *Schema) Validate(instance any) []FieldError {
	return fieldErrors(s.v.Validate(instance))
}

// Normalize decodes params, applies the schema's defaults and validates the result. It returns the
// normalized JSON (compact, keys sorted) when params are valid, or the field errors (and nil JSON) when they
// are not. Empty params and "null" mean {}. The error return is for params that are not JSON at all (code
// "invalid_json", wrapping [ErrInvalid]), including numbers beyond float64's range. Integers of up to 100
// digits are kept exact; other numbers pass through float64.
//
// Defaults are applied by google/jsonschema-go's ApplyDefaults, which follows "properties" only — not $ref,
// allOf/anyOf/oneOf, items or additionalProperties — and only into objects: a missing property with a
// "default" is set to it, and a missing object property whose subschema has defaults further down is
// created to hold them ({"opts":{"verbose":false}}). Three rules of ours keep that safe:
//
//   - Params are validated as given first, and those errors are returned: a caller is only ever told about
//     what it sent. So a required property missing from an object the caller sent is an error whatever its
//     default, while defaults still apply inside a required object the caller did send. (ApplyDefaults
//     alone skips required properties entirely, including the defaults nested inside them; we give it the
//     "properties" and "default" keywords only.)
//   - Every default that can be applied is checked against its own subschema by [CompileSchema].
//   - When the defaults make valid params invalid (an object created to hold a default lacks a required
//     property, or trips a oneOf), the params are returned as given, without defaults.
func (s *Schema) Normalize(params json.RawMessage) (json.RawMessage, []FieldError, error) {
	out, errs, err := s.v.Normalize(params)
	if err != nil {
		return nil, nil, Errorf(ErrInvalid, "invalid_json", "%s", err)
	}
	return out, fieldErrors(errs), nil
}

func fieldErrors(errs []validate.Error) []FieldError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		out[i] = FieldError(e)
	}
	return out
}

// MarshalJSON renders the error as the body the HTTP API answers and the MCP server returns:
// {"error": "parameter_validation_failed", "message": …, "agent_name": …, "validation_errors": [{path,
// message, schema_path}], "parameters_schema": …}; for an output, "output_validation_failed" and
// "output_schema".
func (e *ValidationError) MarshalJSON() ([]byte, error) {
	errs := e.Errors
	if errs == nil {
		errs = []FieldError{}
	}
	schema := e.Schema
	if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
		schema = json.RawMessage("null")
	}
	type body struct {
		Error            string          `json:"error"`
		Message          string          `json:"message"`
		AgentName        string          `json:"agent_name"`
		ValidationErrors []FieldError    `json:"validation_errors"`
		ParametersSchema json.RawMessage `json:"parameters_schema,omitempty"`
		OutputSchema     json.RawMessage `json:"output_schema,omitempty"`
	}
	b := body{Error: e.Code(), Message: e.Summary(), AgentName: e.AgentName, ValidationErrors: errs}
	if e.Output {
		b.OutputSchema = schema
	} else {
		b.ParametersSchema = schema
	}
	return json.Marshal(b)
}
