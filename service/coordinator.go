package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/ui"
)

// EnvWebhookSecret is the environment variable -webhook-secret defaults to.
const EnvWebhookSecret = "ORCHESTRATOR_WEBHOOK_SECRET"

// EnvMetricsToken is the environment variable -metrics-token defaults to.
const EnvMetricsToken = "ORCHESTRATOR_METRICS_TOKEN"

// CoordinatorConfig configures the coordinator service: where it listens, its store, its tokens, and the
// coordinator's own settings.
type CoordinatorConfig struct {
	// Addr is the address to listen on (-addr). Default 127.0.0.1:8765.
	Addr string
	// DB is a SQLite file or a postgres:// URL (-db). Default orchestrator.db.
	DB string
	// AgentsDir, when set, is a folder of AI agent blueprints (*.json) put into the registry at start
	// (-agents-dir).
	AgentsDir string
	// AdminTokens, ClientTokens and RunnerTokens are comma-separated bearer tokens for each role
	// (-admin-token, -client-token, -runner-token; default: the httpapi.Env*Token variables). Without
	// any the API is open, and the service refuses an address other hosts can reach unless Insecure.
	AdminTokens, ClientTokens, RunnerTokens string
	// MetricsTokens are comma-separated bearer tokens that may read GET /metrics and nothing else
	// (-metrics-token; default $ORCHESTRATOR_METRICS_TOKEN): what a Prometheus server scrapes with.
	// Admin tokens may read it too.
	MetricsTokens string
	// Metrics serves Prometheus metrics at GET /metrics (-metrics). Default true.
	Metrics bool
	// Insecure allows an open API on a non-loopback address (-insecure).
	Insecure bool
	// UI serves the dashboard at /ui/ (-ui). Default true.
	UI bool
	// AllowedOrigins are comma-separated web origins, besides the coordinator's own, whose pages a browser
	// may let call the API (-allowed-origins; httpapi.Config.AllowedOrigins): "https://orchestrator.example.com".
	// Default none.
	AllowedOrigins string
	// AllowedHosts are comma-separated host names, besides localhost and IP addresses, that requests may
	// name in their Host header (-allowed-hosts; httpapi.Config.AllowedHosts): "orchestrator.example.com",
	// "*.svc.cluster.local". An open API answers only those; with it set, so does an API with tokens.
	// Default none.
	AllowedHosts string
	// MaxBatchBytesInFlight bounds the bytes of fan-out and report bodies the API reads at once
	// (-max-batch-bytes-in-flight; httpapi.Config.MaxBatchBytesInFlight): past it, 429
	// too_many_bytes_in_flight. Default httpapi.DefaultMaxBatchBytesInFlight (64 MiB); negative: no limit.
	MaxBatchBytesInFlight int64
	// Coordinator is the coordinator's configuration; the service sets its Store, Logger and Notifier.
	Coordinator coordinator.Config
	// Log chooses the log format and level (-log-format, -log-level).
	Log LogConfig
}

// RegisterFlags registers the service's flags on fs, the coordinator's ([coordinator.Config.RegisterFlags])
// and the log's among them, with their defaults, some of which come from the environment. It sets
// fs.Usage to the coordinator binary's -h: what it is, examples, the environment variables it reads, the
// flags.
func (c *CoordinatorConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Usage = Usage(fs, coordinatorUsage)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8765", "address to listen on")
	fs.StringVar(&c.DB, "db", "orchestrator.db", "SQLite file, or a postgres:// URL")
	fs.StringVar(&c.AgentsDir, "agents-dir", "", "folder of AI agent blueprints (*.json) loaded into the registry at start")
	fs.StringVar(&c.AdminTokens, "admin-token", os.Getenv(httpapi.EnvAdminToken), "admin bearer token(s), comma-separated (default $"+httpapi.EnvAdminToken+")")
	fs.StringVar(&c.ClientTokens, "client-token", os.Getenv(httpapi.EnvClientToken), "client bearer token(s) (default $"+httpapi.EnvClientToken+")")
	fs.StringVar(&c.RunnerTokens, "runner-token", os.Getenv(httpapi.EnvRunnerToken), "runner bearer token(s) (default $"+httpapi.EnvRunnerToken+")")
	fs.StringVar(&c.MetricsTokens, "metrics-token", os.Getenv(EnvMetricsToken), "bearer token(s) that may read GET /metrics and nothing else (default $"+EnvMetricsToken+")")
	fs.BoolVar(&c.Metrics, "metrics", true, "serve Prometheus metrics at GET /metrics (to -metrics-token and admin tokens)")
	fs.BoolVar(&c.Insecure, "insecure", false, "allow an open API (no tokens) on a non-loopback address")
	fs.BoolVar(&c.UI, "ui", true, "serve the dashboard at /ui/")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", "", "web origins besides the coordinator's own whose pages may call the API from a browser, comma-separated (https://orchestrator.example.com)")
	fs.Int64Var(&c.MaxBatchBytesInFlight, "max-batch-bytes-in-flight", httpapi.DefaultMaxBatchBytesInFlight, "bytes of fan-out and report bodies read at once, across requests; past it 429 (negative: no limit)")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", "", "host names besides localhost and IP addresses that requests may name in Host, comma-separated (orchestrator.example.com, *.svc.cluster.local); an open API answers only those, and with it set so does one with tokens")
	c.Coordinator.RegisterFlags(fs)
	if s := os.Getenv(EnvWebhookSecret); s != "" {
		c.Coordinator.WebhookSecret = []byte(s)
	}
	c.Log.RegisterFlags(fs)
}

// OpenStore opens the store -db names (migrating it); its error names the flag and the file or URL. It
// checks the tokens and -addr first, so that a wrong setting fails before a database is created.
func (c *CoordinatorConfig) OpenStore(ctx context.Context, log *slog.Logger) (*sqlstore.Store, error) {
	if _, err := c.tokens(); err != nil {
		return nil, err
	}
	store, err := sqlstore.New(ctx, c.DB, &sqlstore.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("-db %s: %w", redact(c.DB), err)
	}
	return store, nil
}

// Server is a started coordinator service: the coordinator, its background work, and the HTTP server.
type Server struct {
	// Coordinator is the in-process coordinator the API serves (a runner in the same process may use it).
	Coordinator *coordinator.Coordinator
	// URL is the API's base URL, http://host:port.
	URL  string
	stop context.CancelFunc
	done chan error
}

// Start loads -agents-dir, starts a coordinator over store and serves the API on -addr in the background.
// Errors name the flag at fault: an open API on a reachable address (-insecure), an address in use
// (-addr), an unreadable agents folder (-agents-dir). [Server.Close] stops it all.
func (c *CoordinatorConfig) Start(ctx context.Context, store *sqlstore.Store, log *slog.Logger) (*Server, error) {
	tokens, err := c.tokens()
	if err != nil {
		return nil, err
	}
	open := len(tokens) == 0
	if open && httpapi.CheckListenAddr(c.Addr, true, false) != nil {
		log.Warn("serving an open API (no tokens) on an address other hosts can reach, as -insecure allows: "+
			"anyone who reaches it may do anything", "addr", c.Addr)
	}
	var agents []*orchestrator.Blueprint
	if c.AgentsDir != "" {
		if agents, err = orchestrator.LoadBlueprints(c.AgentsDir, orchestrator.AgentTypeAgent); err != nil {
			return nil, fmt.Errorf("-agents-dir %s: %w", c.AgentsDir, err)
		}
	}
	stopTracing, err := StartTracing(ctx, "orchestrator-coordinator", log)
	if err != nil {
		return nil, fmt.Errorf("tracing (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	// On PostgreSQL, replicas wake each other's waiters; on SQLite Notifier() is nil (one process).
	cfg := c.Coordinator
	cfg.Store, cfg.Logger, cfg.Notifier = store, log, store.Notifier()
	if cfg.Artifacts == nil && cfg.ArtifactsURL == "" {
		cfg.ArtifactsURL = DefaultArtifactsURL(c.DB)
		if cfg.ArtifactsURL == "" {
			log.Warn("no artifact bucket: sessions keep no artifacts; give -artifacts (a bucket every replica shares, e.g. s3://…)")
		}
	}
	var metrics *prommetrics.Metrics
	if c.Metrics {
		metrics = prommetrics.New()
		cfg.Metrics = metrics
	}
	coord, err := coordinator.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := coord.PutAgents(ctx, agents); err != nil {
		return nil, fmt.Errorf("-agents-dir %s: %w", c.AgentsDir, err)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("-addr %s is in use (is another coordinator running? choose another -addr): %w", c.Addr, err)
		}
		return nil, fmt.Errorf("-addr %s: %w", c.Addr, err)
	}
	if err := coord.Start(ctx); err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{Coordinator: coord, URL: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	log.Info("coordinator listening", "addr", ln.Addr().String(), "db", redact(c.DB), "auth", !open,
		"notifier", cfg.Notifier != nil, "agents_loaded", len(agents))
	hcfg := c.httpConfig()
	hcfg.Tokens, hcfg.Logger, hcfg.MCP = tokens, log, mcpserver.NewHandler(coord, mcpserver.Config{Logger: log})
	if metrics != nil {
		metrics.WatchCoordinator(coord)
		hcfg.Metrics = metrics.Handler()
	}
	if c.UI {
		hcfg.UI = ui.NewHandler()
		log.Info("dashboard", "url", s.URL+ui.Path)
	}
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	go func() {
		err := httpapi.Serve(serveCtx, ln, httpapi.NewHandler(coord, hcfg), 10*time.Second, log)
		coord.Stop()
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("flushing traces", "err", err)
		}
		s.done <- err
	}()
	return s, nil
}

// DefaultArtifactsURL is where a coordinator over the database db keeps artifacts when -artifacts is not
// given: for a SQLite file, the folder beside it named after it with "-artifacts" (orchestrator.db →
// orchestrator.db-artifacts). PostgreSQL and in-memory databases have no default (""): replicas sharing
// a database must share a bucket too, which a folder on one host is not, so they need -artifacts.
func DefaultArtifactsURL(db string) string {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") || strings.Contains(db, ":memory:") || db == "" {
		return ""
	}
	path := strings.TrimPrefix(db, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	abs, err := filepath.Abs(path + "-artifacts")
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// Close stops serving (requests in flight get a grace period) and stops the coordinator's background work.
func (s *Server) Close() error {
	s.stop()
	return <-s.done
}

// Serve starts the service ([CoordinatorConfig.Start]) and serves until ctx ends.
func (c *CoordinatorConfig) Serve(ctx context.Context, store *sqlstore.Store, log *slog.Logger) error {
	s, err := c.Start(ctx, store, log)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return s.Close()
	case err := <-s.done:
		return err
	}
}

// tokens parses the token flags and refuses an open API on an address other hosts can reach, unless
// -insecure.
func (c *CoordinatorConfig) tokens() (map[string]httpapi.Role, error) {
	tokens, err := httpapi.ParseTokens(c.AdminTokens, c.ClientTokens, c.RunnerTokens)
	if err != nil {
		return nil, err
	}
	// A metrics token is checked as any token is, then given its role.
	metricsTokens, err := httpapi.ParseTokens("", c.MetricsTokens, "")
	if err != nil {
		return nil, fmt.Errorf("-metrics-token: %w", err)
	}
	for tok := range metricsTokens {
		if role, ok := tokens[tok]; ok {
			return nil, fmt.Errorf("-metrics-token: the same token is configured for roles %s and %s", role, httpapi.RoleMetrics)
		}
		tokens[tok] = httpapi.RoleMetrics
	}
	if err := c.httpConfig().Validate(); err != nil {
		return nil, fmt.Errorf("-allowed-origins, -allowed-hosts: %w", err)
	}
	if err := httpapi.CheckListenAddr(c.Addr, len(tokens) == 0, c.Insecure); err != nil {
		return nil, fmt.Errorf("refusing to serve an open API (no tokens) on -addr %s, which other hosts can reach: "+
			"set tokens (-admin-token, -client-token, -runner-token or $%s, $%s, $%s), listen on a loopback address, or give -insecure",
			c.Addr, httpapi.EnvAdminToken, httpapi.EnvClientToken, httpapi.EnvRunnerToken)
	}
	return tokens, nil
}

// httpConfig is the API's configuration from -allowed-origins, -allowed-hosts and
// -max-batch-bytes-in-flight.
func (c *CoordinatorConfig) httpConfig() httpapi.Config {
	return httpapi.Config{AllowedOrigins: splitList(c.AllowedOrigins), AllowedHosts: splitList(c.AllowedHosts),
		MaxBatchBytesInFlight: c.MaxBatchBytesInFlight}
}

// splitList splits a comma-separated flag value, without empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// redact hides a database URL's password.
func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}
