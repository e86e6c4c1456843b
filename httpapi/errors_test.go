package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// wantValidationBody is the documented validation error response (docs/http-api.md), verbatim.
const wantValidationBody = `{
  "error": "parameter_validation_failed",
  "message": "Parameters do not match agent's parameters_schema",
  "agent_name": "web-crawler",
  "validation_errors": [
    {
      "path": "$.url",
      "message": "'not-a-url' is not a valid URI",
      "schema_path": "properties.url.format"
    },
    {
      "path": "$.depth",
      "message": "'deep' is not of type 'integer'",
      "schema_path": "properties.depth.type"
    }
  ],
  "parameters_schema": {
    "type": "object",
    "required": ["url"],
    "properties": {
      "url": { "type": "string", "format": "uri" },
      "depth": { "type": "integer", "default": 2 }
    }
  }
}`

func exampleValidationError() *orchestrator.ValidationError {
	return &orchestrator.ValidationError{
		AgentName: "web-crawler",
		Errors: []orchestrator.FieldError{
			{Path: "$.url", Message: "'not-a-url' is not a valid URI", SchemaPath: "properties.url.format"},
			{Path: "$.depth", Message: "'deep' is not of type 'integer'", SchemaPath: "properties.depth.type"},
		},
		Schema: json.RawMessage(`{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`),
	}
}

// TestValidationBody: a *ValidationError renders as the documented body, byte for byte (modulo
// indentation), with status 400.
func TestValidationBody(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeError(rec, httptest.NewRequest("POST", "/runs", nil), nil, fmt.Errorf("start: %w", exampleValidationError()))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400", rec.Code)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(wantValidationBody)); err != nil {
		t.Fatal(err)
	}
	got := bytes.TrimSuffix(rec.Body.Bytes(), []byte("\n"))
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("validation body\n got: %s\nwant: %s", got, want.Bytes())
	}
	// And the client reads it back into the same error.
	err := decodeError(rec.Code, "Bad Request", rec.Body.Bytes())
	var ve *orchestrator.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, orchestrator.ErrInvalidParameters) || !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("decodeError = %T %v, want a *ValidationError matching ErrInvalidParameters", err, err)
	}
	orig := exampleValidationError()
	if ve.AgentName != orig.AgentName || !reflect.DeepEqual(ve.Errors, orig.Errors) || string(ve.Schema) != string(orig.Schema) {
		t.Fatalf("decoded %+v, want %+v", ve, orig)
	}
}

// TestValidationThroughCoordinator: invalid parameters through the whole stack give the documented body and a
// *ValidationError at the client. It needs the real JSON Schema validator in the root package.
func TestValidationThroughCoordinator(t *testing.T) {
	t.Parallel()
	if _, err := orchestrator.CompileSchema(json.RawMessage(`{"type":"strang"}`)); err == nil {
		t.Skip("the root package's schema validation is still a stub")
	}
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.Registration](t, "RegisterRunner")(env.client(t, runnerTok).RegisterRunner(ctx, registration("h", crawler())))
	body := []byte(`{"agent_name":"web-crawler","parameters":{"url":"not-a-url","depth":"deep"}}`)
	rec := serve(env.handler, "POST", "/runs", clientTok, body)
	got := errorBody(t, rec, http.StatusBadRequest)
	var want map[string]any
	check(t, "documented body", json.Unmarshal([]byte(wantValidationBody), &want))
	// The documented example lists the errors in another order than ours (by path); compare them as sets.
	byPath := func(v any) {
		list, _ := v.([]any)
		slices.SortFunc(list, func(a, b any) int {
			return strings.Compare(fmt.Sprint(a.(map[string]any)["path"]), fmt.Sprint(b.(map[string]any)["path"]))
		})
	}
	byPath(got["validation_errors"])
	byPath(want["validation_errors"])
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("validation body through the coordinator\n got: %v\nwant: %v", got, want)
	}
	_, err := env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"not-a-url","depth":"deep"}`)})
	var ve *orchestrator.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 2 || ve.AgentName != "web-crawler" || len(ve.Schema) == 0 {
		t.Fatalf("client StartRun: err = %#v, want a *ValidationError with 2 errors", err)
	}
}

// TestResumeDeterministicRejected: a resume of a deterministic session, as the README's curl example sends it.
func TestResumeDeterministicRejected(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.Registration](t, "RegisterRunner")(env.client(t, runnerTok).RegisterRunner(ctx, registration("h", crawler())))
	rec := serve(env.handler, "POST", "/runs", clientTok, []byte(`{"agent_name":"web-crawler","parameters":{"url":"https://example.com","depth":2}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("start: %d %s, want 201", rec.Code, rec.Body)
	}
	var res orchestrator.StartRunResult
	check(t, "decode", json.Unmarshal(rec.Body.Bytes(), &res))
	if loc := rec.Header().Get("Location"); loc != "/sessions/"+res.SessionID {
		t.Errorf("Location = %q", loc)
	}
	rec = serve(env.handler, "POST", "/runs", clientTok, []byte(`{"agent_name":"web-crawler","mode":"resume","session_id":"`+res.SessionID+`"}`))
	m := errorBody(t, rec, http.StatusBadRequest)
	if m["message"] != "Deterministic agents do not support resumption" {
		t.Fatalf("resume of a deterministic session: %s", rec.Body)
	}
}

// TestClientErrorMapping: every status maps back to the sentinel it came from, so errors.Is works the
// same remote as local.
func TestClientErrorMapping(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	client := env.client(t, clientTok)
	type errCase struct {
		name string
		err  error
		kind error
		code string
	}
	var cases []errCase
	_, err := client.GetSession(ctx, "ses_missing")
	cases = append(cases, errCase{"not found", err, orchestrator.ErrNotFound, "session_not_found"})
	_, err = client.StartRun(ctx, orchestrator.StartRunParams{})
	cases = append(cases, errCase{"invalid", err, orchestrator.ErrInvalid, "invalid_request"})
	_, err = client.ListRunners(ctx)
	cases = append(cases, errCase{"forbidden", err, orchestrator.ErrForbidden, "forbidden"})
	_, err = env.client(t, "wrong").GetSession(ctx, "x")
	cases = append(cases, errCase{"unauthorized", err, orchestrator.ErrUnauthorized, "invalid_token"})
	_, err = env.client(t, "").GetSession(ctx, "x")
	cases = append(cases, errCase{"no token", err, orchestrator.ErrUnauthorized, "unauthorized"})
	err = client.DeleteSession(ctx, "ses_missing")
	cases = append(cases, errCase{"delete missing", err, orchestrator.ErrNotFound, "session_not_found"})
	for _, c := range cases {
		if !errors.Is(c.err, c.kind) || orchestrator.ErrorCode(c.err) != c.code {
			t.Errorf("%s: err = %v (code %q), want kind %v code %q", c.name, c.err, orchestrator.ErrorCode(c.err), c.kind, c.code)
		}
		var e *orchestrator.Error
		if !errors.As(c.err, &e) || e.Message == "" {
			t.Errorf("%s: err = %#v, want an *orchestrator.Error with a message", c.name, c.err)
		}
	}

	// Details come back too.
	e := decodeError(404, "Not Found", []byte(`{"error":"agent_not_found","message":"agent \"x\" not found","agent_name":"x"}`))
	var oe *orchestrator.Error
	if !errors.As(e, &oe) || oe.Details["agent_name"] != "x" || oe.Error() != `agent "x" not found` {
		t.Fatalf("decodeError details: %#v", e)
	}
	// A body that is not ours still gives the right kind.
	for status, kind := range map[int]error{400: orchestrator.ErrInvalid, 401: orchestrator.ErrUnauthorized, 403: orchestrator.ErrForbidden,
		404: orchestrator.ErrNotFound, 409: orchestrator.ErrConflict, 413: orchestrator.ErrTooLarge, 422: orchestrator.ErrInvalid,
		500: ErrServer, 502: ErrServer} {
		err := decodeError(status, http.StatusText(status), []byte("<html>proxy says no</html>"))
		if !errors.Is(err, kind) || !strings.Contains(err.Error(), fmt.Sprint(status)) {
			t.Errorf("decodeError(%d, html) = %v, want kind %v", status, err, kind)
		}
	}
	for _, sk := range statusKinds {
		if got := statusCode(orchestrator.Errorf(sk.kind, "x", "y")); got != sk.status {
			t.Errorf("statusCode(%v) = %d, want %d", sk.kind, got, sk.status)
		}
	}
	if statusCode(errors.New("boom")) != 500 {
		t.Error("an unknown error must be 500")
	}
}

// TestInternalErrorHidden: an unknown error is a 500 with a generic message; the real one is logged only.
func TestInternalErrorHidden(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeError(rec, httptest.NewRequest("GET", "/x", nil), discardLogger(), errors.New("database password is hunter2"))
	m := errorBody(t, rec, 500)
	if m["error"] != "internal_error" || strings.Contains(rec.Body.String(), "hunter2") {
		t.Fatalf("500 body leaks the error: %s", rec.Body)
	}
}

// TestClientRetries: safe requests (POST /runs among them: it carries an idempotency key) are retried on
// 5xx, unsafe ones (POST events) only when they cannot have reached the server (503 here); the caller sees the final status as an ErrServer error.
func TestClientRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		status  int
		call    func(c *Client) error
		tries   int64
		errKind error
	}{
		{"GET 500 retried", 500, func(c *Client) error { _, err := c.GetSession(context.Background(), "x"); return err }, 3, ErrServer},
		{"POST /runs 500 retried (it carries an idempotency key)", 500, func(c *Client) error {
			_, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "a"})
			return err
		}, 3, ErrServer},
		{"POST /runs 503 retried", 503, func(c *Client) error {
			_, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "a"})
			return err
		}, 3, ErrServer},
		{"POST events 502 not retried", 502, func(c *Client) error {
			_, err := c.AppendEvents(context.Background(), "s", []orchestrator.Event{{Type: "x"}})
			return err
		}, 1, ErrServer},
		{"report 500 retried", 500, func(c *Client) error {
			return c.ReportRun(context.Background(), orchestrator.RunReport{RunnerID: "r", RunID: "x", Status: orchestrator.RunCompleted})
		}, 3, ErrServer},
		{"404 not retried", 404, func(c *Client) error { _, err := c.GetSession(context.Background(), "x"); return err }, 1, orchestrator.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var tries atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tries.Add(1)
				writeErrorStatus(w, tc.status, "boom", "it broke", nil)
			}))
			t.Cleanup(srv.Close)
			c, err := NewClient(srv.URL, ClientConfig{RetryMax: 2, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
			check(t, "NewClient", err)
			err = tc.call(c)
			if !errors.Is(err, tc.errKind) {
				t.Fatalf("err = %v, want kind %v", err, tc.errKind)
			}
			if got := tries.Load(); got != tc.tries {
				t.Fatalf("%d attempts, want %d", got, tc.tries)
			}
		})
	}
	// A connection that cannot be made is retried even for POST /runs, and the error says so.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := NewClient(url, ClientConfig{RetryMax: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	if _, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "a"}); !errors.Is(err, ErrServer) {
		t.Fatalf("StartRun against a closed server: err = %v, want ErrServer", err)
	}
	// The caller's own cancellation is not the server's fault.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetSession(cctx, "x"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrServer) {
		t.Fatalf("cancelled call: err = %v, want context.Canceled and not ErrServer", err)
	}
}

func TestNewClientRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8765", "ftp://x", "http://", "http://x/?a=b", "://"} {
		if _, err := NewClient(u, ClientConfig{}); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	c, err := NewClient("http://127.0.0.1:1/api/", ClientConfig{})
	if err != nil || c.base != "http://127.0.0.1:1/api" {
		t.Fatalf("NewClient with a path prefix: %v, base %q", err, c.base)
	}
}

// TestClientTimeouts: a long poll's timeout is above its wait, so a wait that ends normally is not an
// error; a stuck server runs into the timeout.
func TestClientTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c, err := NewClient(srv.URL, ClientConfig{RetryMax: -1, Timeout: 50 * time.Millisecond, LongPollGrace: 50 * time.Millisecond})
	check(t, "NewClient", err)
	start := time.Now()
	_, err = c.GetSession(context.Background(), "x")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrServer) {
		t.Fatalf("stuck server: err = %v, want DeadlineExceeded and ErrServer", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("timeout took %s", time.Since(start))
	}
	start = time.Now()
	_, err = c.PollWork(context.Background(), orchestrator.PollParams{RunnerID: "r", Wait: 100 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("long poll: err = %v after %s, want DeadlineExceeded after wait+grace", err, time.Since(start))
	}
}
