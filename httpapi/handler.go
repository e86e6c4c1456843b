package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// Config configures the handler returned by [NewHandler]. The zero value serves an open API (no tokens)
// with the documented defaults.
type Config struct {
	// Tokens maps bearer tokens to roles (see [ParseTokens]). Empty means no
	// authentication: every route is open. Whether that is acceptable is the binary's decision
	// ([CheckListenAddr]).
	Tokens map[string]Role
	// Authenticator replaces the token check when set (the runner's gateway scopes each request to one
	// run). Tokens is then ignored, and so are runners' own credentials unless it handles them.
	Authenticator Authenticator
	// MaxBodyBytes bounds a request body; a larger one is 413. Default 2 MiB. The routes that carry a run's
	// result have their own bound, MaxReportBytes.
	MaxBodyBytes int64
	// MaxReportBytes bounds the body of the routes that carry a run's result (POST
	// /runner/runs/{id}/completed, /failed, /stopped and POST /runner/reports). Default: twice the
	// coordinator's result limit (orchestrator.Limits.MaxResultBytes, read from the coordinator's Limits
	// method when it has one, else the default 8 MiB) plus 1 MiB for the rest of the report; never below
	// MaxBodyBytes. A runner is told at registration the largest result, as JSON, it may send
	// (orchestrator.Registration.MaxResultBytes): the coordinator's limit, and within this one.
	MaxReportBytes int64
	// MaxBatchRuns bounds the runs of one fan-out (POST /runs with {"runs": [...]}); more is 413
	// too_many_runs. Default [DefaultMaxBatchRuns].
	MaxBatchRuns int
	// MaxBatchBytes bounds the body of a fan-out; a larger one is 413. A single run's body stays bounded
	// by MaxBodyBytes. Default 32 MiB; never below MaxBodyBytes.
	MaxBatchBytes int64
	// MaxBatchBytesInFlight bounds the bytes that the bodies of fan-outs (POST /runs) and of the routes
	// that carry results (POST /runner/reports, /runner/runs/{id}/completed, /failed, /stopped) may hold at
	// once, across all requests: each reserves its Content-Length (a body of unknown length, its route's
	// whole limit) until it is answered, and one that does not fit is 429 too_many_bytes_in_flight with
	// Retry-After, before its body is read ([Client] retries it). Default [DefaultMaxBatchBytesInFlight];
	// never below MaxBatchBytes or MaxReportBytes, so that one request alone always fits; negative: no
	// limit.
	MaxBatchBytesInFlight int64
	// MaxWait caps the wait parameter of long-polling requests (GET /sessions/{id}/result?wait=, GET
	// /runner/runs?wait=, POST /runs?wait=, GET /sessions/{id}/events?wait=); a larger one is 400. It is
	// also the wait of a sync POST /runs that names none. Default 5m; keep [ClientConfig.MaxWait] equal.
	MaxWait time.Duration
	// PollWait is the wait of GET /runner/runs when the request names none. Default 30s (the
	// coordinator caps it at its poll timeout).
	PollWait time.Duration
	// Heartbeat is how often an idle event stream gets a ": heartbeat" comment. Default 15s.
	Heartbeat time.Duration
	// MaxLongPolls bounds the requests to long-polling routes (event streams, waits, sync runs, a
	// runner's poll, MCP: the routes whose [Route].LongPoll is set) that one credential may have open at
	// once — one bearer token, or with no authentication one client IP address (behind a proxy, the
	// proxy's). Every request to such a route counts while it is open, whether it waits or not; other
	// routes are not limited. One more is 429 too_many_long_polls with Retry-After. Default
	// [DefaultMaxLongPolls]; negative: no limit.
	MaxLongPolls int
	// MCP, when set, serves /mcp (an MCP streamable-HTTP handler, such as mcpserver.NewHandler) behind the
	// same authentication as the API: roles client and runner. Unset, /mcp is 404. It is a handler rather
	// than a dependency so that this package does not pull in the MCP SDK.
	MCP http.Handler
	// UI, when set, serves the dashboard under /ui/ (ui.NewHandler). Its pages are public — they hold no
	// data, and call this API with the token the person enters, with that token's rights. Unset, /ui/ is
	// 404. A handler for the same reason as MCP: programs that do not show it do not embed its files.
	UI http.Handler
	// Metrics, when set, serves GET /metrics (prommetrics' Handler) to the metrics role ([RoleMetrics]) and
	// admin. Unset, /metrics is 404. A handler, so that this package does not pull in Prometheus.
	Metrics http.Handler
	// AllowedOrigins are the web origins, besides the coordinator's own, whose pages a browser may let
	// call the API: "https://orchestrator.example.com" — scheme, host and port, as a browser's Origin header
	// names a page. A browser's request from any other origin is 403 origin_not_allowed (see "Browsers" in
	// the package documentation); requests that are not a browser's (curl, [Client], runners) are not
	// affected. The own origin is the one the request's Host names; modern browsers say "same-origin"
	// themselves (Sec-Fetch-Site), so a proxy that changes the Host header matters only to older ones — list
	// the dashboard's public origin here for them. The API sends no CORS headers: a page of an allowed
	// origin can make only the requests a browser sends without a preflight. Default: none.
	AllowedOrigins []string
	// AllowedHosts are the host names, besides localhost, names under .localhost and IP addresses, that a
	// request's Host header may name: "orchestrator.example.com", or "*.example.com" for every name under
	// example.com; ports do not matter. A request naming another host is 421 host_not_allowed — a web page
	// that points its own name at the coordinator's address (DNS rebinding) names its own. The check
	// applies to an open API (no Tokens, no Authenticator), whose only protection it is, and to every API
	// once AllowedHosts is set; never to GET /health and GET /ready. Default: none — an open API behind a
	// host name (a reverse proxy that keeps the Host, a container reached by its service name) needs its
	// name here; an API with tokens is not checked.
	AllowedHosts []string
	// Logger receives server errors (5xx) and panics. Default: discard.
	Logger *slog.Logger
}

// Validate reports a setting [NewHandler] cannot use: an entry of AllowedOrigins that is not an origin
// (scheme://host[:port]) or of AllowedHosts that is not a host name.
func (c Config) Validate() error {
	_, err := newBrowserGuard(c, false)
	return err
}

// DefaultMaxBodyBytes is the default of [Config.MaxBodyBytes].
const DefaultMaxBodyBytes = 2 << 20

// DefaultMaxBatchRuns is the default of [Config.MaxBatchRuns].
const DefaultMaxBatchRuns = 1000

// defaultMaxBatchBytes is the default of [Config.MaxBatchBytes].
const defaultMaxBatchBytes = 32 << 20

// reportEnvelopeBytes is the room a report needs beside its result: ids, status, an error message.
const reportEnvelopeBytes = 1 << 20

// resultRoutes carry a run's result: their bodies are bounded by [Config.MaxReportBytes].
var resultRoutes = map[string]bool{
	"POST /runner/runs/{id}/completed": true,
	"POST /runner/runs/{id}/failed":    true,
	"POST /runner/runs/{id}/stopped":   true,
	"POST /runner/reports":             true,
}

// withReportLimit sets MaxReportBytes after the coordinator's result limit, and returns the largest
// result a runner may send within both (what registrations announce).
func (c Config) withReportLimit(coord orchestrator.Coordinator) (Config, int64) {
	resultLimit := int64(orchestrator.Limits{}.WithDefaults().MaxResultBytes)
	if l, ok := coord.(interface{ Limits() orchestrator.Limits }); ok && l.Limits().MaxResultBytes > 0 {
		resultLimit = int64(l.Limits().MaxResultBytes)
	}
	if c.MaxReportBytes <= 0 {
		c.MaxReportBytes = 2*resultLimit + reportEnvelopeBytes
	}
	c.MaxReportBytes = max(c.MaxReportBytes, c.MaxBodyBytes)
	return c, min(resultLimit, c.MaxReportBytes-min(reportEnvelopeBytes, c.MaxReportBytes/2))
}

// DefaultMaxWait is the default of [Config.MaxWait] and [ClientConfig.MaxWait].
const DefaultMaxWait = 5 * time.Minute

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxBatchRuns <= 0 {
		c.MaxBatchRuns = DefaultMaxBatchRuns
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = defaultMaxBatchBytes
	}
	c.MaxBatchBytes = max(c.MaxBatchBytes, c.MaxBodyBytes)
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.PollWait <= 0 {
		c.PollWait = 30 * time.Second
	}
	c.PollWait = min(c.PollWait, c.MaxWait)
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.MaxLongPolls == 0 {
		c.MaxLongPolls = DefaultMaxLongPolls
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

type server struct {
	coord orchestrator.Coordinator
	cfg   Config
	log   *slog.Logger
	polls *longPolls // nil: no limit
	// inflight bounds the large-body routes' bytes in flight (nil: no limit).
	inflight *bytesInFlight
	// maxResult is the largest result, as JSON, a registering runner is told it may report.
	maxResult int64
	browser   *browserGuard
}

// NewHandler returns the coordinator's HTTP API over coord (docs/http-api.md): agents, runs, sessions, events
// (paged, long-polled, or streamed as Server-Sent Events), runners, and the /runner/* endpoints runners
// call. Every route enforces its roles ([Routes]). Every error is a JSON body {"error": code, "message":
// text, …details} with a status from the error's kind; unknown routes are 404 and wrong methods 405, in
// the same shape. It panics if cfg.Validate fails.
func NewHandler(coord orchestrator.Coordinator, cfg Config) http.Handler {
	cfg, maxResult := cfg.withDefaults().withReportLimit(coord)
	guard, err := newBrowserGuard(cfg, cfg.Authenticator == nil && len(cfg.Tokens) == 0)
	if err != nil {
		panic(err)
	}
	if cfg.Authenticator == nil && len(cfg.Tokens) > 0 {
		ta := NewTokenAuth(cfg.Tokens)
		ta.runners, _ = coord.(RunnerVerifier)
		cfg.Authenticator = ta
	}
	s := &server{coord: &runnerScoped{inner: coord}, cfg: cfg, log: cfg.Logger, maxResult: maxResult, browser: guard}
	if cfg.MaxLongPolls > 0 {
		s.polls = &longPolls{max: cfg.MaxLongPolls, n: map[string]int{}}
	}
	if cfg.MaxBatchBytesInFlight == 0 {
		cfg.MaxBatchBytesInFlight = DefaultMaxBatchBytesInFlight
	}
	if cfg.MaxBatchBytesInFlight > 0 {
		cfg.MaxBatchBytesInFlight = max(cfg.MaxBatchBytesInFlight, cfg.MaxBatchBytes, cfg.MaxReportBytes)
	}
	s.cfg.MaxBatchBytesInFlight = cfg.MaxBatchBytesInFlight
	s.inflight = newBytesInFlight(cfg.MaxBatchBytesInFlight)
	mux := http.NewServeMux()
	for _, rd := range routeTable {
		mux.Handle(rd.Method+" "+rd.Pattern, s.wrap(rd))
	}
	return &root{mux: mux, s: s}
}

// root turns the mux's plain-text 404 and 405 answers into JSON errors and recovers panics.
type root struct {
	mux *http.ServeMux
	s   *server
}

func (h *root) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			writeError(w, r, h.s.log, fmt.Errorf("panic: %v", p))
		}
	}()
	handler, pattern := h.mux.Handler(r)
	if pattern != "" {
		// A W3C traceparent starts or continues the trace of what the request causes (a run's spans).
		if r.Header.Get(traces.Header) != "" {
			r = r.WithContext(traces.FromHeader(r.Context(), r.Header))
		}
		h.mux.ServeHTTP(w, r) // ServeHTTP, not handler: it sets the path values
		return
	}
	// No route: let the mux answer into a capture, then say the same thing in JSON.
	c := &capture{header: http.Header{}}
	handler.ServeHTTP(c, r)
	switch c.status {
	case http.StatusNotFound:
		writeError(w, r, h.s.log, orchestrator.Errorf(orchestrator.ErrNotFound, "route_not_found", "no route %s %s", r.Method, r.URL.Path))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", c.header.Get("Allow"))
		writeErrorStatus(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, c.header.Get("Allow")), nil)
	default: // a redirect to the cleaned path, say
		for k, v := range c.header {
			if k != "Content-Type" && k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(c.status)
	}
}

type capture struct {
	header http.Header
	status int
}

func (c *capture) Header() http.Header { return c.header }
func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}
func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (s *server) wrap(rd routeDef) http.Handler {
	limit := s.cfg.MaxBodyBytes
	if resultRoutes[rd.String()] {
		limit = s.cfg.MaxReportBytes
	}
	if rd.String() == "POST /runs" { // a fan-out; startRun holds a single run to MaxBodyBytes
		limit = s.cfg.MaxBatchBytes
	}
	large := resultRoutes[rd.String()] || rd.String() == "POST /runs"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A web page's request is refused before anything else: it learns nothing, not even whether a
		// token would be accepted.
		if s.browser.check(w, r, rd) {
			return
		}
		if !rd.Public && s.cfg.Authenticator != nil {
			ar, err := s.cfg.Authenticator.Authenticate(r, rd.Route)
			if err != nil {
				writeError(w, r, s.log, err)
				return
			}
			r = ar
		}
		if checkMediaType(w, r, rd) {
			return
		}
		if err := checkRequestText(r); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if rd.LongPoll && s.polls != nil {
			release, ok := s.polls.acquire(s.credential(r))
			if !ok {
				s.polls.writeTooMany(w)
				return
			}
			defer release()
		}
		if large && s.inflight != nil && r.Body != nil && r.Body != http.NoBody {
			release, ok := s.inflight.admit(w, r, limit)
			if !ok {
				return
			}
			defer release()
		}
		// An upload (RawBody) streams to its destination, which holds it to its own limit.
		if r.Body != nil && !rd.RawBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if err := rd.h(s, w, r); err != nil {
			writeError(w, r, s.log, err)
		}
	})
}

// extendWriteDeadline keeps a server's WriteTimeout from cutting a long poll short: the response may be
// written up to wait (plus a margin) from now. Writers that do not support deadlines are left alone.
func extendWriteDeadline(w http.ResponseWriter, wait time.Duration) {
	if wait <= 0 {
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 30*time.Second))
}

// isGone reports whether err is only the caller having gone away (nothing left to answer).
func isGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// mcp hands /mcp to the configured MCP handler. Tool calls may wait as long as a sync session runs, so
// the write deadline is lifted.
func (s *server) mcp(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.MCP == nil {
		return orchestrator.Errorf(orchestrator.ErrNotFound, "mcp_not_enabled", "this coordinator does not serve MCP")
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if r.Method == http.MethodPost {
		// The MCP server decodes the body itself: check its text here, as readBody does for the API's.
		body, err := readBody(r)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.cfg.MCP.ServeHTTP(w, r)
	return nil
}

// ui hands /ui/ to the configured dashboard.
func (s *server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Metrics == nil {
		return orchestrator.Errorf(orchestrator.ErrNotFound, "metrics_not_enabled", "this coordinator does not serve metrics")
	}
	s.cfg.Metrics.ServeHTTP(w, r)
	return nil
}

func (s *server) ui(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.UI == nil {
		return orchestrator.Errorf(orchestrator.ErrNotFound, "ui_not_enabled", "this coordinator does not serve the dashboard")
	}
	s.cfg.UI.ServeHTTP(w, r)
	return nil
}

// ready serves GET /ready, the readiness check: 503 not_ready while the coordinator's store cannot write
// (see [store.WriteChecker]; a coordinator without the check is always ready). GET /health is the
// liveness check: it answers as long as the process serves.
func (s *server) ready(w http.ResponseWriter, r *http.Request) error {
	if wc, ok := s.coord.(store.WriteChecker); ok {
		if err := wc.CheckWrite(r.Context()); err != nil {
			if isGone(r, err) {
				return nil
			}
			s.log.Warn("not ready: the store cannot write", "err", err)
			writeErrorStatus(w, http.StatusServiceUnavailable, "not_ready", "the store cannot write", nil)
			return nil
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
