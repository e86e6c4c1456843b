package endcount_test

import (
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/endcount"
)

// The counter is the coordinator's metrics hook, and forwards to one: both interfaces have one method set.
var (
	_ coordinator.Metrics = (*endcount.Counter)(nil)
	_ endcount.Metrics    = coordinator.Metrics(nil)
)
