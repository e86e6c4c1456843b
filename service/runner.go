package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/claudecode"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/executor/process"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/cmdline"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/runner"
)

// The executors -executor names; any other value is an external executable (executor/process).
const (
	ExecutorDeterministic = "deterministic"
	ExecutorClaudeCode    = "claude-code"
)

// RunnerConfig configures the runner service: the coordinator it works for, its executor, its blueprints
// and its credentials.
type RunnerConfig struct {
	// CoordinatorURL is the coordinator's base URL, or several comma-separated (-coordinator). Default
	// http://127.0.0.1:8765.
	CoordinatorURL string
	// Token is the runner bearer token (-token; default $ORCHESTRATOR_RUNNER_TOKEN). TokenFile, when set,
	// is a file holding it instead (-token-file).
	Token, TokenFile string
	// RunAs runs the runs' processes as this user, a name or a uid (-run-as); the runner must be root.
	RunAs string
	// BlueprintsDir is the folder of deterministic blueprints (*.json) to announce (-blueprints-dir).
	// Default ~/.agent-runner/blueprints. A runner whose executor is not deterministic announces them
	// only when the flag is given.
	BlueprintsDir string
	// Executor is "deterministic", "claude-code", or an external executable (-executor).
	Executor string
	// Claude is the Claude Code CLI for -executor claude-code (-claude). Default "claude".
	Claude string
	// MCPURL is the orchestrator MCP endpoint handed to Claude Code agents (-mcp-url). Default: this
	// runner's gateway, scoped to the run.
	MCPURL string
	// ExecutorConfig is a JSON object given to an external executable as executor_config
	// (-executor-config).
	ExecutorConfig string
	// StopGrace is the SIGTERM to SIGKILL delay when a run is stopped (-stop-grace). Default 5s.
	StopGrace time.Duration
	// MetricsAddr, when set, serves Prometheus metrics at http://MetricsAddr/metrics on a listener of its
	// own, without authentication (-metrics-addr): bind it to loopback or a network only the scraper
	// reaches.
	MetricsAddr string
	// Runner is the runner's configuration; the service sets its Coordinator, Executor, Blueprints,
	// Gateway and Logger.
	Runner runner.Config
	// Log chooses the log format and level (-log-format, -log-level).
	Log LogConfig

	tokenSet, blueprintsDirSet bool
}

// RegisterFlags registers the service's flags on fs, the runner's ([runner.Config.RegisterFlags]) and the
// log's among them, with their defaults, some of which come from the environment. It sets fs.Usage to the
// runner binary's -h: what it is, examples, the environment variables it reads, the flags.
func (c *RunnerConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Usage = Usage(fs, runnerUsage)
	home, _ := os.UserHomeDir()
	fs.StringVar(&c.CoordinatorURL, "coordinator", "http://127.0.0.1:8765", "coordinator base URL (several: comma-separated)")
	c.Token = os.Getenv(httpapi.EnvRunnerToken)
	fs.Func("token", "runner bearer token (default $"+httpapi.EnvRunnerToken+"; other users can read it in /proc: prefer -token-file)", func(s string) error {
		c.Token, c.tokenSet = s, true
		return nil
	})
	fs.StringVar(&c.TokenFile, "token-file", "", "file holding the runner bearer token (mode 0600)")
	fs.StringVar(&c.RunAs, "run-as", "", "run the runs' processes as this user (name or uid); the runner must be root")
	c.BlueprintsDir = filepath.Join(home, ".agent-runner", "blueprints")
	fs.Func("blueprints-dir", "folder of deterministic blueprints (*.json) to announce (default ~/.agent-runner/blueprints)", func(s string) error {
		c.BlueprintsDir, c.blueprintsDirSet = s, true
		return nil
	})
	fs.StringVar(&c.Executor, "executor", ExecutorDeterministic, `"deterministic", "claude-code", or the path of an external executable`)
	fs.StringVar(&c.Claude, "claude", claudecode.DefaultClaudePath, "Claude Code CLI (-executor claude-code)")
	fs.StringVar(&c.MCPURL, "mcp-url", "", "orchestrator MCP endpoint handed to Claude Code agents (default: this runner's gateway, scoped to the run)")
	fs.StringVar(&c.ExecutorConfig, "executor-config", "", "JSON object given to an external executable as executor_config")
	fs.DurationVar(&c.StopGrace, "stop-grace", 5*time.Second, "SIGTERM to SIGKILL delay when a run is stopped")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, without authentication (e.g. 127.0.0.1:9465; default off)")
	c.Runner.RegisterFlags(fs)
	c.Log.RegisterFlags(fs)
}

// Run checks the configuration ([RunnerConfig.Check]), then runs the runner until ctx ends: it stops
// claiming, lets runs finish within -shutdown-grace, stops the rest and deregisters.
func (c *RunnerConfig) Run(ctx context.Context, log *slog.Logger) error {
	cfg, err := c.Check(ctx, log)
	if err != nil {
		return err
	}
	client, err := httpapi.NewClient(c.CoordinatorURL, httpapi.ClientConfig{Token: c.Token, Logger: log})
	if err != nil {
		return fmt.Errorf("-coordinator %s: %w", c.CoordinatorURL, err)
	}
	// The gateway also serves MCP scoped to each run: the endpoint Claude Code agents get by default.
	gw := gateway.New(client, gateway.Config{Logger: log, MCP: func(co orchestrator.Coordinator) http.Handler {
		return mcpserver.NewHandler(co, mcpserver.Config{Logger: log})
	}})
	if err := gw.Start(ctx); err != nil {
		return err
	}
	defer gw.Close()
	cfg.Coordinator, cfg.Gateway, cfg.Logger = client, gw, log
	stopTracing, err := StartTracing(ctx, "orchestrator-runner", log)
	if err != nil {
		return fmt.Errorf("tracing (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	if c.MetricsAddr != "" {
		m := prommetrics.New()
		cfg.Metrics = m
		ln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("-metrics-addr %s: %w", c.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
		go httpapi.Serve(ctx, ln, mux, 5*time.Second, log) //nolint:errcheck // ends with ctx
	}
	worker, err := runner.New(cfg)
	if err != nil {
		return err
	}
	log.Info("runner starting", "coordinator", c.CoordinatorURL, "executor", cfg.ExecutorType,
		"blueprints", len(cfg.Blueprints), "project_dir", cfg.ProjectDir, "gateway", gw.URL())
	return worker.Run(ctx)
}

// Check reads the token file, checks every setting a run would otherwise trip on later — the project
// directory, the executor and its program, the blueprints — and returns the runner's configuration with
// its executor and blueprints. Its errors name the flag and the value.
func (c *RunnerConfig) Check(ctx context.Context, log *slog.Logger) (runner.Config, error) {
	cfg := c.Runner
	if err := c.readToken(log); err != nil {
		return cfg, err
	}
	iso := isolation.Config{}
	if c.Token != "" {
		iso.HiddenValues = []string{c.Token} // whatever variable holds it, the runs never see it
	}
	if c.RunAs != "" {
		u, err := isolation.LookupUser(c.RunAs)
		if err == nil {
			err = u.Check()
		}
		if err != nil {
			return cfg, fmt.Errorf("-run-as %s: %w", c.RunAs, err)
		}
		iso.User = u
	}
	if cfg.ProjectDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, err
		}
		cfg.ProjectDir = wd
	}
	if fi, err := os.Stat(cfg.ProjectDir); err != nil {
		return cfg, fmt.Errorf("-project-dir %s: %w", cfg.ProjectDir, err)
	} else if !fi.IsDir() {
		return cfg, fmt.Errorf("-project-dir %s is not a directory", cfg.ProjectDir)
	}
	ai := c.Executor != ExecutorDeterministic
	switch c.Executor {
	case ExecutorDeterministic:
		cfg.Executor, cfg.ExecutorType = deterministic.New(deterministic.Config{StopGrace: c.StopGrace, Isolation: iso, Logger: log}), ExecutorDeterministic
	case ExecutorClaudeCode:
		if err := checkClaude(ctx, c.Claude); err != nil {
			return cfg, err
		}
		x := claudecode.Config{ClaudePath: c.Claude, StopGrace: c.StopGrace, Isolation: iso, Logger: log}
		if c.MCPURL != "" {
			x.MCPServerURL = func(*orchestrator.Invocation) string { return c.MCPURL }
		}
		cfg.Executor, cfg.ExecutorType = claudecode.New(x), ExecutorClaudeCode
		if iso.User == nil && os.Geteuid() == 0 && os.Getenv("IS_SANDBOX") != "1" {
			// Claude Code refuses to bypass permissions as root; the executor refuses those runs at once.
			log.Warn("Claude Code will run as root: runs of agents with permission_mode bypassPermissions will fail; " +
				"run it as another user with -run-as USER or, in a disposable container, set IS_SANDBOX=1")
		}
	default:
		if _, err := exec.LookPath(c.Executor); err != nil {
			return cfg, fmt.Errorf("-executor %s: not %q, %q, nor an executable found (%w)", c.Executor,
				ExecutorDeterministic, ExecutorClaudeCode, unwrapExec(err))
		}
		var conf map[string]any
		if c.ExecutorConfig != "" {
			if err := json.Unmarshal([]byte(c.ExecutorConfig), &conf); err != nil {
				return cfg, fmt.Errorf("-executor-config must be a JSON object: %w", err)
			}
		}
		cfg.Executor, cfg.ExecutorType = process.New(process.Config{Path: c.Executor, Config: conf, StopGrace: c.StopGrace, Isolation: iso, Logger: log}), "process"
	}
	if ai {
		cfg.AcceptsAgents = new(true) // even when it announces blueprints too
	}
	// Deterministic runners announce their blueprints; AI runners only when -blueprints-dir is given.
	if !ai || c.blueprintsDirSet {
		bps, err := orchestrator.LoadBlueprints(c.BlueprintsDir, orchestrator.AgentTypeDeterministic)
		if err != nil {
			return cfg, fmt.Errorf("-blueprints-dir %s: %w", c.BlueprintsDir, err)
		}
		if len(bps) == 0 && !ai {
			return cfg, fmt.Errorf("-blueprints-dir %s holds no blueprint (*.json), and no AI executor is configured "+
				"(-executor claude-code or an external executable): this runner would have nothing to run", c.BlueprintsDir)
		}
		for _, b := range bps {
			if prog := programOf(b); prog != "" && (!strings.Contains(prog, "/") || filepath.IsAbs(prog)) {
				if _, err := exec.LookPath(prog); err != nil {
					log.Warn("a blueprint's program is not found on PATH; its runs will fail until it is", "blueprint", b.Name, "program", prog)
				}
			}
		}
		cfg.Blueprints = bps
	}
	return cfg, nil
}

// readToken reads -token-file, when given, into Token.
func (c *RunnerConfig) readToken(log *slog.Logger) error {
	if c.TokenFile == "" {
		return nil
	}
	if c.tokenSet {
		return errors.New("give -token or -token-file, not both")
	}
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return fmt.Errorf("-token-file: %w", err)
	}
	if c.Token = strings.TrimSpace(string(b)); c.Token == "" {
		return fmt.Errorf("-token-file %s is empty", c.TokenFile)
	}
	if fi, err := os.Stat(c.TokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the token file is readable by other users; make it mode 0600", "file", c.TokenFile, "mode", fi.Mode().Perm())
	}
	return nil
}

// checkClaude runs `claude --version`: a runner that cannot run the CLI would fail every run it takes.
func checkClaude(ctx context.Context, claude string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, claude, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("-claude %s: `%s --version` failed (%v)%s; install Claude Code or give its path with -claude",
			claude, claude, unwrapExec(err), msg)
	}
	return nil
}

// unwrapExec drops exec's repetition of the program name from a lookup error.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// programOf returns the program a deterministic blueprint's command runs ("" when it has none).
func programOf(b *orchestrator.Blueprint) string {
	argv, err := cmdline.Split(b.Command)
	if err != nil || len(argv) == 0 {
		return ""
	}
	return argv[0]
}
