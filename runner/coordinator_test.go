package runner_test

import (
	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
)

// A runner takes the in-process coordinator, the HTTP client, and any orchestrator.Coordinator.
var (
	_ runner.Coordinator = (*coordinator.Coordinator)(nil)
	_ runner.Coordinator = (*httpapi.Client)(nil)
	_ runner.Coordinator = orchestrator.Coordinator(nil)
)
