// Command runner registers with a coordinator and executes runs through one executor:
//
//	go run ./examples/runner -blueprints-dir ./examples/blueprints          # deterministic agents
//	go run ./examples/runner -executor claude-code [-claude /path/to/claude] # AI agents, Claude Code
//	go run ./examples/runner -executor ./examples/executors/python/ao-echo-exec [-executor-config '{"k":1}']
//
// -executor deterministic (the default) announces the agents in -blueprints-dir and runs their commands as
// subprocesses; claude-code runs AI agents with the Claude Code CLI; any other value is an external
// executable speaking the stdin protocol (docs/executor-protocol.md). Programs run in -project-dir and
// reach the coordinator only through the runner's loopback gateway; the runner's token (-token-file,
// -token or ORCHESTRATOR_RUNNER_TOKEN) never reaches them, and with -run-as USER they run as that user.
// The runner checks its settings at start and exits with an error naming the flag at fault.
// `runner -h` lists every flag; the wiring is package service's [service.RunnerConfig].
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentorchestrator/orchestrator/service"
)

func main() {
	var cfg service.RunnerConfig
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	log := cfg.Log.New(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cfg.Run(ctx, log); err != nil {
		log.Error("runner failed", "err", err)
		os.Exit(1)
	}
}
