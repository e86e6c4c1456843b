// Command runner registers with a coordinator and executes runs through one executor:
//
//	go run ./examples/runner -blueprints-dir ./examples/blueprints          # deterministic agents
//	go run ./examples/runner -executor claude-code [-claude /path/to/claude] # AI agents, Claude Code
//	go run ./examples/runner -executor ./examples/executors/python/ao-echo-exec [-executor-config '{"k":1}']
//
// -executor deterministic (the default) announces the agents in -blueprints-dir and runs their commands
// as subprocesses. -executor claude-code runs AI agents' runs with the Claude Code CLI, handing each agent the
// orchestrator's MCP tools through this runner's gateway (or -mcp-url). Any other value is an external executable speaking the stdin
// protocol (docs/executor-protocol.md), which gets -executor-config as executor_config. An AI runner
// announces no blueprints unless -blueprints-dir is given, and takes AI agent runs.
//
// Programs are looked up on PATH and run in -project-dir. Each run's processes reach the coordinator only
// through the runner's loopback gateway (AGENT_ORCHESTRATOR_API_URL, AGENT_ORCHESTRATOR_TOKEN); neither
// -token (used only to register) nor the runner's own credential, which its registration returns, ever
// reaches them. SIGINT/SIGTERM: stop claiming, let runs finish (-shutdown-grace), stop the rest,
// deregister.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/claudecode"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/executor/process"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// opts are the flags that choose and configure the executor.
type opts struct {
	coordURL, token, dir            string
	executor, claude, mcpURL, xconf string
	stopGrace                       time.Duration
}

func main() {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	var o opts
	flag.StringVar(&o.coordURL, "coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	flag.StringVar(&o.token, "token", os.Getenv("ORCHESTRATOR_RUNNER_TOKEN"), "runner bearer token")
	flag.StringVar(&o.dir, "blueprints-dir", filepath.Join(home, ".agent-runner", "blueprints"), "folder of *.json blueprints")
	flag.StringVar(&o.executor, "executor", "deterministic", `"deterministic", "claude-code", or the path of an external executable`)
	flag.StringVar(&o.claude, "claude", "claude", "Claude Code CLI (-executor claude-code)")
	flag.StringVar(&o.mcpURL, "mcp-url", "", "orchestrator MCP endpoint handed to Claude Code agents (default: this runner's gateway, scoped to the run)")
	flag.StringVar(&o.xconf, "executor-config", "", "JSON object given to an external executable as executor_config")
	cfg := orchestrator.RunnerConfig{}
	flag.StringVar(&cfg.ProjectDir, "project-dir", wd, "working directory of the runs")
	flag.StringVar(&cfg.Hostname, "hostname", "", "hostname to register (default: this host's)")
	flag.StringVar(&cfg.ExecutorProfile, "profile", "", "executor profile to register (default: the executor type)")
	tags := flag.String("tags", "", "comma-separated tags")
	flag.BoolVar(&cfg.RequireMatchingTags, "require-matching-tags", false, "take only runs that demand one of -tags")
	flag.IntVar(&cfg.MaxConcurrent, "max-concurrent", 4, "runs executed at once")
	flag.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 30*time.Second, "on shutdown, how long runs may finish")
	flag.DurationVar(&o.stopGrace, "stop-grace", 5*time.Second, "SIGTERM to SIGKILL delay when a run is stopped")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *tags != "" {
		cfg.Tags = strings.Split(*tags, ",")
	}
	// Deterministic runners announce their blueprints; AI runners only when -blueprints-dir is given.
	announce := o.executor == "deterministic"
	flag.Visit(func(f *flag.Flag) { announce = announce || f.Name == "blueprints-dir" })
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, o, announce, cfg); err != nil {
		log.Error("runner failed", "err", err)
		os.Exit(1)
	}
}

// newExecutor builds the executor -executor names and returns the executor type to register.
func newExecutor(o opts, log *slog.Logger) (orchestrator.Executor, string, error) {
	switch o.executor {
	case "deterministic":
		return deterministic.New(deterministic.Config{StopGrace: o.stopGrace, Logger: log}), "deterministic", nil
	case "claude-code":
		c := claudecode.Config{ClaudePath: o.claude, StopGrace: o.stopGrace, Logger: log}
		if o.mcpURL != "" {
			c.MCPServerURL = func(*orchestrator.Invocation) string { return o.mcpURL }
		}
		return claudecode.New(c), "claude-code", nil
	}
	var conf map[string]any
	if o.xconf != "" {
		if err := json.Unmarshal([]byte(o.xconf), &conf); err != nil {
			return nil, "", fmt.Errorf("-executor-config must be a JSON object: %w", err)
		}
	}
	return process.New(process.Config{Path: o.executor, Config: conf, StopGrace: o.stopGrace, Logger: log}), "process", nil
}

func run(ctx context.Context, log *slog.Logger, o opts, announce bool, cfg orchestrator.RunnerConfig) error {
	ex, typ, err := newExecutor(o, log)
	if err != nil {
		return err
	}
	cfg.Executor, cfg.ExecutorType = ex, typ
	if typ != "deterministic" {
		cfg.AcceptsAgents = orchestrator.Ptr(true) // even when it announces blueprints too
	}
	if announce {
		if cfg.Blueprints, err = orchestrator.LoadBlueprints(o.dir); err != nil {
			return err
		}
	}
	client, err := httpapi.NewClient(o.coordURL, httpapi.ClientConfig{Token: o.token, Logger: log})
	if err != nil {
		return err
	}
	// The gateway also serves MCP scoped to each run: the endpoint Claude Code agents get by default.
	gw := gateway.New(client, gateway.Config{Logger: log, MCP: func(c orchestrator.Coordinator) http.Handler {
		return mcpserver.NewHandler(c, mcpserver.Config{Logger: log})
	}})
	if err := gw.Start(ctx); err != nil {
		return err
	}
	defer gw.Close()
	cfg.Coordinator, cfg.Gateway, cfg.Logger = client, gw, log
	runner, err := orchestrator.NewRunner(cfg)
	if err != nil {
		return err
	}
	log.Info("runner starting", "coordinator", o.coordURL, "executor", typ, "blueprints", len(cfg.Blueprints), "gateway", gw.URL())
	return runner.Run(ctx)
}
