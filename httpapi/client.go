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
	"sync/atomic"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"

	"github.com/hashicorp/go-retryablehttp"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// ClientConfig configures a [Client]. The zero value is ready to use against an open coordinator.
type ClientConfig struct {
	// Token is sent as "Authorization: Bearer <Token>".
	Token string
	// Header is added to every request (for example X-Agent-Session-Id, see [HeaderSessionID]).
	Header http.Header
	// RetryMax is how many times a failed request is retried (connection errors, 429, 5xx). Default 4;
	// negative means never. Requests that are not safe to repeat (POST /agents, POST events; POST /runs is,
	// as StartRun gives each create an idempotency key)
	// are retried only when they cannot have reached the coordinator: the connection failed, or the answer
	// was 429 or 503.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the linear, jittered backoff between retries (a Retry-After
	// answer on 429 or 503 is honoured even when longer). Defaults 200ms and 5s.
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
	// per-request timeouts above apply) that keeps up to 64 idle connections per coordinator.
	HTTPClient *http.Client
	// Logger receives retry messages. Default: discard.
	Logger *slog.Logger
	// UserAgent defaults to "agent-orchestrator-go".
	UserAgent string
}

// Client is an [orchestrator.Coordinator] on a remote coordinator's HTTP API: a runner or a tool works the
// same with a Client as with an in-process coordinator.Coordinator. Errors come back as the coordinator
// made them — errors.Is(err, orchestrator.ErrNotFound), errors.As(err, **orchestrator.ValidationError) —
// and a coordinator fault is an error of kind [ErrServer].
//
// A Client pointed at a runner's gateway (AGENT_ORCHESTRATOR_API_URL, with AGENT_ORCHESTRATOR_TOKEN) gives
// an executor's process the subset of calls the gateway allows, with the same code.
//
// # Several coordinators
//
// Coordinator replicas that share one PostgreSQL store serve the same API, and a Client may be given all
// of them (see [NewClient]). Requests go to the current URL. When it gives no answer at all — the
// connection is refused, reset or closed before a response (a coordinator that died or restarts) — the
// Client makes the next URL current and repeats the request there at once, as long as repeating is safe:
// every request that cannot have reached the coordinator (a failed dial), and every request that is safe
// to repeat anyway (reads, long polls, heartbeats, reports, registrations). A request that is not safe to
// repeat (POST /runs, POST /agents, POST events) and may have reached the dead coordinator returns its
// error, and the next call goes to the new URL. An HTTP answer, even a 5xx, comes from a live coordinator
// and never causes a switch; it is retried on the same URL like any answer. The Client stays on the new
// URL until that one fails in turn (then it moves on, round-robin). A switch to a URL this request has not
// tried yet does not wait and does not count against RetryMax.
//
// A runner given every replica's URL therefore keeps working through another replica when one dies: its
// registration and its runs live in the shared store. A replica that hangs without closing connections is
// noticed when a request's timeout passes (Timeout, or a long poll's wait plus LongPollGrace): that request
// fails, and the next one goes to the next URL.
//
// # Runners
//
// A Client that registered a runner ([Client.RegisterRunner]) acts as that runner from then on: every
// later call it makes — heartbeats, polls, reports, deregistration, and what the runner's gateway forwards
// for its executors — carries the runner's own credential ([RunnerCredential]) instead of
// ClientConfig.Token, which then serves only registrations (POST /runner/register: the runner token may do
// nothing else). Registering again presents the runner's secret (RunnerRegistration.RunnerSecret, which
// runner.Runner fills in). A Client acts as one runner, the last one it registered: give each
// runner a Client of its own. Against a coordinator whose registrations return no secret, the Client
// goes on with ClientConfig.Token.
type Client struct {
	bases []string // without trailing slash
	// base is bases joined with commas: the normalised form of NewClient's argument.
	base string
	cur  atomic.Int32
	cfg  ClientConfig
	// hc is the underlying HTTP client, shared by the per-request retryablehttp clients.
	hc *http.Client
	// noBatch is set once a coordinator turned out not to serve POST /runner/reports.
	noBatch atomic.Bool
	// runner is the credential of the runner this Client registered, nil before a registration.
	runner atomic.Pointer[string]
}

var (
	_ orchestrator.Coordinator   = (*Client)(nil)
	_ orchestrator.BatchStarter  = (*Client)(nil)
	_ orchestrator.BatchReporter = (*Client)(nil)
)

// NewClient returns a client for the coordinator at baseURL ("http://127.0.0.1:8765"; a path prefix is
// kept). baseURL may name several coordinators sharing one store, separated by commas
// ("http://a:8765,http://b:8765"): see "Several coordinators" above. The first one is current at first.
func NewClient(baseURL string, cfg ClientConfig) (*Client, error) {
	var bases []string
	for _, one := range strings.Split(baseURL, ",") {
		one = strings.TrimSpace(one)
		u, err := url.Parse(one)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("httpapi: base URL %q must be an absolute http or https URL", RedactURL(one))
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("httpapi: base URL %q must not have a query or fragment", RedactURL(one))
		}
		bases = append(bases, strings.TrimRight(u.String(), "/"))
	}
	if len(bases) > 64 {
		return nil, fmt.Errorf("httpapi: %d base URLs; at most 64", len(bases))
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
	hc := cfg.HTTPClient
	if hc == nil {
		hc = retryablehttp.NewClient().HTTPClient // a pooled client without an overall timeout
		if t, ok := hc.Transport.(*http.Transport); ok {
			// A runner reports up to MaxConcurrent runs at once and a tool may call from many goroutines:
			// keep their connections (the pooled default keeps GOMAXPROCS+1 per host and closes the rest).
			t.MaxIdleConnsPerHost = 64
		}
	}
	return &Client{bases: bases, base: strings.Join(bases, ","), cfg: cfg, hc: hc}, nil
}

// URL returns the base URL requests currently go to.
func (c *Client) URL() string { return c.bases[c.cur.Load()] }

// RedactURL returns rawURL — a base URL, or several separated by commas, as [NewClient] takes them — with
// each password replaced by "xxxxx" (url.URL.Redacted), for messages and logs that name a coordinator.
// A URL that does not parse is redacted by its shape: the part of its authority between the first ":"
// and the last "@".
func RedactURL(rawURL string) string {
	parts := strings.Split(rawURL, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
			continue
		}
		authority := p
		if _, rest, ok := strings.Cut(p, "://"); ok {
			authority = rest
		}
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority = authority[:end]
		}
		at := strings.LastIndex(authority, "@")
		if at < 0 {
			continue
		}
		userinfo := authority[:at]
		if user, _, ok := strings.Cut(userinfo, ":"); ok {
			parts[i] = strings.Replace(p, userinfo+"@", user+":xxxxx@", 1)
		}
	}
	return strings.Join(parts, ",")
}

// failedOver is called when the coordinator at bases[idx] gave no answer: unless another request moved
// on already, the next URL becomes current. It returns the current index.
func (c *Client) failedOver(idx int, err error) int {
	if len(c.bases) > 1 {
		next := (idx + 1) % len(c.bases)
		if c.cur.CompareAndSwap(int32(idx), int32(next)) {
			c.cfg.Logger.Warn("coordinator unreachable; switching to the next URL",
				"from", RedactURL(c.bases[idx]), "to", RedactURL(c.bases[next]), "err", err)
		}
	}
	return int(c.cur.Load())
}

// retryLogger hands retryablehttp's per-attempt messages ("request failed", "retrying request") to the
// log at debug level: a failed attempt is not yet a failed call, and the caller, which sees the call's
// outcome, decides what is worth a warning (a runner logs one line when the coordinator goes away and one
// when it is back, not an error per attempt).
type retryLogger struct{ log *slog.Logger }

func (l retryLogger) Error(msg string, kv ...any) { l.log.Debug(msg, kv...) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.log.Debug(msg, kv...) }
func (l retryLogger) Info(msg string, kv ...any)  { l.log.Debug(msg, kv...) }
func (l retryLogger) Debug(msg string, kv ...any) { l.log.Debug(msg, kv...) }

// attempt is the state of one request across its retries: which URL it used and which it tried.
type attempt struct {
	c *Client
	// rest is the request's path and query, appended to a base URL.
	rest   string
	unsafe bool
	idx    int    // the base URL of the current try
	tried  uint64 // bit i: bases[i] was tried
	// retries counts the retries that were not switches (bounded by RetryMax).
	retries int
	// now tells Backoff to retry at once (a switch to a URL not tried yet).
	now bool
}

// retrier returns the retryablehttp client of one request.
func (a *attempt) retrier() *retryablehttp.Client {
	c := a.c
	return &retryablehttp.Client{
		HTTPClient:   c.hc,
		Logger:       retryLogger{c.cfg.Logger},
		RetryWaitMin: c.cfg.RetryWaitMin,
		RetryWaitMax: c.cfg.RetryWaitMax,
		// Switches to URLs not tried yet are extra tries.
		RetryMax:     c.cfg.RetryMax + len(c.bases) - 1,
		CheckRetry:   a.checkRetry,
		Backoff:      a.backoff,
		PrepareRetry: a.prepareRetry,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
}

// checkRetry is retryablehttp's default policy, except that a request that must not run twice is retried
// only when it cannot have reached the coordinator, and that a coordinator that gives no answer makes the
// next URL current.
func (a *attempt) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	a.now = false
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	retry := false
	switch {
	case err != nil:
		// No answer. Errors that no URL would cure (a bad certificate, a bad scheme) are not retried.
		if ok, _ := retryablehttp.DefaultRetryPolicy(ctx, nil, err); !ok {
			return false, nil
		}
		var op *net.OpError
		dial := errors.As(err, &op) && op.Op == "dial"
		next := a.c.failedOver(a.idx, err)
		if a.unsafe && !dial {
			return false, nil
		}
		if next != a.idx && a.tried&(1<<next) == 0 {
			a.now = true
			return true, nil // a switch: not counted
		}
		retry = true
	case !a.unsafe:
		retry, _ = retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	default:
		retry = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
	}
	if !retry || a.retries >= a.c.cfg.RetryMax {
		return false, nil
	}
	a.retries++
	return true, nil
}

func (a *attempt) backoff(lo, hi time.Duration, n int, resp *http.Response) time.Duration {
	if a.now {
		return 0
	}
	// retryablehttp's linear jitter multiplies by the attempt number, which would let the wait grow far
	// past max (a restarted coordinator would find its runners asleep for tens of seconds): cap it, unless
	// the server asked for a longer wait with Retry-After.
	d := retryablehttp.RateLimitLinearJitterBackoff(lo, hi, n, resp)
	if resp == nil || resp.Header.Get("Retry-After") == "" {
		d = min(d, hi)
	}
	return d
}

// prepareRetry points the retry at the current URL (another request may have switched it too).
func (a *attempt) prepareRetry(req *http.Request) error {
	a.idx = int(a.c.cur.Load())
	a.tried |= 1 << a.idx
	u, err := url.Parse(a.c.bases[a.idx] + a.rest)
	if err != nil {
		return err
	}
	req.URL, req.Host = u, u.Host
	return nil
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
	// register marks a registration: it carries ClientConfig.Token even once the Client has a runner's
	// credential.
	register bool
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
	a := &attempt{c: c, rest: cl.path, unsafe: cl.unsafe, idx: int(c.cur.Load())}
	a.tried = 1 << a.idx
	if len(cl.query) > 0 {
		a.rest += "?" + cl.query.Encode()
	}
	var raw any
	if body != nil {
		raw = body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, cl.method, c.bases[a.idx]+a.rest, raw)
	if err != nil {
		return 0, fmt.Errorf("httpapi: %w", err)
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	traces.ToHeader(ctx, req.Header) // the caller's trace goes on at the coordinator
	token := c.cfg.Token
	if cred := c.runner.Load(); cred != nil && !cl.register {
		token = *cred
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := a.retrier().Do(req)
	if err != nil {
		if callerCtx.Err() != nil {
			return 0, fmt.Errorf("httpapi: %s %s: %w", cl.method, cl.path, err)
		}
		if ctx.Err() != nil {
			c.failedOver(a.idx, err) // no answer within the request's timeout: a hung coordinator
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
// with WaitRun.
func (c *Client) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	if p.Mode == "resume" && p.Wait > 0 && (p.Type == "" || p.Type == orchestrator.RunTypeResume) {
		// The legacy spelling of a resume that waits, as the in-process coordinator reads it.
		p.Type, p.Mode = orchestrator.RunTypeResume, orchestrator.ModeSync
	}
	// Every create carries an idempotency key, so that a retry after a lost answer returns the run the
	// first try started instead of starting another: the request is safe to repeat.
	if p.IdempotencyKey == "" {
		p.IdempotencyKey = ids.New("idem_")
	}
	body := runRequest{StartRunParams: p}
	if p.Delay > 0 {
		body.Delay = p.Delay.String()
	}
	cl := call{method: "POST", path: "/runs", body: body}
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
			// The run, not the session: a callback may resume the session the moment the run ends.
			res, err := c.WaitRun(ctx, out.RunID, rest)
			if err != nil {
				return nil, err
			}
			res.Replayed = out.Replayed
			return res, nil
		}
	}
	return &out, nil
}

// StartRuns starts a fan-out in one request (POST /runs with {"runs": [...]}): all the runs, or none and
// an ErrInvalid error (code invalid_runs) whose "items" detail lists each invalid run's index and error.
// More runs than the server's Config.MaxBatchRuns, or a body past its Config.MaxBatchBytes, is
// ErrTooLarge; the client does not split a batch, which would give up all or none.
func (c *Client) StartRuns(ctx context.Context, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	body := runBatch{Runs: make([]runRequest, len(ps))}
	for i, p := range ps {
		body.Runs[i] = runRequest{StartRunParams: p}
		if p.Delay > 0 {
			body.Runs[i].Delay = p.Delay.String()
		}
	}
	var out runBatchResult
	if _, err := c.do(ctx, call{method: "POST", path: "/runs", body: body, unsafe: true}, &out); err != nil {
		return nil, err
	}
	if len(out.Runs) != len(ps) {
		return nil, fmt.Errorf("httpapi: the coordinator answered %d runs for %d", len(out.Runs), len(ps))
	}
	return out.Runs, nil
}

// GetRun implements [orchestrator.Coordinator].
func (c *Client) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	var out orchestrator.Run
	if _, err := c.do(ctx, call{method: "GET", path: "/runs/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WaitRun implements [orchestrator.Coordinator] with GET /runs/{id}/result?wait=, repeated while the wait
// exceeds MaxWait.
func (c *Client) WaitRun(ctx context.Context, id string, wait time.Duration) (*orchestrator.StartRunResult, error) {
	return waitUntilEnded(ctx, c, "/runs/"+seg(id)+"/result", wait, func(r *orchestrator.StartRunResult) bool { return r.Status.Ended() })
}

// ListRuns implements [orchestrator.Coordinator].
func (c *Client) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	q := url.Values{}
	setq(q, "status", joinList(f.Statuses))
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
	var out runList
	if _, err := c.do(ctx, call{method: "GET", path: "/runs", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Runs, nil
}

// joinList renders a list filter as the API takes it: comma-separated.
func joinList[S ~string](list []S) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
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
	setq(q, "status", joinList(f.Statuses))
	setq(q, "agent_name", f.AgentName)
	setq(q, "parent_session_id", f.ParentSessionID)
	setq(q, "cursor", f.AfterID)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if !f.EndedBefore.IsZero() {
		q.Set("ended_before", f.EndedBefore.UTC().Format(time.RFC3339Nano))
	}
	if f.NewestFirst {
		q.Set("order", "newest")
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
	return waitUntilEnded(ctx, c, "/sessions/"+seg(id), wait, func(s *orchestrator.Session) bool { return s.Status.Ended() })
}

// waitUntilEnded long-polls path with ?wait= until ended says the answer is final or wait has elapsed,
// in requests of at most MaxWait each.
func waitUntilEnded[T any](ctx context.Context, c *Client, path string, wait time.Duration, ended func(*T) bool) (*T, error) {
	deadline := time.Now().Add(wait)
	for {
		chunk := min(time.Until(deadline), c.cfg.MaxWait)
		cl := call{method: "GET", path: path}
		if chunk > 0 {
			cl.wait = chunk
			cl.query = url.Values{"wait": {formatWait(chunk)}}
		}
		out := new(T)
		if _, err := c.do(ctx, cl, out); err != nil {
			return nil, err
		}
		if ended(out) || time.Until(deadline) <= 0 {
			return out, nil
		}
	}
}

// StopSession implements [orchestrator.Coordinator].
func (c *Client) StopSession(ctx context.Context, id string, opts ...orchestrator.StopOpts) (*orchestrator.Session, error) {
	var out orchestrator.Session
	cl := call{method: "POST", path: "/sessions/" + seg(id) + "/stop"}
	if len(opts) > 0 && opts[0].NoCascade {
		cl.query = url.Values{"cascade": {"false"}}
	}
	if _, err := c.do(ctx, cl, &out); err != nil {
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
		var out eventPage
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
	var out appendedEvents
	cl := call{method: "POST", path: "/sessions/" + seg(sessionID) + "/events",
		body: map[string]any{"events": events}, unsafe: true}
	if _, err := c.do(ctx, cl, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// RegisterRunner implements [orchestrator.Coordinator] with ClientConfig.Token; from then on the Client
// acts as the registered runner (see "Runners" under [Client]). It is retried like a safe request: a
// registration that presents the runner's secret may be repeated. A first registration (no secret yet)
// whose answer was lost is, when repeated, refused as runner_identity_in_use until the record it created
// goes offline; runner.Runner waits that out.
func (c *Client) RegisterRunner(ctx context.Context, r *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	var out orchestrator.Registration
	if _, err := c.do(ctx, call{method: "POST", path: "/runner/register", body: r, register: true}, &out); err != nil {
		return nil, err
	}
	if out.RunnerSecret != "" {
		cred := RunnerCredential(out.RunnerID, out.RunnerSecret)
		c.runner.Store(&cred)
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

// reportBatchBytes bounds the body of one POST /runner/reports, well under the handler's default
// MaxBodyBytes. A report larger than this goes on its own.
const reportBatchBytes = 1 << 20

// ReportRuns implements [orchestrator.BatchReporter] with POST /runner/reports: the reports go in as few
// requests as their size allows, and each gets the error its own report request would have got. A report
// request is safe to repeat, so the batch is retried like one. Against a coordinator that does not serve
// POST /runner/reports (an older version: 404 or 405) or that refuses a batch as too large, the reports go
// one request each, and so do all later batches of a coordinator without the endpoint.
func (c *Client) ReportRuns(ctx context.Context, reps []orchestrator.RunReport) []error {
	errs := make([]error, len(reps))
	var (
		chunk []int // indexes into reps
		raws  []json.RawMessage
		size  int
	)
	flush := func() {
		if len(chunk) > 0 {
			c.reportChunk(ctx, reps, chunk, raws, errs)
		}
		chunk, raws, size = nil, nil, 0
	}
	for i, rep := range reps {
		if _, ok := reportPath(rep.Status); !ok || rep.RunID == "" || c.noBatch.Load() {
			errs[i] = c.ReportRun(ctx, rep) // ReportRun explains what is wrong, or sends it alone
			continue
		}
		raw, err := json.Marshal(rep)
		if err != nil {
			errs[i] = fmt.Errorf("httpapi: encode report: %w", err)
			continue
		}
		if len(chunk) > 0 && (size+len(raw) > reportBatchBytes || len(chunk) == MaxReportsPerRequest) {
			flush()
		}
		chunk, raws, size = append(chunk, i), append(raws, raw), size+len(raw)+1
	}
	flush()
	return errs
}

// reportChunk sends the reports reps[idx] (encoded as raws) and sets their errors.
func (c *Client) reportChunk(ctx context.Context, reps []orchestrator.RunReport, idx []int, raws []json.RawMessage, errs []error) {
	alone := func() {
		for _, i := range idx {
			errs[i] = c.ReportRun(ctx, reps[i])
		}
	}
	if len(idx) == 1 || c.noBatch.Load() {
		alone()
		return
	}
	var out struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	status, err := c.do(ctx, call{method: "POST", path: "/runner/reports", body: map[string]any{"reports": raws}}, &out)
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		c.noBatch.Store(true)
		c.cfg.Logger.Info("the coordinator has no POST /runner/reports; sending reports one by one", "err", err)
		alone()
		return
	case status == http.StatusRequestEntityTooLarge:
		alone()
		return
	case err == nil && len(out.Results) != len(idx):
		err = &orchestrator.Error{Kind: ErrServer, Code: "invalid_response",
			Message: fmt.Sprintf("POST /runner/reports: %d results for %d reports", len(out.Results), len(idx))}
	}
	for k, i := range idx {
		if err != nil {
			errs[i] = err
			continue
		}
		res := out.Results[k]
		var st int
		_ = json.Unmarshal(res["status"], &st)
		if st >= 200 && st < 300 {
			continue
		}
		delete(res, "status")
		delete(res, "run_id")
		body, _ := json.Marshal(res)
		errs[i] = decodeError(st, http.StatusText(st), body)
	}
}

// DeregisterRunner implements [orchestrator.Coordinator] with DELETE /runner/{id}.
func (c *Client) DeregisterRunner(ctx context.Context, runnerID string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/runner/" + seg(runnerID)}, nil)
	return err
}

// ListRunners implements [orchestrator.Coordinator].
func (c *Client) ListRunners(ctx context.Context) ([]*orchestrator.RunnerInfo, error) {
	var out runnerList
	if _, err := c.do(ctx, call{method: "GET", path: "/runners"}, &out); err != nil {
		return nil, err
	}
	return out.Runners, nil
}
