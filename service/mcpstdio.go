package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// MCPStdioConfig configures the MCP server over stdio: the orchestrator's MCP tools against a remote
// coordinator, for MCP clients that start their servers as subprocesses.
type MCPStdioConfig struct {
	// CoordinatorURL is the coordinator's base URL (-coordinator). Default http://127.0.0.1:8765.
	CoordinatorURL string
	// Token is the client bearer token (-token; default $ORCHESTRATOR_CLIENT_TOKEN).
	Token string
	// SessionID, Tags and Demands give the calling context (-session-id, default $AGENT_SESSION_ID; -tags,
	// comma-separated; -demands, a JSON object), as the X-Agent-* headers do over HTTP.
	SessionID, Tags, Demands string
	// MCP is the server's configuration; the service sets its SessionID, Tags, Demands and Logger.
	MCP mcpserver.Config
	// Log chooses the log format and level (-log-format, -log-level). Logs go to stderr: stdout carries
	// the protocol.
	Log LogConfig
}

// RegisterFlags registers the service's flags on fs, and sets fs.Usage to the mcp-stdio binary's -h.
func (c *MCPStdioConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Usage = Usage(fs, mcpStdioUsage)
	fs.StringVar(&c.CoordinatorURL, "coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	fs.StringVar(&c.Token, "token", os.Getenv(httpapi.EnvClientToken), "client bearer token (default $"+httpapi.EnvClientToken+")")
	fs.StringVar(&c.SessionID, "session-id", os.Getenv("AGENT_SESSION_ID"), "calling agent's session: parent of the sessions it starts (default $AGENT_SESSION_ID)")
	fs.StringVar(&c.Tags, "tags", "", "comma-separated tags: list_agent_blueprints shows only agents carrying all of them")
	fs.StringVar(&c.Demands, "demands", "", `JSON object of demands merged into every run started, e.g. {"hostname":"build-1"}`)
	fs.DurationVar(&c.MCP.SyncWait, "sync-wait", mcpserver.DefaultSyncWait, "longest wait of a sync start before answering with the session id")
	c.Log.RegisterFlags(fs)
}

// Run serves MCP on stdin and stdout until the client closes them or ctx ends (a normal end: nil). It
// first checks the token with the coordinator, and returns an error at once when the coordinator refuses
// it.
func (c *MCPStdioConfig) Run(ctx context.Context, log *slog.Logger) error {
	d, err := mcpserver.ParseDemands(c.Demands)
	if err != nil {
		return fmt.Errorf("-demands: %w", err)
	}
	client, err := httpapi.NewClient(c.CoordinatorURL, httpapi.ClientConfig{Token: c.Token, Logger: log})
	if err != nil {
		return fmt.Errorf("-coordinator %s: %w", c.CoordinatorURL, err)
	}
	if err := checkToken(ctx, client, c.CoordinatorURL, log); err != nil {
		return err
	}
	cfg := c.MCP
	cfg.SessionID, cfg.Tags, cfg.Demands, cfg.Logger = c.SessionID, mcpserver.ParseTags(c.Tags), d, log
	err = mcpserver.New(client, cfg).Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a normal way to end
	}
	return err
}

// tokenCheckTimeout bounds the token check at start (the client retries a coordinator that does not
// answer).
const tokenCheckTimeout = 15 * time.Second

// checkToken asks the coordinator for its agents before serving: a token it refuses would otherwise let
// the server start and then fail every tool call, and an MCP client shows a server that exits at once
// as failed, with this message in its log. A coordinator that cannot be reached is only a warning: it may
// come up later, and the tools say so in the meantime.
func checkToken(ctx context.Context, client orchestrator.Coordinator, url string, log *slog.Logger) error {
	cctx, cancel := context.WithTimeout(ctx, tokenCheckTimeout)
	defer cancel()
	_, err := client.ListAgents(cctx, orchestrator.ListAgentsParams{})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, orchestrator.ErrUnauthorized), errors.Is(err, orchestrator.ErrForbidden):
		return fmt.Errorf("the coordinator at %s refused the client token (-token, or $%s): %w",
			httpapi.RedactURL(url), httpapi.EnvClientToken, err)
	case ctx.Err() != nil:
		return nil // ending anyway
	default:
		log.Warn("cannot check the client token: the coordinator did not answer; serving anyway", "coordinator", httpapi.RedactURL(url), "err", err)
		return nil
	}
}

// mcpStdioUsage is the mcp-stdio binary's -h text, printed before its flags.
const mcpStdioUsage = `
mcp-stdio serves the orchestrator's MCP tools (list, start and follow agents) over stdio, against a
remote coordinator, for MCP clients that start their servers as subprocesses (Claude Desktop, for one).
Logs go to stderr: stdout carries the protocol.

Usage: mcp-stdio [flags]

Example (an MCP client's server entry runs):
  mcp-stdio -coordinator http://127.0.0.1:8765 -tags research

Environment:
  ORCHESTRATOR_CLIENT_TOKEN  client bearer token (-token)
  AGENT_SESSION_ID           the calling agent's session, parent of the sessions it starts (-session-id)
`
