package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Sentinel errors. Every error the library returns for a caller's mistake or a missing record wraps one of
// them, so callers check with [errors.Is] and the HTTP layer maps them to a status (400, 404, 409, 401, 403,
// 413) without parsing messages.
var (
	// ErrNotFound: the named record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the record exists but is in a state that forbids the operation (a guarded transition
	// lost, a name taken, a run held by another runner).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is malformed or breaks a rule.
	ErrInvalid = errors.New("invalid input")
	// ErrInvalidParameters: parameters do not match the agent's parameters_schema. Errors of this kind are
	// a *[ValidationError] and also match [ErrInvalid].
	ErrInvalidParameters = errors.New("parameters do not match the agent's parameters_schema")
	// ErrUnauthorized: no valid credentials.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: valid credentials without the needed role or scope.
	ErrForbidden = errors.New("forbidden")
	// ErrTooLarge: an input exceeds a documented size limit.
	ErrTooLarge = errors.New("too large")
)

// Error is an error with a stable machine code (such as "agent_not_found") for API clients, a human message
// and optional details rendered beside them. It wraps one of the sentinel errors.
type Error struct {
	// Kind is the sentinel this error wraps: ErrNotFound, ErrConflict, ErrInvalid, ...
	Kind error
	// Code is the machine-readable code; it is the "error" field of an HTTP error body.
	Code string
	// Message is for people.
	Message string
	// Details are extra fields of the HTTP error body (for example "agent_name").
	Details map[string]any
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Kind }

// Errorf returns an *Error of the given kind and code with a formatted message.
func Errorf(kind error, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns e with one more detail set.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// ErrorCode returns the machine code for err: the Code of an *Error (or *ValidationError) in its chain, or a
// generic code derived from the sentinel it wraps, or "internal_error".
func ErrorCode(err error) string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Code()
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrInvalid):
		return "invalid_request"
	case errors.Is(err, ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	}
	return "internal_error"
}

// MarshalJSON renders the error as the API's error body, {"error": code, "message": …, …details}: the HTTP
// API answers it and the MCP server returns it to models. Details come in key order and never replace the
// first two fields.
func (e *Error) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"error":`)
	writeJSON(&buf, e.Code)
	buf.WriteString(`,"message":`)
	writeJSON(&buf, e.Message)
	keys := make([]string, 0, len(e.Details))
	for k := range e.Details {
		if k != "error" && k != "message" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, err := json.Marshal(e.Details[k])
		if err != nil {
			continue // a detail that cannot be rendered is left out rather than losing the error
		}
		buf.WriteByte(',')
		writeJSON(&buf, k)
		buf.WriteByte(':')
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
