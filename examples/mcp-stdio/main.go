// Command mcp-stdio serves the orchestrator's MCP tools over stdio, against a remote coordinator, for MCP
// clients that start their servers as subprocesses (Claude Desktop, for one):
//
//	mcp-stdio -coordinator http://127.0.0.1:8765 -token "$ORCHESTRATOR_CLIENT_TOKEN"
//
// -session-id, -tags and -demands give the calling context that X-Agent-Session-Id, X-Agent-Tags and
// X-Additional-Demands give over HTTP; the session id defaults to $AGENT_SESSION_ID. Logs go to stderr:
// stdout carries the protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

func main() {
	coordinator := flag.String("coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	token := flag.String("token", os.Getenv(httpapi.EnvClientToken), "client bearer token (default $"+httpapi.EnvClientToken+")")
	sessionID := flag.String("session-id", os.Getenv("AGENT_SESSION_ID"), "calling agent's session: parent of the sessions it starts (default $AGENT_SESSION_ID)")
	tags := flag.String("tags", "", "comma-separated tags: list_agent_blueprints shows only agents carrying all of them")
	demands := flag.String("demands", "", `JSON object of demands merged into every run started, e.g. {"hostname":"build-1"}`)
	var cfg mcpserver.Config
	flag.DurationVar(&cfg.SyncWait, "sync-wait", mcpserver.DefaultSyncWait, "longest wait of a sync start before answering with the session id")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, *coordinator, *token, *sessionID, *tags, *demands, cfg); err != nil {
		log.Error("mcp-stdio failed", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, coordinator, token, sessionID, tags, demands string, cfg mcpserver.Config) error {
	d, err := mcpserver.ParseDemands(demands)
	if err != nil {
		return err
	}
	client, err := httpapi.NewClient(coordinator, httpapi.ClientConfig{Token: token, Logger: log})
	if err != nil {
		return err
	}
	cfg.SessionID, cfg.Tags, cfg.Demands, cfg.Logger = sessionID, mcpserver.ParseTags(tags), d, log
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = mcpserver.New(client, cfg).Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a normal way to end
	}
	return err
}
