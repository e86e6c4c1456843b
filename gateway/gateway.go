// Package gateway is a runner's loopback HTTP endpoint through which the processes an executor starts
// reach the coordinator without holding the runner's credentials (docs/architecture.md, SECURITY.md).
//
// Each run gets its own random token when the runner opens the gateway for it ([Gateway.Open]); the
// token is valid until the run ends. A request with that token may
//
//   - append events to the run's own session: POST /sessions/{id}/events;
//   - read the run's session and the sessions it started (its children): GET /sessions/{id},
//     /sessions/{id}/result, /sessions/{id}/tree, /sessions/{id}/events (paged, long-polled or streamed), GET /sessions (the
//     children), GET /runs/{id} and /runs/{id}/result of a run of one of them;
//   - start children: POST /runs, whose parent_session_id is forced to the run's session (a different
//     parent is 403; async_callback is checked by the coordinator: only AI parents can be called back),
//     or resume one of its children; callback_url is not available;
//   - stop a child: POST /sessions/{child}/stop;
//   - read agents: GET /agents, /agents/{name}, /agents/{name}/schema;
//   - read the schedule that started the run's tree, if one did: GET /schedules, /schedules/{id} (any
//     other schedule is 403 schedule_out_of_scope, whether it exists or not);
//   - use the same through MCP at /mcp, when [Config].MCP is set (the Claude Code executor's default).
//
// A session or run the token does not reach is 403 session_out_of_scope or run_out_of_scope whether it
// exists or not, so an executor learns nothing about other runs' ids. Everything else is 403, a missing,
// unknown or expired token 401, and a coordinator that fails, cannot be reached or refuses the runner's
// credentials 502 (httpapi.ErrServer at the executor's client). The routes, request bodies and answers
// are the coordinator API's own (the gateway serves httpapi's handler over a scoped Coordinator), so an
// executor's script uses the same client code — httpapi.Client in Go — against either.
//
// The gateway forwards through the Coordinator it was given, which holds the runner's credentials (an
// httpapi.Client that registered the runner and so acts with its own credential, or an in-process
// coordinator.Coordinator); those never reach the executor. Over HTTP the coordinator scopes what it
// forwards a second time, to the sessions of the runs that runner holds or held and their descendants.
// The environment [Gateway.Open] returns (AGENT_ORCHESTRATOR_API_URL and AGENT_ORCHESTRATOR_TOKEN) is
// added to every process the executor starts.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// Config configures a [Gateway]. The zero value is ready to use.
type Config struct {
	// Addr is the address to listen on. Default "127.0.0.1:0": loopback, a free port.
	Addr string
	// MaxBodyBytes bounds a request body. Default: httpapi's default (2 MiB).
	MaxBodyBytes int64
	// MaxWait caps the wait of long polls. Default: httpapi's default (5m).
	MaxWait time.Duration
	// MCP, when set, builds the MCP handler served at /mcp over the gateway's run-scoped Coordinator
	// (mcpserver.NewHandler fits), so an AI agent's MCP calls start children as its own session's, with
	// its run's token. Unset, /mcp is 404.
	MCP func(orchestrator.Coordinator) http.Handler
	// Logger receives the gateway's errors. Default: discard.
	Logger *slog.Logger
}

// Gateway is a runner's loopback gateway; it implements
// [github.com/agentorchestrator/orchestrator/runner.Gateway]. Start it with [Gateway.Start] (or let the
// first [Gateway.Open] start it) and stop it with [Gateway.Close].
type Gateway struct {
	coord   orchestrator.Coordinator
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	mu     sync.Mutex
	grants map[[sha256.Size]byte]*grant
	srv    *http.Server
	url    string
	closed bool
	stop   func() bool // unregisters the Start context's AfterFunc
}

// New returns a gateway that forwards to coord. It does not listen until [Gateway.Start] or the first
// [Gateway.Open].
func New(coord orchestrator.Coordinator, cfg Config) *Gateway {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{coord: coord, cfg: cfg, log: cfg.Logger, grants: map[[sha256.Size]byte]*grant{}}
	sc := &scoped{inner: coord}
	var mcp http.Handler
	if cfg.MCP != nil {
		// Built on first use: a runner whose agents never call MCP does not pay for the server's memory.
		var once sync.Once
		var h http.Handler
		mcp = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { h = cfg.MCP(sc) })
			h.ServeHTTP(w, r)
		})
	}
	g.handler = httpapi.NewHandler(sc, httpapi.Config{
		Authenticator: g,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		MaxWait:       cfg.MaxWait,
		Logger:        cfg.Logger,
		MCP:           mcp,
	})
	return g
}

// Handler returns the gateway's HTTP handler, for serving it some other way (tests, a unix socket).
func (g *Gateway) Handler() http.Handler { return g.handler }

// Start listens on Config.Addr and serves until ctx ends or Close is called. Starting a started gateway
// does nothing; a closed one cannot be started again.
func (g *Gateway) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("gateway: closed")
	}
	if g.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", g.cfg.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen: %w", err)
	}
	// No write timeout: long polls and event streams stay open as long as the caller waits.
	g.srv = &http.Server{Handler: g.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}
	g.url = "http://" + ln.Addr().String()
	srv := g.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("gateway stopped serving", "err", err)
		}
	}()
	if ctx != nil && ctx.Done() != nil {
		g.stop = context.AfterFunc(ctx, func() { _ = g.Close() })
	}
	g.log.Info("gateway listening", "url", g.url)
	return nil
}

// URL returns the gateway's base URL ("http://127.0.0.1:port"), empty before it starts.
func (g *Gateway) URL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.url
}

// Close stops the gateway at once — open connections, long polls and streams included — and revokes
// every token. It is safe to call more than once.
func (g *Gateway) Close() error {
	g.mu.Lock()
	srv, stop := g.srv, g.stop
	g.closed, g.srv, g.stop = true, nil, nil
	clear(g.grants)
	g.mu.Unlock()
	if stop != nil {
		stop()
	}
	if srv != nil {
		return srv.Close()
	}
	return nil
}

// Open implements runner.Gateway: it mints a token for the run (32 random bytes, hex) scoped to
// the run's session and its children, and returns the environment that gives the run's processes the
// gateway. closeFn revokes the token. If the gateway cannot start, the error is logged and the run gets no
// gateway (an empty environment).
func (g *Gateway) Open(asg *orchestrator.Assignment) (env map[string]string, closeFn func()) {
	if asg == nil || asg.Run == nil || asg.Run.SessionID == "" {
		return nil, func() {}
	}
	if err := g.Start(context.Background()); err != nil {
		g.log.Error("gateway unavailable; the run gets none", "run_id", asg.Run.ID, "err", err)
		return nil, func() {}
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand panics rather than return an error)
	token := hex.EncodeToString(raw[:])
	key := sha256.Sum256([]byte(token))
	gr := &grant{sessionID: asg.Run.SessionID, runID: asg.Run.ID, children: map[string]bool{}}
	g.mu.Lock()
	g.grants[key] = gr
	url := g.url
	g.mu.Unlock()
	var once sync.Once
	return map[string]string{
			orchestrator.EnvAPIURL:   url,
			orchestrator.EnvAPIToken: token,
		}, func() {
			once.Do(func() {
				g.mu.Lock()
				delete(g.grants, key)
				g.mu.Unlock()
			})
		}
}

// allowed lists the coordinator routes the gateway serves.
var allowed = map[string]bool{
	"GET /agents":                            true,
	"GET /agents/{name}":                     true,
	"GET /agents/{name}/schema":              true,
	"POST /runs":                             true,
	"GET /runs/{id}":                         true,
	"GET /runs/{id}/result":                  true,
	"GET /sessions":                          true,
	"GET /sessions/{id}":                     true,
	"GET /sessions/{id}/result":              true,
	"GET /sessions/{id}/tree":                true,
	"POST /sessions/{id}/stop":               true,
	"GET /sessions/{id}/artifacts":           true,
	"GET /sessions/{id}/artifacts/{name...}": true,
	"PUT /sessions/{id}/artifacts/{name...}": true,
	"GET /sessions/{id}/events":              true,
	"GET /sessions/{id}/events/stream":       true,
	"POST /sessions/{id}/events":             true,
	"GET /schedules":                         true,
	"GET /schedules/{id}":                    true,
	"GET /health":                            true,
	"GET /ready":                             true,
	"POST /mcp":                              true,
	"GET /mcp":                               true,
	"DELETE /mcp":                            true,
}

// Routes returns the coordinator routes the gateway serves.
func Routes() []httpapi.Route {
	var out []httpapi.Route
	for _, rt := range httpapi.Routes() {
		if allowed[rt.String()] {
			out = append(out, rt)
		}
	}
	return out
}

// Authenticate implements [httpapi.Authenticator]: the token must be one [Gateway.Open] minted and not yet
// revoked, and the route one the gateway serves. The run's grant travels in the context to the scoped
// Coordinator, which checks each session the request names.
//
// Tokens are looked up by their SHA-256 hash, so lookup timing says nothing about the tokens themselves.
func (g *Gateway) Authenticate(r *http.Request, rt httpapi.Route) (*http.Request, error) {
	tok, ok := httpapi.BearerToken(r)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrUnauthorized, "unauthorized",
			"a bearer token is required (Authorization: Bearer $%s)", orchestrator.EnvAPIToken)
	}
	g.mu.Lock()
	gr := g.grants[sha256.Sum256([]byte(tok))]
	g.mu.Unlock()
	if gr == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrUnauthorized, "invalid_token", "the token is not valid (unknown, or its run has ended)")
	}
	if !allowed[rt.String()] {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "not_available_through_gateway", "%s is not available through the gateway", rt)
	}
	return r.WithContext(context.WithValue(r.Context(), grantKey{}, gr)), nil
}
