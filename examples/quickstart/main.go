// Command quickstart runs the whole system in one process on the embedded SQLite default: a coordinator
// serving the HTTP API (and the dashboard at /ui/) on 127.0.0.1:8765, a runner with the example blueprints
// (examples/blueprints), and a sample invocation of the web-crawler agent against a small demo site (served on
// 127.0.0.1:8766). Then it keeps serving, the demo site too, and prints ao and curl commands to try next,
// with the client token they need. Run it from the repository root:
//
//	go run ./examples/quickstart
//
// Its API takes bearer tokens, a client's and an admin's: $ORCHESTRATOR_CLIENT_TOKEN and
// $ORCHESTRATOR_ADMIN_TOKEN, or new random ones at each start. An open API on loopback would be reachable
// by every program and every user of the machine; the tokens leave it to the person who started it.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/service"
)

func main() {
	tok := newTokens(os.Getenv)
	cfg := coordinatorConfig(tok)
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8765", "address of the coordinator's HTTP API")
	flag.StringVar(&cfg.DB, "db", "orchestrator.db", "SQLite file")
	site := flag.String("site-addr", "127.0.0.1:8766", "address of the demo site the sample crawls (any free port if taken)")
	once := flag.Bool("once", false, "exit after the sample invocation instead of serving")
	flag.Usage = service.Usage(flag.CommandLine, usage)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, &cfg, tok, *site, *once); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// coordinatorConfig is the quickstart's coordinator: the dashboard, and Prometheus metrics at GET /metrics
// (for the admin token), as a production coordinator serves them.
func coordinatorConfig(tok tokens) service.CoordinatorConfig {
	return service.CoordinatorConfig{UI: true, Metrics: true, ClientTokens: tok.client, AdminTokens: tok.admin}
}

// checkAddr says, before anything is built or started, when the API's address cannot be listened on:
// most often another quickstart or coordinator holds the port.
func checkAddr(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (-addr): %v; is another quickstart or coordinator running? Stop it, or choose another address with -addr", addr, err)
	}
	return l.Close()
}

func run(ctx context.Context, log *slog.Logger, cfg *service.CoordinatorConfig, tok tokens, siteAddr string, once bool) error {
	fmt.Printf("quickstart: a coordinator on %s (SQLite %s), a runner with the example agents, and a sample crawl of a demo site\n", cfg.Addr, cfg.DB)
	if err := checkAddr(cfg.Addr); err != nil {
		return err
	}
	base, stopSystem, err := startSystem(ctx, log, cfg)
	if err != nil {
		return err
	}
	defer stopSystem()
	siteURL, stopSite, err := serveDemoSite(siteAddr)
	if err != nil {
		return err
	}
	defer stopSite()
	session, err := sample(ctx, base, tok.client, siteURL)
	if err != nil || once {
		return err
	}
	printTryNext(os.Stdout, base, session, siteURL, tok)
	<-ctx.Done()
	return nil
}

// tokens are the API's bearer tokens: the client's, which ao, curl and the dashboard use, and the admin's,
// for the agent registry and the runners.
type tokens struct{ client, admin string }

// newTokens takes the tokens from $ORCHESTRATOR_CLIENT_TOKEN and $ORCHESTRATOR_ADMIN_TOKEN, or makes new
// random ones: a person who restarts the quickstart with them set keeps the ones ao already uses.
func newTokens(getenv func(string) string) tokens {
	t := tokens{client: getenv(httpapi.EnvClientToken), admin: getenv(httpapi.EnvAdminToken)}
	if t.client == "" {
		t.client = "aoc_" + rand.Text()
	}
	if t.admin == "" {
		t.admin = "aoa_" + rand.Text()
	}
	return t
}
