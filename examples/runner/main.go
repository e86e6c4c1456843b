// Command runner registers with a coordinator, announces the deterministic agents in its blueprints
// folder, and executes their runs as subprocesses.
//
//	go run ./examples/runner -coordinator http://127.0.0.1:8765 -blueprints-dir ./examples/blueprints
//
// Commands are looked up on PATH and run in -project-dir. Each run's processes reach the coordinator only
// through the runner's loopback gateway (AGENT_ORCHESTRATOR_API_URL, AGENT_ORCHESTRATOR_TOKEN); the
// runner's own token never reaches them. SIGINT/SIGTERM: stop claiming, let runs finish (-shutdown-grace),
// stop the rest, deregister.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

func main() {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	coordURL := flag.String("coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	token := flag.String("token", os.Getenv("ORCHESTRATOR_RUNNER_TOKEN"), "runner bearer token")
	dir := flag.String("blueprints-dir", filepath.Join(home, ".agent-runner", "blueprints"), "folder of *.json blueprints")
	cfg := orchestrator.RunnerConfig{ExecutorType: "deterministic"}
	flag.StringVar(&cfg.ProjectDir, "project-dir", wd, "working directory of the runs")
	flag.StringVar(&cfg.Hostname, "hostname", "", "hostname to register (default: this host's)")
	flag.StringVar(&cfg.ExecutorProfile, "profile", "deterministic", "executor profile to register")
	tags := flag.String("tags", "", "comma-separated tags")
	flag.BoolVar(&cfg.RequireMatchingTags, "require-matching-tags", false, "take only runs that demand one of -tags")
	flag.IntVar(&cfg.MaxConcurrent, "max-concurrent", 4, "runs executed at once")
	flag.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 30*time.Second, "on shutdown, how long runs may finish")
	stopGrace := flag.Duration("stop-grace", 5*time.Second, "SIGTERM to SIGKILL delay when a run is stopped")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *tags != "" {
		cfg.Tags = strings.Split(*tags, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *coordURL, *token, *dir, *stopGrace, cfg); err != nil {
		log.Error("runner failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, coordURL, token, dir string, stopGrace time.Duration, cfg orchestrator.RunnerConfig) error {
	blueprints, err := orchestrator.LoadBlueprints(dir)
	if err != nil {
		return err
	}
	client, err := httpapi.NewClient(coordURL, httpapi.ClientConfig{Token: token, Logger: log})
	if err != nil {
		return err
	}
	gw := gateway.New(client, gateway.Config{Logger: log})
	if err := gw.Start(ctx); err != nil {
		return err
	}
	defer gw.Close()
	cfg.Coordinator, cfg.Blueprints, cfg.Gateway, cfg.Logger = client, blueprints, gw, log
	cfg.Executor = deterministic.New(deterministic.Config{StopGrace: stopGrace, Logger: log})
	runner, err := orchestrator.NewRunner(cfg)
	if err != nil {
		return err
	}
	log.Info("runner starting", "coordinator", coordURL, "blueprints", len(blueprints), "gateway", gw.URL())
	return runner.Run(ctx)
}
