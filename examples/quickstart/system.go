package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/service"
)

const usage = `
quickstart runs the whole orchestrator in one process, to try it: a coordinator (HTTP API, MCP at /mcp,
the dashboard at /ui/) on a SQLite file, a runner with the example agents of examples/blueprints, and a
sample crawl of a small demo site. Then it keeps serving and prints ao and curl commands to try next,
with the token they need.
Run it from the repository root; it builds the example agents with the go command first.

Usage: go run ./examples/quickstart [flags]

Example:
  go run ./examples/quickstart -addr 127.0.0.1:9000 -once

Environment:
  ORCHESTRATOR_CLIENT_TOKEN  the client token its API takes (default: a new random one at each start,
                             printed with the commands to try; ao reads it as ORCHESTRATOR_TOKEN)
  ORCHESTRATOR_ADMIN_TOKEN   the admin token (default: a new random one, printed)
The go command must be on PATH.
`

// startSystem builds the example agents, opens the store, starts the coordinator service and a runner
// in this process, and returns the API's URL and a function that stops it all.
func startSystem(ctx context.Context, log *slog.Logger, cfg *service.CoordinatorConfig) (string, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (string, func(), error) { stop(); return "", nil, err }
	// The example agents are Go programs: build them and put them on PATH, where blueprints find them.
	bin, err := os.MkdirTemp("", "orchestrator-quickstart-")
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { os.RemoveAll(bin) })
	fmt.Println("building the example agents (go build ./examples/agents/...; the first time takes a few minutes) ...")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/agents/...")
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building the example agents (run this from the repository root): %v\n%s", err, out))
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	blueprints, err := orchestrator.LoadBlueprints(filepath.Join("examples", "blueprints"), orchestrator.AgentTypeDeterministic)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("opening %s and starting the coordinator on %s ...\n", cfg.DB, cfg.Addr)
	store, err := cfg.OpenStore(ctx, log)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { store.Close() })
	srv, err := cfg.Start(ctx, store, log)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, func() { srv.Close() })

	fmt.Printf("starting a runner with the %d example agents ...\n", len(blueprints))
	gw := gateway.New(srv.Coordinator, gateway.Config{Logger: log})
	stops = append(stops, func() { gw.Close() })
	worker, err := runner.New(runner.Config{
		Coordinator: srv.Coordinator, Blueprints: blueprints, Gateway: gw, Logger: log,
		Executor: deterministic.New(deterministic.Config{Logger: log}),
	})
	if err != nil {
		return fail(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- worker.Run(runCtx) }()
	stops = append(stops, func() { stopRunner(); <-ran })
	select {
	case <-worker.Registered():
		return srv.URL, stop, nil
	case err := <-ran: // registration refused
		ran <- err
		return fail(err)
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}
