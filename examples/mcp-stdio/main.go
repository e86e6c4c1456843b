// Command mcp-stdio serves the orchestrator's MCP tools over stdio, against a remote coordinator, for MCP
// clients that start their servers as subprocesses (Claude Desktop, for one):
//
//	mcp-stdio -coordinator http://127.0.0.1:8765 -token "$ORCHESTRATOR_CLIENT_TOKEN"
//
// -session-id, -tags and -demands give the calling context that X-Agent-Session-Id, X-Agent-Tags and
// X-Additional-Demands give over HTTP; the session id defaults to $AGENT_SESSION_ID. It checks the token
// with the coordinator before serving, and exits with status 1 and a message naming the token's flag and
// variable when the coordinator refuses it (an MCP client then shows the server as failed). Logs go to
// stderr: stdout carries the protocol. `mcp-stdio -h` lists every flag; the wiring is package service's
// [service.MCPStdioConfig].
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
	var cfg service.MCPStdioConfig
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	log := cfg.Log.New(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cfg.Run(ctx, log); err != nil {
		log.Error("mcp-stdio failed", "err", err)
		os.Exit(1)
	}
}
