// Command coordinator serves the orchestrator's HTTP API over an embedded SQLite file (or PostgreSQL).
//
//	go run ./examples/coordinator -addr 127.0.0.1:8765 -db orchestrator.db
//
// Tokens come from -admin-token, -client-token and -runner-token or from ORCHESTRATOR_ADMIN_TOKEN,
// ORCHESTRATOR_CLIENT_TOKEN and ORCHESTRATOR_RUNNER_TOKEN (comma-separated lists allowed). Without any, the
// API is open and the coordinator refuses a non-loopback address unless -insecure is given.
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8765", "address to listen on")
	db := flag.String("db", "orchestrator.db", "SQLite file, or a postgres:// URL")
	insecure := flag.Bool("insecure", false, "allow an open API (no tokens) on a non-loopback address")
	admin := flag.String("admin-token", os.Getenv("ORCHESTRATOR_ADMIN_TOKEN"), "admin bearer token(s), comma-separated")
	client := flag.String("client-token", os.Getenv("ORCHESTRATOR_CLIENT_TOKEN"), "client bearer token(s)")
	runner := flag.String("runner-token", os.Getenv("ORCHESTRATOR_RUNNER_TOKEN"), "runner bearer token(s)")
	var cfg orchestrator.CoordinatorConfig
	flag.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "how often runners heartbeat")
	flag.DurationVar(&cfg.StaleAfter, "stale-after", 90*time.Second, "no heartbeat for this long: the runner claims nothing new")
	flag.DurationVar(&cfg.OfflineAfter, "offline-after", 180*time.Second, "no heartbeat for this long: the runner's runs fail")
	flag.DurationVar(&cfg.NoMatchTimeout, "no-match-timeout", 300*time.Second, "fail a run no runner can take after this long")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *addr, *db, *insecure, *admin, *client, *runner, cfg); err != nil {
		log.Error("coordinator failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, addr, db string, insecure bool, admin, client, runner string, cfg orchestrator.CoordinatorConfig) error {
	tokens, err := httpapi.ParseTokens(admin, client, runner)
	if err != nil {
		return err
	}
	if err := httpapi.CheckListenAddr(addr, len(tokens) == 0, insecure); err != nil {
		return err
	}
	store, err := sqlstore.New(ctx, db, &sqlstore.Config{Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	cfg.Store, cfg.Logger = store, log
	coord, err := orchestrator.NewCoordinator(cfg)
	if err != nil {
		return err
	}
	if err := coord.Start(ctx); err != nil {
		return err
	}
	defer coord.Stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Info("coordinator listening", "addr", ln.Addr().String(), "db", redact(db), "auth", len(tokens) > 0)
	return httpapi.Serve(ctx, ln, httpapi.NewHandler(coord, httpapi.Config{Tokens: tokens, Logger: log}), 10*time.Second, log)
}

// redact hides a database URL's password in logs.
func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}
