package service

import (
	"flag"
	"fmt"
	"strings"
)

// Usage returns a flag.Usage function for fs that prints text — what the binary is, an example, the
// environment variables it reads — followed by its flags.
func Usage(fs *flag.FlagSet, text string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, strings.TrimSpace(text))
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
}

// coordinatorUsage is the coordinator binary's -h text, printed before its flags.
const coordinatorUsage = `
coordinator serves the orchestrator: the HTTP API, MCP at /mcp and the dashboard at /ui/, over a SQLite
file (the default) or PostgreSQL. Runners register with it and take its runs; clients (ao, curl, MCP
clients, your services) start agents through it.

Usage: coordinator [flags]

Examples:
  coordinator                                     # 127.0.0.1:8765, ./orchestrator.db, open API on loopback
  ORCHESTRATOR_ADMIN_TOKEN=a ORCHESTRATOR_CLIENT_TOKEN=c ORCHESTRATOR_RUNNER_TOKEN=r \
    coordinator -addr 0.0.0.0:8765 -db postgres://user@db/orchestrator -agents-dir ./agents

Environment:
  ORCHESTRATOR_ADMIN_TOKEN     admin bearer token(s), comma-separated (-admin-token)
  ORCHESTRATOR_CLIENT_TOKEN    client bearer token(s) (-client-token)
  ORCHESTRATOR_RUNNER_TOKEN    runner bearer token(s) (-runner-token)
  ORCHESTRATOR_WEBHOOK_SECRET  secret signing callback_url deliveries (-webhook-secret)
  ORCHESTRATOR_METRICS_TOKEN   bearer token(s) that may read GET /metrics only (-metrics-token)
  OTEL_EXPORTER_OTLP_ENDPOINT  send traces there over OTLP/HTTP (off when unset; the OTEL_* variables apply)
Without any token the API is open, and only a loopback -addr is accepted unless -insecure is given.
`

// runnerUsage is the runner binary's -h text, printed before its flags.
const runnerUsage = `
runner registers with a coordinator and executes its runs: the deterministic agents of -blueprints-dir
as subprocesses (-executor deterministic, the default), AI agents with Claude Code (-executor
claude-code), or any executable speaking the stdin protocol (-executor PATH, docs/executor-protocol.md).
It checks its settings at start and exits with an error naming the flag at fault. SIGINT/SIGTERM: stop
claiming, let runs finish (-shutdown-grace), stop the rest, deregister.

Usage: runner [flags]

Examples:
  runner -blueprints-dir ./examples/blueprints -project-dir .
  runner -executor claude-code -coordinator http://10.0.0.5:8765 -token-file /etc/orchestrator/runner-token

Environment:
  ORCHESTRATOR_RUNNER_TOKEN  runner bearer token (-token; -token-file is better)
  PATH                       where blueprints' programs, -executor and -claude are looked up
  HOME                       the default -blueprints-dir is ~/.agent-runner/blueprints
  OTEL_EXPORTER_OTLP_ENDPOINT  send traces there over OTLP/HTTP (off when unset; the OTEL_* variables apply)
The runs' processes get the runner's environment without its credentials, plus AGENT_SESSION_ID,
AGENT_RUN_ID, AGENT_ORCHESTRATOR_API_URL and AGENT_ORCHESTRATOR_TOKEN (this runner's gateway).
`
