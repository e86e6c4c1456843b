package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentorchestrator/orchestrator"
)

// treeFlags are ao run's flags about the session's tree: its parent, detachment and, for a root, the
// tree's limits.
type treeFlags struct {
	parent      string
	detached    bool
	maxDepth    int
	maxSessions int
}

func (t *treeFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&t.parent, "parent", "", "start the session as a child of this session (in its tree)")
	fl.BoolVar(&t.detached, "detached", false, "with --parent: the child outlives its parent (a cascading stop or the parent's failure does not reach it)")
	fl.IntVar(&t.maxDepth, "max-depth", 0, "for a root: how deep its tree may grow (the root is depth 0; at most the coordinator's limit)")
	fl.IntVar(&t.maxSessions, "max-sessions", 0, "for a root: how many sessions its tree may hold, the root included (at most the coordinator's limit)")
}

// apply sets p's tree fields from the flags.
func (t *treeFlags) apply(p *orchestrator.StartRunParams) {
	p.ParentSessionID, p.Detached = t.parent, t.detached
	if t.maxDepth != 0 || t.maxSessions != 0 {
		p.Limits = &orchestrator.TreeLimits{MaxDepth: t.maxDepth, MaxSessions: t.maxSessions}
	}
}
