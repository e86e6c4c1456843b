package main

import (
	"context"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// startBatch creates runs in one call.
func startBatch(ctx context.Context, coord *coordinator.Coordinator, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	return coord.StartRuns(ctx, ps)
}
