package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// ErrServer is the kind of the errors [Client] returns when the coordinator failed — a 5xx, an answer it
// cannot read, a connection that could not be made or timed out — as opposed to the caller's mistakes,
// which carry the sentinels of package orchestrator. A handler serving a Client (the runner's gateway)
// answers such errors with 502.
var ErrServer = errors.New("coordinator server error")

// statusKinds maps error kinds to statuses and back. Order matters for the forward direction:
// ErrInvalidParameters errors also match ErrInvalid.
var statusKinds = []struct {
	kind   error
	status int
}{
	{orchestrator.ErrInvalid, http.StatusBadRequest},
	{orchestrator.ErrUnauthorized, http.StatusUnauthorized},
	{orchestrator.ErrForbidden, http.StatusForbidden},
	{orchestrator.ErrNotFound, http.StatusNotFound},
	{orchestrator.ErrConflict, http.StatusConflict},
	{orchestrator.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{ErrServer, http.StatusBadGateway},
}

// StatusCode returns the HTTP status for err: 400 for ErrInvalid (and validation errors), 401, 403, 404,
// 409, 413 for the other sentinels (422 for idempotency_key_reused), 502 for [ErrServer] (an upstream coordinator failed), 500 for anything
// else.
func statusCode(err error) int {
	if orchestrator.ErrorCode(err) == codeKeyReused {
		return http.StatusUnprocessableEntity // as the IETF Idempotency-Key draft says
	}
	for _, sk := range statusKinds {
		if errors.Is(err, sk.kind) {
			return sk.status
		}
	}
	return http.StatusInternalServerError
}

// codeKeyReused is the code of a request whose idempotency key was used for a different request.
const codeKeyReused = "idempotency_key_reused"

// kindForStatus is the inverse of StatusCode, for the client.
func kindForStatus(status int) error {
	for _, sk := range statusKinds {
		if sk.status == status {
			return sk.kind
		}
	}
	switch {
	case status == http.StatusMethodNotAllowed:
		return orchestrator.ErrNotFound
	case status >= 400 && status < 500:
		return orchestrator.ErrInvalid
	}
	return ErrServer
}

// writeError renders err as the API's JSON error body. A validation error gets its own body (every error and the schema);
// an unknown error is a 500 with a generic message (the real one is logged, not shown).
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if isGone(r, err) {
		return // the caller went away; nobody reads an answer
	}
	status, body := renderError(r, log, err)
	if status == http.StatusUnauthorized {
		challenge := `Bearer realm="orchestrator"`
		if orchestrator.ErrorCode(err) == "invalid_token" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	writeRaw(w, status, body)
}

// renderError returns err's status and JSON body: the validation body for a validation error, else
// {"error": code, "message": msg, …details}. A coordinator fault is logged, and its body says only that
// it happened.
func renderError(r *http.Request, log *slog.Logger, err error) (int, []byte) {
	var ve *orchestrator.ValidationError
	if errors.As(err, &ve) {
		b, merr := json.Marshal(ve) // ValidationError marshals to the validation body
		if merr == nil {
			return http.StatusBadRequest, b
		}
	}
	status := statusCode(err)
	code, msg := orchestrator.ErrorCode(err), err.Error()
	var details map[string]any
	switch status {
	case http.StatusBadGateway:
		log.Error("upstream coordinator failed", "method", r.Method, "path", r.URL.Path, "err", err)
		code, msg = "upstream_error", "the coordinator failed or could not be reached"
	case http.StatusInternalServerError:
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		code, msg = "internal_error", "internal server error"
	default:
		var e *orchestrator.Error
		if errors.As(err, &e) {
			details = e.Details
		}
	}
	b, _ := (&orchestrator.Error{Code: code, Message: msg, Details: details}).MarshalJSON()
	return status, b
}

// writeErrorStatus writes {"error": code, "message": msg, …details} (see orchestrator.Error.MarshalJSON).
func writeErrorStatus(w http.ResponseWriter, status int, code, msg string, details map[string]any) {
	b, _ := (&orchestrator.Error{Code: code, Message: msg, Details: details}).MarshalJSON()
	writeRaw(w, status, b)
}

// writeRaw writes body, a JSON value, with status.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeErrorStatus(w, http.StatusInternalServerError, "internal_error", "internal server error", nil)
		return
	}
	writeRaw(w, status, b)
}

// decodeError reads an error response back into the error the server rendered: a
// *orchestrator.ValidationError for a validation failure, else a *orchestrator.Error whose Kind comes from
// the status (404 → ErrNotFound, …; 5xx → ErrServer) and whose Code, Message and Details come from the
// body. So errors.Is and errors.As work on a remote coordinator's errors as on a local one's.
func decodeError(status int, statusText string, body []byte) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		snippet := strings.TrimSpace(string(body))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		msg := fmt.Sprintf("coordinator answered %d %s", status, statusText)
		if snippet != "" {
			msg += ": " + snippet
		}
		return &orchestrator.Error{Kind: kindForStatus(status), Code: codeForStatus(status), Message: msg}
	}
	var code, msg string
	_ = json.Unmarshal(m["error"], &code)
	_ = json.Unmarshal(m["message"], &msg)
	if code == "parameter_validation_failed" || code == "output_validation_failed" {
		ve := &orchestrator.ValidationError{Output: code == "output_validation_failed"}
		_ = json.Unmarshal(m["agent_name"], &ve.AgentName)
		_ = json.Unmarshal(m["validation_errors"], &ve.Errors)
		key := "parameters_schema"
		if ve.Output {
			key = "output_schema"
		}
		if s := m[key]; len(s) > 0 && string(s) != "null" {
			ve.Schema = s
		}
		return ve
	}
	if code == "" {
		code = codeForStatus(status)
	}
	if msg == "" {
		msg = fmt.Sprintf("coordinator answered %d %s", status, statusText)
	}
	e := &orchestrator.Error{Kind: kindForStatus(status), Code: code, Message: msg}
	for k, v := range m {
		if k == "error" || k == "message" {
			continue
		}
		var val any
		if json.Unmarshal(v, &val) == nil {
			e.With(k, val)
		}
	}
	return e
}

func codeForStatus(status int) string {
	switch kindForStatus(status) {
	case ErrServer:
		return "internal_error"
	default:
		return orchestrator.ErrorCode(kindForStatus(status))
	}
}
