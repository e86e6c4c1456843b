// Command coordinator serves the orchestrator's HTTP API, MCP at /mcp and the dashboard at /ui/ (-ui=false
// leaves it out), over an embedded SQLite file (or PostgreSQL).
//
//	go run ./examples/coordinator -addr 127.0.0.1:8765 -db orchestrator.db [-agents-dir ./agents]
//
// Tokens come from -admin-token, -client-token and -runner-token or from ORCHESTRATOR_ADMIN_TOKEN,
// ORCHESTRATOR_CLIENT_TOKEN and ORCHESTRATOR_RUNNER_TOKEN (comma-separated lists allowed). Without any, the
// API is open and the coordinator refuses a non-loopback address unless -insecure is given.
//
// -agents-dir loads AI agent blueprints (*.json) into the registry at start, creating or replacing them.
// -webhook-secret (or ORCHESTRATOR_WEBHOOK_SECRET) signs deliveries to runs' callback_url (Standard
// Webhooks; a "whsec_…" secret is base64); without it runs cannot ask for one. Deliveries reach public
// addresses only: -webhook-allow-hosts opens hosts or CIDR prefixes (comma-separated, e.g. 127.0.0.1).
//
// GET /metrics serves Prometheus metrics to -metrics-token (ORCHESTRATOR_METRICS_TOKEN), a token that
// reads nothing else, and to admin tokens; with no tokens at all it is open like the rest of the API.
//
// Several coordinators may serve one PostgreSQL database (-db postgres://…): they wake each other's parked
// runners through LISTEN/NOTIFY, and runners and clients may be given all their URLs, comma-separated.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
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

type options struct {
	addr, db, agentsDir, webhookSecret string
	admin, client, runner, metrics     string
	webhookAllowHosts                  string
	insecure, ui                       bool
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:8765", "address to listen on")
	flag.StringVar(&o.db, "db", "orchestrator.db", "SQLite file, or a postgres:// URL")
	flag.BoolVar(&o.insecure, "insecure", false, "allow an open API (no tokens) on a non-loopback address")
	flag.BoolVar(&o.ui, "ui", true, "serve the dashboard at /ui/")
	flag.StringVar(&o.admin, "admin-token", os.Getenv("ORCHESTRATOR_ADMIN_TOKEN"), "admin bearer token(s), comma-separated")
	flag.StringVar(&o.client, "client-token", os.Getenv("ORCHESTRATOR_CLIENT_TOKEN"), "client bearer token(s)")
	flag.StringVar(&o.runner, "runner-token", os.Getenv("ORCHESTRATOR_RUNNER_TOKEN"), "runner bearer token(s)")
	flag.StringVar(&o.metrics, "metrics-token", os.Getenv("ORCHESTRATOR_METRICS_TOKEN"), "bearer token(s) that may read GET /metrics and nothing else")
	flag.StringVar(&o.agentsDir, "agents-dir", "", "folder of AI agent blueprints (*.json) loaded into the registry at start")
	flag.StringVar(&o.webhookSecret, "webhook-secret", os.Getenv("ORCHESTRATOR_WEBHOOK_SECRET"), "secret signing callback_url deliveries (whsec_ + base64, or any text)")
	flag.StringVar(&o.webhookAllowHosts, "webhook-allow-hosts", "", "non-public hosts or CIDR prefixes callback_url deliveries may reach, comma-separated (e.g. 127.0.0.1)")
	var cfg coordinator.Config
	flag.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "how often runners heartbeat")
	flag.DurationVar(&cfg.StaleAfter, "stale-after", 90*time.Second, "no heartbeat for this long: the runner claims nothing new")
	flag.DurationVar(&cfg.OfflineAfter, "offline-after", 180*time.Second, "no heartbeat for this long: the runner's runs fail")
	flag.DurationVar(&cfg.NoMatchTimeout, "no-match-timeout", 300*time.Second, "fail a run no runner can take after this long")
	flag.DurationVar(&cfg.RedeliverAfter, "redeliver-after", 15*time.Second, "hand a claimed run its runner never started to it again after this long")
	flag.DurationVar(&cfg.Retention, "retention", 0, "delete sessions that ended longer ago than this (0: keep everything)")
	flag.DurationVar(&cfg.WebhookTimeout, "webhook-timeout", 10*time.Second, "bound of one callback_url delivery attempt")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, o, cfg); err != nil {
		log.Error("coordinator failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, o options, cfg coordinator.Config) error {
	tokens, err := httpapi.ParseTokens(o.admin, o.client, o.runner)
	if err != nil {
		return err
	}
	if err := addTokens(tokens, o.metrics, httpapi.RoleMetrics); err != nil {
		return err
	}
	if err := httpapi.CheckListenAddr(o.addr, len(tokens) == 0, o.insecure); err != nil {
		return err
	}
	if len(tokens) == 0 && httpapi.CheckListenAddr(o.addr, true, false) != nil {
		log.Warn("serving an open API (no tokens) on an address other hosts can reach, as -insecure allows: "+
			"anyone who reaches it may do anything", "addr", o.addr)
	}
	var agents []*orchestrator.Blueprint
	if o.agentsDir != "" {
		if agents, err = orchestrator.LoadAgentBlueprints(o.agentsDir); err != nil {
			return err
		}
	}
	store, err := sqlstore.New(ctx, o.db, &sqlstore.Config{Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	// On PostgreSQL, replicas wake each other's waiters; on SQLite Notifier() is nil (one process).
	cfg.Store, cfg.Logger, cfg.Notifier, cfg.WebhookSecret = store, log, store.Notifier(), []byte(o.webhookSecret)
	cfg.WebhookAllowHosts = strings.Split(o.webhookAllowHosts, ",")
	metrics := prommetrics.New()
	cfg.Metrics = metrics
	coord, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	metrics.WatchCoordinator(coord)
	if err := coord.PutAgents(ctx, agents); err != nil {
		return err
	}
	if err := coord.Start(ctx); err != nil {
		return err
	}
	defer coord.Stop()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	log.Info("coordinator listening", "addr", ln.Addr().String(), "db", redact(o.db), "auth", len(tokens) > 0,
		"notifier", cfg.Notifier != nil, "agents_loaded", len(agents))
	hcfg := httpapi.Config{Tokens: tokens, Logger: log, MCP: mcpserver.NewHandler(coord, mcpserver.Config{Logger: log}),
		Metrics: metrics.Handler()}
	if o.ui {
		hcfg.UI = ui.NewHandler()
		log.Info("dashboard", "url", "http://"+ln.Addr().String()+ui.Path)
	}
	api := httpapi.NewHandler(coord, hcfg)
	return httpapi.Serve(ctx, ln, api, 10*time.Second, log)
}

// redact hides a database URL's password in logs.
func redact(db string) string {
	if u, err := url.Parse(db); err == nil && u.User != nil {
		return u.Redacted()
	}
	return db
}

// addTokens adds the comma-separated tokens in list to tokens with role.
func addTokens(tokens map[string]httpapi.Role, list string, role httpapi.Role) error {
	parsed, err := httpapi.ParseTokens("", list, "") // checked as any token is; the role is set below
	if err != nil {
		return err
	}
	for tok := range parsed {
		if prev, ok := tokens[tok]; ok {
			return fmt.Errorf("the same token is configured for roles %s and %s", prev, role)
		}
		tokens[tok] = role
	}
	return nil
}
