package orchestrator

import "time"

// TreeParams bounds what [Coordinator.SessionTree] lists. Whatever it leaves out, every node's
// SubtreeUsage counts its whole subtree.
type TreeParams struct {
	// Depth is how many generations below the root are listed: 1 the root's children, 2 their children
	// too, and so on. 0 (the default) lists every generation; a negative depth lists the root alone
	// (GET …/tree?depth=0).
	Depth int
	// MaxChildren bounds the children listed under one node, oldest first. Default 100, at most 1,000.
	MaxChildren int
	// MaxNodes bounds the nodes listed in all, filled generation by generation (breadth first), so that a
	// capped tree shows its top. Default 1,000, at most 10,000.
	MaxNodes int
}

// Defaults and bounds of [TreeParams], and how many sessions one tree read takes from the store.
const (
	DefaultTreeChildren = 100
	MaxTreeChildren     = 1000
	DefaultTreeNodes    = 1000
	MaxTreeNodes        = 10000
	// MaxTreeRead bounds the sessions a tree read sums: a tree larger than this (a coordinator's tree
	// limits normally keep trees far smaller) is answered with Truncated set and sums of the part read.
	MaxTreeRead = 100000
)

// SessionTree is a session and its descendants — the sessions it started, theirs in turn — with the usage
// of each and the sums of each subtree (GET /sessions/{id}/tree).
type SessionTree struct {
	Root *TreeNode `json:"root"`
	// Truncated is set when the tree has more than MaxTreeRead sessions: the sums then count the first
	// MaxTreeRead, generation by generation.
	Truncated bool `json:"truncated,omitempty"`
}

// TreeNode is one session of a [SessionTree].
type TreeNode struct {
	SessionID string        `json:"session_id"`
	AgentName string        `json:"agent_name"`
	Status    SessionStatus `json:"status"`
	CreatedAt time.Time     `json:"created_at"`
	EndedAt   *time.Time    `json:"ended_at,omitempty"`
	// Usage is the session's own usage ([Session.Usage]).
	Usage Usage `json:"usage"`
	// SubtreeUsage sums the usage of the session and all its descendants, listed or not.
	SubtreeUsage SubtreeUsage `json:"subtree_usage"`
	// Children are the session's children listed, oldest first (empty, never null).
	Children []*TreeNode `json:"children"`
	// ChildrenOmitted counts the children not listed — beyond the depth asked for, MaxChildren or
	// MaxNodes. Their usage is in SubtreeUsage all the same.
	ChildrenOmitted int `json:"children_omitted,omitempty"`
}

// SubtreeUsage is the usage of a session and its descendants, and how many sessions that is.
type SubtreeUsage struct {
	Usage
	// Sessions counts the session and its descendants.
	Sessions int `json:"sessions"`
}
