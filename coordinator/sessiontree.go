package coordinator

import (
	"context"
	"errors"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// SessionTree implements [orchestrator.Coordinator]: one store read of the whole tree (up to
// [orchestrator.MaxTreeRead] sessions), the sums of every subtree from it, and the nodes listed within
// p's bounds (docs/usage.md, "The tree").
func (c *Coordinator) SessionTree(ctx context.Context, id string, p orchestrator.TreeParams) (*orchestrator.SessionTree, error) {
	if err := checkTreeParams(&p); err != nil {
		return nil, err
	}
	rows, err := c.store.SessionTree(ctx, id, orchestrator.MaxTreeRead+1)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, notFound("session", id)
	}
	if err != nil {
		return nil, err
	}
	truncated := len(rows) > orchestrator.MaxTreeRead
	if truncated {
		rows = rows[:orchestrator.MaxTreeRead]
	}
	return &orchestrator.SessionTree{Root: buildTree(rows, p), Truncated: truncated}, nil
}

// checkTreeParams applies the defaults of p and refuses what is out of bounds.
func checkTreeParams(p *orchestrator.TreeParams) error {
	switch {
	case p.MaxChildren == 0:
		p.MaxChildren = orchestrator.DefaultTreeChildren
	case p.MaxChildren < 0 || p.MaxChildren > orchestrator.MaxTreeChildren:
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "max_children must be between 1 and %d", orchestrator.MaxTreeChildren)
	}
	switch {
	case p.MaxNodes == 0:
		p.MaxNodes = orchestrator.DefaultTreeNodes
	case p.MaxNodes < 0 || p.MaxNodes > orchestrator.MaxTreeNodes:
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "max_nodes must be between 1 and %d", orchestrator.MaxTreeNodes)
	}
	return nil
}

// buildTree builds the tree of rows (the root first, generation by generation, as the store reads them):
// every session's own usage, the sums of every subtree, and the nodes p lets through.
func buildTree(rows []*store.TreeSession, p orchestrator.TreeParams) *orchestrator.TreeNode {
	// Sums first, over everything read: children come after their parents in rows, so one pass from the
	// end adds each finished subtree into its parent's.
	index := make(map[string]int, len(rows))
	for i, r := range rows {
		if _, seen := index[r.ID]; !seen {
			index[r.ID] = i
		}
	}
	sums := make([]orchestrator.SubtreeUsage, len(rows))
	parent := make([]int, len(rows)) // -1 for the root, and for a row read twice or without its parent
	children := make([][]int, len(rows))
	for i, r := range rows {
		parent[i] = -1
		sums[i] = orchestrator.SubtreeUsage{Usage: r.Usage, Sessions: 1}
		if i == 0 || index[r.ID] != i {
			continue
		}
		if pi, ok := index[r.ParentSessionID]; ok && pi < i {
			parent[i] = pi
			children[pi] = append(children[pi], i) // oldest first: rows are in creation order per generation
		}
	}
	for i := len(rows) - 1; i > 0; i-- {
		if pi := parent[i]; pi >= 0 {
			sums[pi].Add(sums[i].Usage)
			sums[pi].Sessions += sums[i].Sessions
		}
	}

	node := func(i int) *orchestrator.TreeNode {
		r := rows[i]
		return &orchestrator.TreeNode{SessionID: r.ID, AgentName: r.AgentName, Status: r.Status, CreatedAt: r.CreatedAt,
			EndedAt: r.EndedAt, Usage: r.Usage, SubtreeUsage: sums[i], Children: []*orchestrator.TreeNode{}}
	}
	// Then the nodes, breadth first, so that a tree capped by MaxNodes shows its top generations.
	root := node(0)
	type queued struct {
		row  int
		node *orchestrator.TreeNode
	}
	queue := []queued{{0, root}}
	listed := 1
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		kids := children[q.row]
		if p.Depth < 0 || (p.Depth > 0 && rows[q.row].Depth >= p.Depth) {
			q.node.ChildrenOmitted = len(kids)
			continue
		}
		for k, ci := range kids {
			if k >= p.MaxChildren || listed >= p.MaxNodes {
				q.node.ChildrenOmitted = len(kids) - k
				break
			}
			child := node(ci)
			q.node.Children = append(q.node.Children, child)
			listed++
			queue = append(queue, queued{ci, child})
		}
	}
	return root
}
