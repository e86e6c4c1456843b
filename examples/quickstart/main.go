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
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/ui"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8765", "address of the coordinator's HTTP API")
	db := flag.String("db", "orchestrator.db", "SQLite file")
	site := flag.String("site-addr", "127.0.0.1:8766", "address of the demo site the sample crawls (any free port if taken)")
	once := flag.Bool("once", false, "exit after the sample invocation instead of serving")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *addr, *db, *site, *once); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, addr, db, siteAddr string, once bool) error {
	// The example agents are Go programs: build them and put them on PATH, where blueprints find them.
	bin, err := os.MkdirTemp("", "orchestrator-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	fmt.Println("building the example agents ...")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/agents/...")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the example agents (run this from the repository root): %v\n%s", err, out)
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	blueprints, err := orchestrator.LoadBlueprints(filepath.Join("examples", "blueprints"))
	if err != nil {
		return err
	}

	store, err := sqlstore.New(ctx, db, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	coord, err := coordinator.New(coordinator.Config{Store: store, Logger: log})
	if err != nil {
		return err
	}
	if err := coord.Start(ctx); err != nil {
		return err
	}
	defer coord.Stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w (is another coordinator running? use -addr)", err)
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	api := httpapi.NewHandler(coord, httpapi.Config{Logger: log, MCP: mcpserver.NewHandler(coord, mcpserver.Config{Logger: log}),
		UI: ui.NewHandler()})
	go func() {
		served <- httpapi.Serve(serveCtx, ln, api, 5*time.Second, log)
	}()
	defer func() { stopServing(); <-served }()

	gw := gateway.New(coord, gateway.Config{Logger: log})
	defer gw.Close()
	worker, err := runner.New(runner.Config{
		Coordinator: coord, Blueprints: blueprints, Gateway: gw, Logger: log,
		Executor: deterministic.New(deterministic.Config{Logger: log}),
	})
	if err != nil {
		return err
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-ran }()
	<-worker.Registered()

	base := "http://" + ln.Addr().String()
	siteURL, stopSite, err := serveDemoSite(siteAddr)
	if err != nil {
		return err
	}
	defer stopSite()
	session, err := sample(ctx, base, siteURL)
	if err != nil {
		return err
	}
	if once {
		return nil
	}
	printTryNext(base, session, siteURL)
	<-ctx.Done()
	return nil
}
