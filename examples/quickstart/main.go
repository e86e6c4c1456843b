// Command quickstart runs the whole system in one process on the embedded SQLite default: a coordinator
// serving the HTTP API (and the dashboard at /ui/) on 127.0.0.1:8765, a runner with the example blueprints
// (examples/blueprints), and a sample invocation of the web-crawler agent against a small demo site (served on
// 127.0.0.1:8766). Then it keeps serving, the demo site too, and prints ao and curl commands to try next. Run
// it from the repository root:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentorchestrator/orchestrator/service"
)

func main() {
	cfg := service.CoordinatorConfig{UI: true} // open API on loopback; the coordinator's defaults
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8765", "address of the coordinator's HTTP API")
	flag.StringVar(&cfg.DB, "db", "orchestrator.db", "SQLite file")
	site := flag.String("site-addr", "127.0.0.1:8766", "address of the demo site the sample crawls (any free port if taken)")
	once := flag.Bool("once", false, "exit after the sample invocation instead of serving")
	flag.Usage = service.Usage(flag.CommandLine, usage)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, &cfg, *site, *once); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, cfg *service.CoordinatorConfig, siteAddr string, once bool) error {
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
	session, err := sample(ctx, base, siteURL)
	if err != nil || once {
		return err
	}
	printTryNext(base, session, siteURL)
	<-ctx.Done()
	return nil
}
