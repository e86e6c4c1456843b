package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func badBody(format string, args ...any) error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_body", format, args...)
}

func badQuery(format string, args ...any) error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_query", format, args...)
}

// readBody reads the whole (size-limited) body. An oversized body is ErrTooLarge; one whose text is not
// UTF-8, or holds an escaped NUL, is invalid_encoding ([checkBodyText]).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyReadError(err)
	}
	if err := checkBodyText(b); err != nil {
		return nil, err
	}
	return b, nil
}

func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "body_too_large", "request body exceeds %d bytes", mbe.Limit)
	}
	return badBody("reading request body: %v", err)
}

// decodeJSON decodes exactly one JSON value from data into v. strict rejects object keys v has no field
// for. Every failure is an ErrInvalid error that names the problem: where the syntax breaks, which field
// has the wrong type, trailing data after the value.
func decodeJSON(data []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badBody("request body is required (a JSON value)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badBody("invalid JSON: unexpected data after the first value (at byte %d)", dec.InputOffset())
	}
	return nil
}

// decodeBody reads the body, which must be a JSON object, and decodes it into v with [decodeJSON].
func decodeBody(r *http.Request, v any, strict bool) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeObject(data, v, strict)
}

// decodeObject decodes data, which must be a JSON object, into v with [decodeJSON].
func decodeObject(data []byte, v any, strict bool) error {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		if err := decodeJSON(data, new(any), false); err != nil {
			return err // say what is wrong with the JSON first
		}
		return badBody("the body must be a JSON object")
	}
	return decodeJSON(data, v, strict)
}

// checkNumbers reports a number in data, JSON text, that no 64-bit float holds (1e999, -2e308). Kept as
// it came, it would break every reader that decodes JSON numbers as floats — JavaScript, encoding/json
// into any, most JSON libraries — on every later read. Malformed JSON is left to the decoder that follows.
func checkNumbers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				s := string(n)
				if len(s) > 40 {
					s = s[:37] + "..."
				}
				return fmt.Errorf("holds the number %s, beyond the range of a 64-bit float", s)
			}
		}
	}
}

func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return badBody("invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return badBody("invalid JSON: unexpected end of input")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badBody("the body must be %s, not %s", typeName(typ.Type), typ.Value)
		}
		return badBody("field %q must be %s, not %s", field, typeName(typ.Type), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badBody("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	var oe *orchestrator.Error
	if errors.As(err, &oe) {
		return err
	}
	return badBody("invalid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "an integer (nanoseconds)"
	case reflect.TypeFor[json.RawMessage]():
		return "JSON"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return "a different type"
}

// parseWait reads a duration: a Go duration ("30s", "1m30s") or a number of seconds ("30", "1.5").
func parseWait(name, v string, maxWait time.Duration) (time.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return 0, badQuery("%s must be a non-negative duration (\"30s\") or number of seconds, not %q", name, v)
		}
		if f > maxWait.Seconds() {
			return 0, badQuery("%s must be at most %s, not %q", name, maxWait, v)
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		d, err = time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, badQuery("%s must be a non-negative duration (\"30s\") or number of seconds, not %q", name, v)
		}
	}
	if d > maxWait {
		return 0, badQuery("%s must be at most %s, not %q", name, maxWait, v)
	}
	return d, nil
}

// queryWait reads a wait parameter; def when absent.
func (s *server) queryWait(r *http.Request, name string, def time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return parseWait(name, v, s.cfg.MaxWait)
}

// queryInt reads an integer parameter within [lo, hi]; def when absent.
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badQuery("%s must be an integer between %d and %d, not %q", name, lo, hi, v)
	}
	return n, nil
}

// queryBool reads a boolean parameter (true or false); def when absent.
func queryBool(r *http.Request, name string, def bool) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, badQuery("%s must be true or false, not %q", name, v)
	}
}

// queryList reads a comma-separated list parameter (repeated parameters are joined).
func queryList(r *http.Request, name string) []string {
	var out []string
	for _, v := range r.URL.Query()[name] {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// queryTime reads an RFC 3339 time parameter; zero when absent.
func queryTime(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badQuery("%s must be an RFC 3339 time, not %q", name, v)
	}
	return t, nil
}

func queryRunStatuses(r *http.Request) ([]orchestrator.RunStatus, error) {
	var out []orchestrator.RunStatus
	for _, v := range queryList(r, "status") {
		st := orchestrator.RunStatus(v)
		switch st {
		case orchestrator.RunPending, orchestrator.RunClaimed, orchestrator.RunRunning,
			orchestrator.RunCompleted, orchestrator.RunFailed, orchestrator.RunStopped:
			out = append(out, st)
		default:
			return nil, badQuery("status %q is not a run status (pending, claimed, running, completed, failed, stopped)", v)
		}
	}
	return out, nil
}

func querySessionStatuses(r *http.Request) ([]orchestrator.SessionStatus, error) {
	var out []orchestrator.SessionStatus
	for _, v := range queryList(r, "status") {
		st := orchestrator.SessionStatus(v)
		switch st {
		case orchestrator.SessionPending, orchestrator.SessionRunning, orchestrator.SessionCompleted,
			orchestrator.SessionFailed, orchestrator.SessionStopped, orchestrator.SessionWaiting:
			out = append(out, st)
		default:
			return nil, badQuery("status %q is not a session status (pending, waiting, running, completed, failed, stopped)", v)
		}
	}
	return out, nil
}

// formatWait renders a wait for a query string.
func formatWait(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// maxLimit bounds the limit parameters; the coordinator applies its own, lower, caps.
const maxLimit = 100000

func pathID(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if v == "" || len(v) > 512 {
		return "", badQuery("%s is not valid", name)
	}
	return v, nil
}
