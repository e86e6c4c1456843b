package main

import (
	"context"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// startBatch creates runs in one call.
func startBatch(context.Context, *coordinator.Coordinator, []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	return nil, errNoBatch
}
