package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/tags"
)

// Headers carrying the calling agent's context (see the package documentation).
const (
	// HeaderSessionID names the calling agent's session (the same header the HTTP API reads).
	HeaderSessionID = "X-Agent-Session-Id"
	// HeaderTags lists the tags (comma-separated) the calling agent may discover agents by.
	HeaderTags = "X-Agent-Tags"
	// HeaderDemands is a JSON object of orchestrator.Demands merged into every run the agent starts.
	HeaderDemands = "X-Additional-Demands"
)

// Defaults of [Config].
const (
	DefaultSyncWait         = 10 * time.Minute
	DefaultProgressInterval = 15 * time.Second
	DefaultListLimit        = 20
	MaxListLimit            = 200
)

// Config configures the MCP server. The zero value is ready to use.
type Config struct {
	// Name and Version identify the server to clients. Defaults "agent-orchestrator" and "dev".
	Name, Version string
	// Instructions are sent to clients when they connect (many put them into the model's context).
	// Default: a short guide to the tools (see [DefaultInstructions]).
	Instructions string

	// SyncWait bounds how long a sync start_agent_session or resume_agent_session waits for the run it
	// started to end before answering with the session's id and current status. Default 10 minutes. Keep
	// it below the MCP client's tool timeout.
	SyncWait time.Duration
	// MaxResultWait caps get_agent_session_result's wait_seconds (larger values are clamped). Default:
	// SyncWait.
	MaxResultWait time.Duration
	// ProgressInterval is how often a waiting call sends a progress notification to a client that asked
	// for progress (sent a progress token). Default 15s.
	ProgressInterval time.Duration

	// SessionID, Tags and Demands are the calling context when requests carry no headers (stdio): the
	// equivalents of X-Agent-Session-Id, X-Agent-Tags and X-Additional-Demands. With headers too, the
	// header's session id wins, tags are united and demands merged.
	SessionID string
	Tags      []string
	Demands   *orchestrator.Demands

	// HTTPOptions configure [NewHandler]'s streamable HTTP transport. Nil means stateless mode (with
	// PropagateRequestCancellation): every request stands alone (the tools keep no per-client state and
	// read their context from each request's headers), so the endpoint needs no session memory and works
	// behind a load balancer in front of several coordinator replicas. A client's notifications/cancelled
	// reaches its call only on the replica that runs the call: route requests by their Mcp-Session-Id
	// header (sticky sessions) for cancellation to work across replicas.
	HTTPOptions *mcp.StreamableHTTPOptions

	// Logger receives internal errors (the model is told only that something failed), and the MCP SDK's
	// own records, its INFO ones (several per HTTP request) as DEBUG. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "agent-orchestrator"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Instructions == "" {
		c.Instructions = DefaultInstructions
	}
	if c.SyncWait <= 0 {
		c.SyncWait = DefaultSyncWait
	}
	if c.MaxResultWait <= 0 {
		c.MaxResultWait = c.SyncWait
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// DefaultInstructions is the default of [Config.Instructions].
const DefaultInstructions = `This server starts and tracks agents: AI agents (driven by a prompt, resumable) and deterministic programs (typed parameters, structured output), all invoked the same way.
1. list_agent_blueprints shows the agents with their type and parameters_schema.
2. start_agent_session(agent_name, parameters) runs one; build parameters from its parameters_schema (AI agents without one take {"prompt": "..."}). Invalid parameters come back with every error and the schema: fix them and call again.
3. sync mode returns the result; async_poll returns a session_id to follow with get_agent_session_result; async_callback resumes you with the result when the agent ends.
4. start_agent_sessions starts many at once (async, all or none).`

// server holds what every tool handler needs.
type server struct {
	coord orchestrator.Coordinator
	cfg   Config
	log   *slog.Logger
}

// New returns an MCP server exposing coord through the orchestrator's tools. Serve it with
// [mcp.Server.Run] over a transport (mcp.StdioTransport), or over HTTP with [NewHandler].
func New(coord orchestrator.Coordinator, cfg Config) *mcp.Server {
	cfg = cfg.withDefaults()
	s := &server{coord: coord, cfg: cfg, log: cfg.Logger}
	// Capabilities: tools, without listChanged. The tool set never changes, and a stateless server could not
	// send the notification anyway (it has no connection to the client outside a request). No logging.
	srv := mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "Agent Orchestrator", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: cfg.Instructions, Logger: sdkLogger(cfg.Logger),
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.addTools(srv)
	return srv
}

// NewHandler returns an http.Handler serving the server over MCP's streamable HTTP transport; mount it at
// /mcp. Each tool call reads its calling context from the headers of the HTTP request that carried it
// (X-Agent-Session-Id, X-Agent-Tags, X-Additional-Demands), so one server serves every agent. The handler
// does no authentication: wrap it with the coordinator's (client role) when tokens are configured. In the
// default stateless mode, values a middleware puts into a request's context (an authenticator's scope)
// reach the Coordinator calls made by the tool call that request carries.
//
// In stateless mode the handler also routes cancellations (notifications/cancelled) to the calls they
// name, which the SDK alone cannot do there; see the package documentation.
func NewHandler(coord orchestrator.Coordinator, cfg Config) http.Handler {
	srv := New(coord, cfg)
	opts := cfg.HTTPOptions
	if opts == nil {
		opts = &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true, Logger: sdkLogger(cfg.Logger)}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	if !opts.Stateless {
		return h // the SDK keeps sessions, and routes cancellations within them
	}
	return newCancelRouter(h, opts.MaxRequestBodyBytes)
}

// caller is the calling agent's context for one tool call. A malformed header is kept as an error of its
// own, reported by the tools that read that header only.
type caller struct {
	sessionID  string
	tags       []string
	demands    *orchestrator.Demands
	tagsErr    error
	demandsErr error
}

// headerError reports a malformed calling-context header: the MCP client's configuration, not something
// the model can fix with other arguments (see invalidHeaderHint).
func headerError(header, format string, args ...any) error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_header", "header %s: %s", header, fmt.Sprintf(format, args...)).
		With("header", header)
}

// caller reads the calling context: the request's headers (over HTTP) on top of the configured defaults.
func (s *server) caller(req *mcp.CallToolRequest) caller {
	c := caller{sessionID: s.cfg.SessionID, tags: slices.Clone(s.cfg.Tags)}
	if s.cfg.Demands != nil {
		d := *s.cfg.Demands
		c.demands = &d
	}
	var h http.Header
	if req != nil && req.Extra != nil {
		h = req.Extra.Header
	}
	if h == nil {
		return c
	}
	if id := strings.TrimSpace(h.Get(HeaderSessionID)); id != "" {
		c.sessionID = id
	}
	for _, v := range h.Values(HeaderTags) {
		tags := ParseTags(v)
		// Tags follow the demands' rules (1-64 characters, no spaces).
		if err := (orchestrator.Demands{Tags: tags}).Validate(); err != nil {
			c.tagsErr = headerError(HeaderTags, "%v (a comma-separated list)", err)
		}
		for _, t := range tags {
			if !slices.Contains(c.tags, t) {
				c.tags = append(c.tags, t)
			}
		}
	}
	if v := strings.TrimSpace(strings.Join(h.Values(HeaderDemands), "")); v != "" {
		d, err := ParseDemands(v)
		if err != nil {
			c.demandsErr = headerError(HeaderDemands, "%v", err)
		} else if c.demands == nil {
			c.demands = d
		} else if merged, err := c.demands.Merge(*d); err != nil {
			c.demandsErr = headerError(HeaderDemands, "it contradicts the server's configured demands: %v", err)
		} else {
			c.demands = &merged
		}
	}
	return c
}

// ParseTags splits a comma-separated tag list (the X-Agent-Tags header, a -tags flag), trimming spaces and
// dropping empty items.
func ParseTags(s string) []string {
	return tags.Split(s)
}

// ParseDemands decodes a JSON object of [orchestrator.Demands] (the X-Additional-Demands header, a
// -demands flag) strictly: an unknown key is an error, as is a malformed value. Empty input means none.
func ParseDemands(s string) (*orchestrator.Demands, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var d orchestrator.Demands
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("demands must be a JSON object with hostname, project_dir, executor_type, executor_profile, tags, runner_id: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("demands must be one JSON object, with nothing after it")
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}
