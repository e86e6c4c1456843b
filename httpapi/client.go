package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// ClientConfig configures a [Client]. The zero value is ready to use against an open coordinator.
type ClientConfig struct {
	// Token is sent as "Authorization: Bearer <Token>".
	Token string
	// Header is added to every request (for example X-Agent-Session-Id, see [HeaderSessionID]).
	Header http.Header
	// RetryMax is how many times a failed request is retried (connection errors, 429, 5xx). Default 4;
	// negative means never. Requests that are not safe to repeat (POST /runs, POST /agents, POST events)
	// are retried only when they cannot have reached the coordinator: the connection failed, or the answer
	// was 429 or 503.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the linear, jittered backoff between retries. Defaults 200ms and 5s.
	RetryWaitMin, RetryWaitMax time.Duration
	// Timeout bounds a request, retries included. Long polls get their wait plus LongPollGrace instead.
	// Default 30s.
	Timeout time.Duration
	// LongPollGrace is added to a long poll's wait to make its timeout. Default 15s.
	LongPollGrace time.Duration
	// MaxWait is the longest wait one request asks the coordinator for; keep it equal to the handler's
	// [Config.MaxWait]. Longer waits (WaitSession, ListEvents, a sync StartRun) are made of several
	// requests. Default 5m.
	MaxWait time.Duration
	// MaxResponseBytes bounds a response body. Default 64 MiB.
	MaxResponseBytes int64
	// HTTPClient is the underlying client. Default: a pooled client without an overall timeout (the
	// per-request timeouts above apply).
	HTTPClient *http.Client
	// Logger receives retry messages. Default: discard.
	Logger *slog.Logger
	// UserAgent defaults to "agent-orchestrator-go".
	UserAgent string
}

// Client is an [orchestrator.Coordinator] on a remote coordinator's HTTP API: a runner or a tool works the
// same with a Client as with an in-process LocalCoordinator. Errors come back as the coordinator made them
// — errors.Is(err, orchestrator.ErrNotFound), errors.As(err, **orchestrator.ValidationError) — and a
// coordinator fault is an error of kind [ErrServer].
//
// A Client pointed at a runner's gateway (AGENT_ORCHESTRATOR_API_URL, with AGENT_ORCHESTRATOR_TOKEN) gives
// an executor's process the subset of calls the gateway allows, with the same code.
type Client struct {
	base string
	cfg  ClientConfig
	hc   *retryablehttp.Client
}

var _ orchestrator.Coordinator = (*Client)(nil)

// NewClient returns a client for the coordinator at baseURL ("http://127.0.0.1:8765"; a path prefix is
// kept).
func NewClient(baseURL string, cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpapi: base URL %q must be an absolute http or https URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("httpapi: base URL %q must not have a query or fragment", baseURL)
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 4
	}
	if cfg.RetryMax < 0 {
		cfg.RetryMax = 0
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.RetryWaitMin, 200*time.Millisecond)
	def(&cfg.RetryWaitMax, 5*time.Second)
	def(&cfg.Timeout, 30*time.Second)
	def(&cfg.LongPollGrace, 15*time.Second)
	def(&cfg.MaxWait, DefaultMaxWait)
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "agent-orchestrator-go"
	}
	hc := retryablehttp.NewClient()
	if cfg.HTTPClient != nil {
		hc.HTTPClient = cfg.HTTPClient
	}
	hc.Logger = cfg.Logger
	hc.RetryMax = cfg.RetryMax
	hc.RetryWaitMin, hc.RetryWaitMax = cfg.RetryWaitMin, cfg.RetryWaitMax
	hc.Backoff = retryablehttp.LinearJitterBackoff
	hc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	hc.CheckRetry = checkRetry
	return &Client{base: strings.TrimRight(u.String(), "/"), cfg: cfg, hc: hc}, nil
}

type unsafeKey struct{}

// checkRetry is retryablehttp's default policy, except for requests that must not run twice: those are
// retried only when they cannot have reached the coordinator.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if ctx.Value(unsafeKey{}) == nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	if err != nil {
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "dial", nil
	}
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable, nil
}

// call describes one request.
type call struct {
	method, path string
	query        url.Values
	body         any
	// wait > 0 marks a long poll: its timeout is wait + LongPollGrace.
	wait time.Duration
	// unsafe requests are not repeated once they may have reached the server.
	unsafe bool
}

// do performs c and decodes a 2xx body into out (unless out is nil or the status is 204). It returns the
// status.
func (c *Client) do(ctx context.Context, cl call, out any) (int, error) {
	var body []byte
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return 0, fmt.Errorf("httpapi: encode request: %w", err)
		}
		body = b
	}
	timeout := c.cfg.Timeout
	if cl.wait > 0 {
		timeout = cl.wait + c.cfg.LongPollGrace
	}
	callerCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cl.unsafe {
		ctx = context.WithValue(ctx, unsafeKey{}, true)
	}
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var raw any
	if body != nil {
		raw = body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, cl.method, u, raw)
	if err != nil {
		return 0, fmt.Errorf("httpapi: %w", err)
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		if callerCtx.Err() != nil {
			return 0, fmt.Errorf("httpapi: %s %s: %w", cl.method, cl.path, err)
		}
		return 0, &transportError{op: cl.method + " " + cl.path, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("httpapi: %s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return resp.StatusCode, &orchestrator.Error{Kind: ErrServer, Code: "response_too_large",
			Message: fmt.Sprintf("%s %s: the answer exceeds %d bytes", cl.method, cl.path, c.cfg.MaxResponseBytes)}
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, decodeError(resp.StatusCode, http.StatusText(resp.StatusCode), data)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, &orchestrator.Error{Kind: ErrServer, Code: "invalid_response",
				Message: fmt.Sprintf("%s %s: cannot read the answer: %v", cl.method, cl.path, err)}
		}
	}
	return resp.StatusCode, nil
}

// transportError is a request that got no answer: it matches ErrServer and the cause (a dial error,
// context.DeadlineExceeded when the request's own timeout passed).
type transportError struct {
	op  string
	err error
}

func (e *transportError) Error() string   { return "httpapi: " + e.op + ": " + e.err.Error() }
func (e *transportError) Unwrap() []error { return []error{ErrServer, e.err} }

func seg(s string) string { return url.PathEscape(s) }

// ListAgents implements [orchestrator.Coordinator].
func (c *Client) ListAgents(ctx context.Context, p orchestrator.ListAgentsParams) ([]*orchestrator.AgentInfo, error) {
	q := url.Values{}
	if len(p.Tags) > 0 {
		q.Set("tags", strings.Join(p.Tags, ","))
	}
	if p.Type != "" {
		q.Set("type", string(p.Type))
	}
	var out agentList
	if _, err := c.do(ctx, call{method: "GET", path: "/agents", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Agents, nil
}

// GetAgent implements [orchestrator.Coordinator].
func (c *Client) GetAgent(ctx context.Context, name string) (*orchestrator.AgentInfo, error) {
	var out orchestrator.AgentInfo
	if _, err := c.do(ctx, call{method: "GET", path: "/agents/" + seg(name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateAgent implements [orchestrator.Coordinator].
func (c *Client) CreateAgent(ctx context.Context, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	var out orchestrator.AgentInfo
	if _, err := c.do(ctx, call{method: "POST", path: "/agents", body: b, unsafe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateAgent implements [orchestrator.Coordinator].
func (c *Client) UpdateAgent(ctx context.Context, name string, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	var out orchestrator.AgentInfo
	if _, err := c.do(ctx, call{method: "PUT", path: "/agents/" + seg(name), body: b}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteAgent implements [orchestrator.Coordinator].
func (c *Client) DeleteAgent(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/agents/" + seg(name)}, nil)
	return err
}

// StartRun implements [orchestrator.Coordinator]. A sync run whose Wait exceeds MaxWait waits the rest
// with WaitSession.
func (c *Client) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	cl := call{method: "POST", path: "/runs", body: p, unsafe: true}
	start := time.Now()
	if p.Mode == orchestrator.ModeSync {
		cl.wait = c.cfg.MaxWait
		if p.Wait > 0 {
			cl.wait = min(p.Wait, c.cfg.MaxWait)
		}
		cl.query = url.Values{"wait": {formatWait(cl.wait)}}
	}
	var out orchestrator.StartRunResult
	if _, err := c.do(ctx, cl, &out); err != nil {
		return nil, err
	}
	if p.Mode == orchestrator.ModeSync && !out.Status.Ended() && p.Wait > c.cfg.MaxWait {
		if rest := p.Wait - time.Since(start); rest > 0 {
			s, err := c.WaitSession(ctx, out.SessionID, rest)
			if err != nil {
				return nil, err
			}
			out.Status = s.Status
			if s.Status.Ended() {
				out.Result, out.Error = s.Result, s.Error
			}
		}
	}
	return &out, nil
}

// GetRun implements [orchestrator.Coordinator].
func (c *Client) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	var out orchestrator.Run
	if _, err := c.do(ctx, call{method: "GET", path: "/runs/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRuns implements [orchestrator.Coordinator].
func (c *Client) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	q := url.Values{}
	if len(f.Statuses) > 0 {
		st := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			st[i] = string(s)
		}
		q.Set("status", strings.Join(st, ","))
	}
	setq(q, "session_id", f.SessionID)
	setq(q, "runner_id", f.RunnerID)
	setq(q, "demand_runner_id", f.DemandRunnerID)
	setq(q, "agent_name", f.AgentName)
	setq(q, "after", f.AfterID)
	if !f.CreatedBefore.IsZero() {
		q.Set("created_before", f.CreatedBefore.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out RunList
	if _, err := c.do(ctx, call{method: "GET", path: "/runs", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Runs, nil
}

func setq(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// StopRun implements [orchestrator.Coordinator].
func (c *Client) StopRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	var out orchestrator.Run
	if _, err := c.do(ctx, call{method: "POST", path: "/runs/" + seg(id) + "/stop"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSession implements [orchestrator.Coordinator].
func (c *Client) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	var out orchestrator.Session
	if _, err := c.do(ctx, call{method: "GET", path: "/sessions/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSessions implements [orchestrator.Coordinator].
func (c *Client) ListSessions(ctx context.Context, f orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	q := url.Values{}
	if len(f.Statuses) > 0 {
		st := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			st[i] = string(s)
		}
		q.Set("status", strings.Join(st, ","))
	}
	setq(q, "agent_name", f.AgentName)
	setq(q, "parent_session_id", f.ParentSessionID)
	setq(q, "cursor", f.AfterID)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if !f.EndedBefore.IsZero() {
		q.Set("ended_before", f.EndedBefore.UTC().Format(time.RFC3339Nano))
	}
	var out orchestrator.SessionPage
	if _, err := c.do(ctx, call{method: "GET", path: "/sessions", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WaitSession implements [orchestrator.Coordinator] with GET /sessions/{id}?wait=, repeated while the
// wait exceeds MaxWait.
func (c *Client) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	deadline := time.Now().Add(wait)
	for {
		chunk := min(time.Until(deadline), c.cfg.MaxWait)
		cl := call{method: "GET", path: "/sessions/" + seg(id)}
		if chunk > 0 {
			cl.wait = chunk
			cl.query = url.Values{"wait": {formatWait(chunk)}}
		}
		var out orchestrator.Session
		if _, err := c.do(ctx, cl, &out); err != nil {
			return nil, err
		}
		if out.Status.Ended() || time.Until(deadline) <= 0 {
			return &out, nil
		}
	}
}

// StopSession implements [orchestrator.Coordinator].
func (c *Client) StopSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	var out orchestrator.Session
	if _, err := c.do(ctx, call{method: "POST", path: "/sessions/" + seg(id) + "/stop"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSession implements [orchestrator.Coordinator].
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/sessions/" + seg(id)}, nil)
	return err
}

// ListEvents implements [orchestrator.Coordinator] with GET /sessions/{id}/events, repeated while the wait
// exceeds MaxWait and nothing came.
func (c *Client) ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*orchestrator.Event, error) {
	deadline := time.Now().Add(wait)
	for {
		q := url.Values{"after": {strconv.FormatInt(after, 10)}}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		cl := call{method: "GET", path: "/sessions/" + seg(sessionID) + "/events", query: q}
		if chunk := min(time.Until(deadline), c.cfg.MaxWait); wait > 0 && chunk > 0 {
			cl.wait = chunk
			q.Set("wait", formatWait(chunk))
		}
		var out EventPage
		if _, err := c.do(ctx, cl, &out); err != nil {
			return nil, err
		}
		if len(out.Events) > 0 || wait <= 0 || time.Until(deadline) <= 0 {
			return out.Events, nil
		}
	}
}

// AppendEvents implements [orchestrator.Coordinator].
func (c *Client) AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error) {
	var out AppendedEvents
	cl := call{method: "POST", path: "/sessions/" + seg(sessionID) + "/events",
		body: map[string]any{"events": events}, unsafe: true}
	if _, err := c.do(ctx, cl, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// RegisterRunner implements [orchestrator.Coordinator]. It is safe to retry: the runner id is stable and
// a repeated registration replaces the first.
func (c *Client) RegisterRunner(ctx context.Context, r *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	var out orchestrator.Registration
	if _, err := c.do(ctx, call{method: "POST", path: "/runner/register", body: r}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Heartbeat implements [orchestrator.Coordinator].
func (c *Client) Heartbeat(ctx context.Context, runnerID string) error {
	_, err := c.do(ctx, call{method: "POST", path: "/runner/heartbeat", body: runnerRef{runnerID}}, nil)
	return err
}

// PollWork implements [orchestrator.Coordinator] with GET /runner/runs (204 is an empty Work). The wait is
// capped at MaxWait.
func (c *Client) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	wait := min(max(p.Wait, 0), c.cfg.MaxWait)
	q := url.Values{
		"runner_id": {p.RunnerID},
		"max":       {strconv.Itoa(p.Max)},
		"wait":      {formatWait(wait)},
	}
	out := &orchestrator.Work{}
	if _, err := c.do(ctx, call{method: "GET", path: "/runner/runs", query: q, wait: wait}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReportRun implements [orchestrator.Coordinator]. Reports are idempotent on the coordinator, so they are
// retried like any safe request.
func (c *Client) ReportRun(ctx context.Context, r orchestrator.RunReport) error {
	action, ok := reportPath(r.Status)
	if !ok {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"status must be running, completed, failed or stopped, not %q", r.Status)
	}
	if r.RunID == "" {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "runner_id and run_id are required")
	}
	body := reportBody{RunnerID: r.RunnerID, RunID: r.RunID, Result: r.Result, Error: r.Error}
	_, err := c.do(ctx, call{method: "POST", path: "/runner/runs/" + seg(r.RunID) + "/" + action, body: body}, nil)
	return err
}

// DeregisterRunner implements [orchestrator.Coordinator] with DELETE /runner/{id}.
func (c *Client) DeregisterRunner(ctx context.Context, runnerID string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/runner/" + seg(runnerID)}, nil)
	return err
}

// ListRunners implements [orchestrator.Coordinator].
func (c *Client) ListRunners(ctx context.Context) ([]*orchestrator.RunnerInfo, error) {
	var out RunnerList
	if _, err := c.do(ctx, call{method: "GET", path: "/runners"}, &out); err != nil {
		return nil, err
	}
	return out.Runners, nil
}
