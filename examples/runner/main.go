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
// the runner token (used only to register) nor the runner's own credential, which its registration
// returns, ever reaches their environment. The token comes from -token-file (best: a file of mode 0600),
// -token (visible to other users in /proc/<pid>/cmdline) or ORCHESTRATOR_RUNNER_TOKEN. With -run-as USER
// (the runner must be root) the programs run as that user, who can read neither the runner's environment
// nor its token file. SIGINT/SIGTERM: stop claiming, let runs finish (-shutdown-grace), stop the rest,
// deregister. -metrics-addr serves Prometheus metrics (orchestrator_runner_slots_busy, Go runtime) on a
// listener of its own, without authentication: bind it to loopback or a network only the scraper reaches.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
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
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/executor/process"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/runner"
)

// opts are the flags that choose and configure the executor.
type opts struct {
	coordURL, token, dir            string
	metricsAddr                     string
	executor, claude, mcpURL, xconf string
	stopGrace                       time.Duration
	iso                             isolation.Config
}

func main() {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	var o opts
	flag.StringVar(&o.coordURL, "coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	flag.StringVar(&o.token, "token", os.Getenv("ORCHESTRATOR_RUNNER_TOKEN"), "runner bearer token (other users can read it in /proc: prefer -token-file)")
	tokenFile := flag.String("token-file", "", "file holding the runner bearer token (mode 0600)")
	runAs := flag.String("run-as", "", "run the runs' processes as this user (name or uid); the runner must be root")
	flag.StringVar(&o.dir, "blueprints-dir", filepath.Join(home, ".agent-runner", "blueprints"), "folder of *.json blueprints")
	flag.StringVar(&o.executor, "executor", "deterministic", `"deterministic", "claude-code", or the path of an external executable`)
	flag.StringVar(&o.claude, "claude", "claude", "Claude Code CLI (-executor claude-code)")
	flag.StringVar(&o.mcpURL, "mcp-url", "", "orchestrator MCP endpoint handed to Claude Code agents (default: this runner's gateway, scoped to the run)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9465); off by default")
	flag.StringVar(&o.xconf, "executor-config", "", "JSON object given to an external executable as executor_config")
	cfg := runner.Config{}
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
	if err := secure(&o, *tokenFile, *runAs, log); err != nil {
		log.Error("runner failed", "err", err)
		os.Exit(1)
	}
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

// secure reads the token from -token-file when given, hides the token's value from the runs' processes
// (whatever variable holds it) and, with -run-as, has them run as that user.
func secure(o *opts, tokenFile, runAs string, log *slog.Logger) error {
	if tokenFile != "" {
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "token" {
				tokenFile = "" // flagged below
			}
		})
		if tokenFile == "" {
			return errors.New("give -token or -token-file, not both")
		}
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("-token-file: %w", err)
		}
		if o.token = strings.TrimSpace(string(b)); o.token == "" {
			return fmt.Errorf("-token-file %s is empty", tokenFile)
		}
		if fi, err := os.Stat(tokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the token file is readable by other users; make it mode 0600", "file", tokenFile, "mode", fi.Mode().Perm())
		}
	}
	if o.token != "" {
		o.iso.HiddenValues = []string{o.token}
	}
	if runAs != "" {
		u, err := isolation.LookupUser(runAs)
		if err != nil {
			return fmt.Errorf("-run-as: %w", err)
		}
		if err := u.Check(); err != nil {
			return fmt.Errorf("-run-as: %w", err)
		}
		o.iso.User = u
	}
	return nil
}

// newExecutor builds the executor -executor names and returns the executor type to register.
func newExecutor(o opts, log *slog.Logger) (orchestrator.Executor, string, error) {
	switch o.executor {
	case "deterministic":
		return deterministic.New(deterministic.Config{StopGrace: o.stopGrace, Isolation: o.iso, Logger: log}), "deterministic", nil
	case "claude-code":
		c := claudecode.Config{ClaudePath: o.claude, StopGrace: o.stopGrace, Isolation: o.iso, Logger: log}
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
	return process.New(process.Config{Path: o.executor, Config: conf, StopGrace: o.stopGrace, Isolation: o.iso, Logger: log}), "process", nil
}

func run(ctx context.Context, log *slog.Logger, o opts, announce bool, cfg runner.Config) error {
	ex, typ, err := newExecutor(o, log)
	if err != nil {
		return err
	}
	cfg.Executor, cfg.ExecutorType = ex, typ
	if typ != "deterministic" {
		cfg.AcceptsAgents = new(true) // even when it announces blueprints too
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
	if o.metricsAddr != "" {
		m := prommetrics.New()
		cfg.Metrics = m
		go func() {
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", m.Handler())
			if err := serveUntil(ctx, o.metricsAddr, mux, log); err != nil {
				log.Error("metrics listener failed", "addr", o.metricsAddr, "err", err)
			}
		}()
	}
	worker, err := runner.New(cfg)
	if err != nil {
		return err
	}
	log.Info("runner starting", "coordinator", o.coordURL, "executor", typ, "blueprints", len(cfg.Blueprints), "gateway", gw.URL())
	return worker.Run(ctx)
}

// serveUntil serves h on addr until ctx ends.
func serveUntil(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return httpapi.Serve(ctx, ln, h, 5*time.Second, log)
}
