// Command ao is the command line for people of Agent Orchestrator: it lists agents, sessions and runners,
// runs agents and follows them live, shows logs and results, and stops and resumes sessions, through a
// coordinator's HTTP API.
//
//	go install github.com/agentorchestrator/orchestrator/cmd/ao@latest
//	ao agents
//	ao run web-crawler -p url=https://example.com -p depth=1
//	ao logs -f SESSION
//
// ao --help and ao COMMAND --help tell the rest.
package main

import (
	"os"

	"github.com/agentorchestrator/orchestrator/cmd/ao/internal/cli"
)

func main() { os.Exit(cli.Main()) }
