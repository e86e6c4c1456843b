package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestErrorMarshalJSON pins the API's error body: {"error": code, "message": …}, then the details in key
// order; a detail can neither replace the first two fields nor, when it cannot be rendered, lose the error.
func TestErrorMarshalJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  *Error
		want string
	}{
		{"no details", Errorf(ErrNotFound, "agent_not_found", "agent %q not found", "crawler"),
			`{"error":"agent_not_found","message":"agent \"crawler\" not found"}`},
		{"details in key order", Errorf(ErrConflict, "agent_disabled", "disabled").With("z", 1).With("agent_name", "crawler"),
			`{"error":"agent_disabled","message":"disabled","agent_name":"crawler","z":1}`},
		{"details cannot replace the code or the message", Errorf(ErrInvalid, "bad", "m").With("error", "other").With("message", "other"),
			`{"error":"bad","message":"m"}`},
		{"a detail that cannot be rendered is left out", Errorf(ErrInvalid, "bad", "m").With("fn", func() {}).With("ok", []int{1}),
			`{"error":"bad","message":"m","ok":[1]}`},
		{"structured details", Errorf(ErrInvalid, "invalid_runs", "2 invalid").With("items", []map[string]any{{"index": 1, "error": "x"}}),
			`{"error":"invalid_runs","message":"2 invalid","items":[{"error":"x","index":1}]}`},
		{"characters escaped", Errorf(ErrInvalid, "bad", "a \"quoted\" <tag>\n"),
			`{"error":"bad","message":"a \"quoted\" \u003ctag\u003e\n"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.err)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal\ngot  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("json.Marshal wrote invalid JSON: %s", got)
			}
		})
	}
}

// TestValidationErrorMarshalJSON pins the validation error body, for parameters and for an output: every
// field error with its path, and the schema under the name of what was checked.
func TestValidationErrorMarshalJSON(t *testing.T) {
	t.Parallel()
	fe := []FieldError{{Path: "$.url", Message: "'x' is not a 'uri'", SchemaPath: "properties.url.format"}}
	schema := json.RawMessage(`{"type":"object"}`)
	for _, tt := range []struct {
		name string
		err  *ValidationError
		want string
	}{
		{"parameters", &ValidationError{AgentName: "crawler", Errors: fe, Schema: schema},
			`{"error":"parameter_validation_failed","message":"Parameters do not match agent's parameters_schema","agent_name":"crawler",` +
				`"validation_errors":[{"path":"$.url","message":"'x' is not a 'uri'","schema_path":"properties.url.format"}],"parameters_schema":{"type":"object"}}`},
		{"output", &ValidationError{AgentName: "crawler", Errors: fe, Schema: schema, Output: true},
			`{"error":"output_validation_failed","message":"Output does not match the output_schema","agent_name":"crawler",` +
				`"validation_errors":[{"path":"$.url","message":"'x' is not a 'uri'","schema_path":"properties.url.format"}],"output_schema":{"type":"object"}}`},
		{"no errors, no schema", &ValidationError{AgentName: "a"},
			`{"error":"parameter_validation_failed","message":"Parameters do not match agent's parameters_schema","agent_name":"a","validation_errors":[],"parameters_schema":null}`},
		{"a schema that is not JSON", &ValidationError{AgentName: "a", Schema: json.RawMessage(`{`)},
			`{"error":"parameter_validation_failed","message":"Parameters do not match agent's parameters_schema","agent_name":"a","validation_errors":[],"parameters_schema":null}`},
	} {
		got, err := json.Marshal(tt.err)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", tt.name, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: json.Marshal\ngot  %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// TestErrorCode: the code of an *Error or *ValidationError anywhere in the chain, else one derived from
// the sentinel, else internal_error.
func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{Errorf(ErrNotFound, "agent_not_found", "x"), "agent_not_found"},
		{fmt.Errorf("start: %w", Errorf(ErrConflict, "session_busy", "x")), "session_busy"},
		{&ValidationError{}, "parameter_validation_failed"},
		{fmt.Errorf("report: %w", &ValidationError{Output: true}), "output_validation_failed"},
		{&Error{Kind: ErrInvalid}, "invalid_request"},
		{ErrNotFound, "not_found"},
		{fmt.Errorf("x: %w", ErrConflict), "conflict"},
		{ErrInvalid, "invalid_request"},
		{ErrUnauthorized, "unauthorized"},
		{ErrForbidden, "forbidden"},
		{ErrTooLarge, "too_large"},
		{errors.New("disk full"), "internal_error"},
		{nil, "internal_error"},
	} {
		if got := ErrorCode(tt.err); got != tt.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	// A ValidationError matches ErrInvalid, and ErrInvalidParameters unless it is about an output.
	if !errors.Is(&ValidationError{}, ErrInvalidParameters) || !errors.Is(&ValidationError{}, ErrInvalid) ||
		errors.Is(&ValidationError{Output: true}, ErrInvalidParameters) || !errors.Is(&ValidationError{Output: true}, ErrInvalid) {
		t.Error("ValidationError matches the wrong sentinels")
	}
}
