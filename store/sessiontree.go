package store

import (
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// TreeSession is one session of a tree as [Store.SessionTree] reads it: what a tree view shows of it.
type TreeSession struct {
	ID              string
	ParentSessionID string
	AgentName       string
	Status          orchestrator.SessionStatus
	CreatedAt       time.Time
	EndedAt         *time.Time
	Usage           orchestrator.Usage
	// Depth is the session's distance from the root read (0 for the root).
	Depth int
}
