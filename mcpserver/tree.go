package mcpserver

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
)

// GetSessionTreeInput is the arguments of get_session_tree.
type GetSessionTreeInput struct {
	SessionID string `json:"session_id" jsonschema:"the session whose tree to read: your own, or one you started"`
	Depth     int    `json:"depth,omitempty" jsonschema:"generations below the session to list (default: all)"`
}

// TreeSessionOutput is one session of get_session_tree's answer.
type TreeSessionOutput struct {
	SessionID       string                     `json:"session_id"`
	ParentSessionID string                     `json:"parent_session_id,omitempty" jsonschema:"absent for the session asked about"`
	AgentName       string                     `json:"agent_name"`
	Status          orchestrator.SessionStatus `json:"status"`
	Depth           int                        `json:"depth" jsonschema:"generations below the session asked about (0 for it)"`
	CostUSD         float64                    `json:"cost_usd" jsonschema:"what this session cost, in US dollars"`
	Tokens          int64                      `json:"tokens" jsonschema:"its input plus output tokens"`
	SubtreeCostUSD  float64                    `json:"subtree_cost_usd" jsonschema:"what it and all its descendants cost"`
	SubtreeTokens   int64                      `json:"subtree_tokens" jsonschema:"their input plus output tokens"`
	SubtreeSessions int                        `json:"subtree_sessions" jsonschema:"it and its descendants"`
	ChildrenOmitted int                        `json:"children_omitted,omitempty" jsonschema:"children not listed; their cost is in subtree_cost_usd"`
}

// SessionTreeOutput is the answer of get_session_tree: the tree as a list, parents before children.
type SessionTreeOutput struct {
	Sessions []TreeSessionOutput `json:"sessions"`
}

// addTreeTool adds get_session_tree: what an orchestrating agent reads to see what its children cost.
func (s *server) addTreeTool(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:  "get_session_tree",
		Title: "Get a session's tree and its cost",
		Description: `Read a session and the sessions it started (and theirs, in turn), with what each cost: {sessions: [{session_id, parent_session_id, agent_name, status, depth, cost_usd, tokens, subtree_cost_usd, subtree_tokens, subtree_sessions, children_omitted}]}, parents before children, the session asked about first.
cost_usd and tokens are the session's own; subtree_* add up the session and all its descendants, listed or not. tokens count input plus output tokens.
Use it to see what your children cost so far. depth (optional) bounds the generations listed; children_omitted says how many children a session has that are not listed.`,
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["depth"].Minimum = jsonschema.Ptr(0.0)
	}, completeOutput, s.getSessionTree)
}

func (s *server) getSessionTree(ctx context.Context, _ *mcp.CallToolRequest, in GetSessionTreeInput) (SessionTreeOutput, error) {
	p := orchestrator.TreeParams{Depth: in.Depth, MaxNodes: orchestrator.DefaultTreeNodes}
	tree, err := s.coord.SessionTree(ctx, in.SessionID, p)
	if err != nil {
		return SessionTreeOutput{}, err
	}
	out := SessionTreeOutput{Sessions: []TreeSessionOutput{}}
	type queued struct {
		n      *orchestrator.TreeNode
		parent string
		depth  int
	}
	queue := []queued{{tree.Root, "", 0}}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		n := q.n
		out.Sessions = append(out.Sessions, TreeSessionOutput{SessionID: n.SessionID, ParentSessionID: q.parent, AgentName: n.AgentName,
			Status: n.Status, Depth: q.depth, CostUSD: n.Usage.CostUSD, Tokens: n.Usage.Tokens(),
			SubtreeCostUSD: n.SubtreeUsage.CostUSD, SubtreeTokens: n.SubtreeUsage.Tokens(), SubtreeSessions: n.SubtreeUsage.Sessions,
			ChildrenOmitted: n.ChildrenOmitted})
		for _, c := range n.Children {
			queue = append(queue, queued{c, n.SessionID, q.depth + 1})
		}
	}
	return out, nil
}
