package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestSessionTree: a tree three generations deep, with the usage of each session and the sums of each
// subtree, and the bounds of what is listed — depth, children per node, nodes in all — which never change
// the sums.
func TestSessionTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "planner")
	child := func(parent string) string {
		t.Helper()
		return start(t, c, orchestrator.StartRunParams{AgentName: "planner", Prompt: "p", ParentSessionID: parent}).SessionID
	}
	spend := func(id string, in int64, cost float64) {
		t.Helper()
		data := fmt.Sprintf(`{"model":"m","input_tokens":%d,"cost_usd":%g}`, in, cost)
		if _, err := c.AppendEvents(ctx, id, []orchestrator.Event{{Type: orchestrator.EventUsage, Data: json.RawMessage(data)}}); err != nil {
			t.Fatal(err)
		}
	}
	// root ─┬─ a ─┬─ a1 ── a1x
	//       │     └─ a2
	//       └─ b
	root := child("")
	a := child(root)
	b := child(root)
	a1 := child(a)
	a2 := child(a)
	a1x := child(a1)
	spend(root, 1, 0.5)
	spend(a, 10, 0.25)
	spend(a1, 100, 0.125)
	spend(a1x, 1000, 1)
	spend(a2, 10000, 0.0625)
	spend(b, 100000, 2)

	tree, err := c.SessionTree(ctx, root, orchestrator.TreeParams{})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *orchestrator.TreeNode, indent string) string
	walk = func(n *orchestrator.TreeNode, indent string) string {
		out := fmt.Sprintf("%s%s in=%d sub_in=%d sub_cost=%g sessions=%d omitted=%d\n", indent, n.SessionID, n.Usage.InputTokens,
			n.SubtreeUsage.InputTokens, n.SubtreeUsage.CostUSD, n.SubtreeUsage.Sessions, n.ChildrenOmitted)
		for _, ch := range n.Children {
			out += walk(ch, indent+"  ")
		}
		return out
	}
	want := fmt.Sprintf(`%s in=1 sub_in=111111 sub_cost=3.9375 sessions=6 omitted=0
  %s in=10 sub_in=11110 sub_cost=1.4375 sessions=4 omitted=0
    %s in=100 sub_in=1100 sub_cost=1.125 sessions=2 omitted=0
      %s in=1000 sub_in=1000 sub_cost=1 sessions=1 omitted=0
    %s in=10000 sub_in=10000 sub_cost=0.0625 sessions=1 omitted=0
  %s in=100000 sub_in=100000 sub_cost=2 sessions=1 omitted=0
`, root, a, a1, a1x, a2, b)
	if got := walk(tree.Root, ""); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if tree.Root.AgentName != "planner" || tree.Root.Status != orchestrator.SessionPending || tree.Root.CreatedAt.IsZero() || tree.Truncated {
		t.Errorf("root node %+v", tree.Root)
	}

	for _, tc := range []struct {
		p    orchestrator.TreeParams
		want string // session ids listed breadth first, with children omitted where any are
	}{
		{orchestrator.TreeParams{Depth: -1}, "root(2)"},
		{orchestrator.TreeParams{Depth: 1}, "root a(2) b"},
		{orchestrator.TreeParams{Depth: 2}, "root a b a1(1) a2"},
		{orchestrator.TreeParams{MaxChildren: 1}, "root(1) a(1) a1 a1x"},
		{orchestrator.TreeParams{MaxNodes: 3}, "root a(2) b"},
		{orchestrator.TreeParams{MaxNodes: 4}, "root a(1) b a1(1)"},
	} {
		tree, err := c.SessionTree(ctx, root, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{root: "root", a: "a", b: "b", a1: "a1", a2: "a2", a1x: "a1x"}
		var got string
		queue := []*orchestrator.TreeNode{tree.Root}
		for len(queue) > 0 {
			n := queue[0]
			queue = append(queue[1:], n.Children...)
			if got != "" {
				got += " "
			}
			got += names[n.SessionID]
			if n.ChildrenOmitted > 0 {
				got += fmt.Sprintf("(%d)", n.ChildrenOmitted)
			}
		}
		if got != tc.want || tree.Root.SubtreeUsage.Sessions != 6 || tree.Root.SubtreeUsage.InputTokens != 111111 {
			t.Errorf("%+v: listed %q (sums %+v), want %q with the whole tree's sums", tc.p, got, tree.Root.SubtreeUsage, tc.want)
		}
	}

	sub, err := c.SessionTree(ctx, a1, orchestrator.TreeParams{})
	if err != nil || sub.Root.SessionID != a1 || sub.Root.SubtreeUsage.Sessions != 2 || len(sub.Root.Children) != 1 {
		t.Errorf("subtree of a1: %+v, %v", sub, err)
	}
	if _, err := c.SessionTree(ctx, "ses_missing", orchestrator.TreeParams{}); orchestrator.ErrorCode(err) != "session_not_found" {
		t.Errorf("tree of a missing session: %v, want session_not_found", err)
	}
	for _, p := range []orchestrator.TreeParams{{MaxChildren: -1}, {MaxChildren: 1001}, {MaxNodes: 10001}} {
		if _, err := c.SessionTree(ctx, root, p); orchestrator.ErrorCode(err) != "invalid_request" {
			t.Errorf("%+v: %v, want invalid_request", p, err)
		}
	}
}
