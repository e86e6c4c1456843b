package proc_test

import (
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/executor/claudecode"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/process"
)

// TestDefaultsMatchTheExecutors: each executor documents the shared defaults as its own constants (so
// that its documentation shows the values); they must be the ones SetDefaults applies.
func TestDefaultsMatchTheExecutors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		stopGrace     time.Duration
		maxStderrLine int
	}{
		{"deterministic", deterministic.DefaultStopGrace, deterministic.DefaultMaxStderrLine},
		{"process", process.DefaultStopGrace, process.DefaultMaxStderrLine},
		{"claudecode", claudecode.DefaultStopGrace, claudecode.DefaultMaxStderrLine},
	} {
		if tc.stopGrace != proc.DefaultStopGrace || tc.maxStderrLine != proc.DefaultMaxStderrLine {
			t.Errorf("%s: defaults %v, %d; want %v, %d", tc.name, tc.stopGrace, tc.maxStderrLine,
				proc.DefaultStopGrace, proc.DefaultMaxStderrLine)
		}
	}
}
