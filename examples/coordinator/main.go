// Command coordinator serves the orchestrator's HTTP API, MCP at /mcp and the dashboard at /ui/ (-ui=false
// leaves it out), over an embedded SQLite file (or PostgreSQL):
//
//	go run ./examples/coordinator -addr 127.0.0.1:8765 -db orchestrator.db [-agents-dir ./agents]
//
// Tokens come from -admin-token, -client-token and -runner-token or from ORCHESTRATOR_ADMIN_TOKEN,
// ORCHESTRATOR_CLIENT_TOKEN and ORCHESTRATOR_RUNNER_TOKEN (comma-separated lists allowed). Without any, the
// API is open and the coordinator refuses a non-loopback address unless -insecure is given. -agents-dir
// loads AI agent blueprints (*.json) into the registry at start. -webhook-secret (or
// ORCHESTRATOR_WEBHOOK_SECRET) signs deliveries to runs' callback_url; -webhook-allow-hosts opens
// non-public destinations. Several coordinators may serve one PostgreSQL database (-db postgres://…).
// Browsers' requests from other origins are refused; -allowed-origins names more origins to serve (a proxy
// in front that changes Host), and -allowed-hosts the host names an open API answers besides localhost and
// IP addresses (docs/http-api.md, "Browsers").
// -artifacts names the bucket for sessions' artifacts (file:///DIR or s3://bucket?region=…&endpoint=…;
// default: a folder beside the SQLite file, none on PostgreSQL).
// `coordinator -h` lists every flag; the wiring is package service's [service.CoordinatorConfig].
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	// s3:// artifact buckets (-artifacts). Only this binary registers the S3 driver: it brings the AWS SDK,
	// which a program that keeps artifacts on disk does not need (package blobstore).
	_ "gocloud.dev/blob/s3blob"

	"github.com/agentorchestrator/orchestrator/service"
)

func main() {
	var cfg service.CoordinatorConfig
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	log := cfg.Log.New(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &cfg, log); err != nil {
		log.Error("coordinator failed", "err", err)
		os.Exit(1)
	}
}

// run opens the store, and serves until ctx ends.
func run(ctx context.Context, cfg *service.CoordinatorConfig, log *slog.Logger) error {
	store, err := cfg.OpenStore(ctx, log)
	if err != nil {
		return err
	}
	defer store.Close()
	return cfg.Serve(ctx, store, log)
}
