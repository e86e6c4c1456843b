package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// treeCoord answers SessionTree with a fixed tree and records what it was asked.
type treeCoord struct {
	*fakeCoord
	tree  *orchestrator.SessionTree
	asked orchestrator.TreeParams
}

func (f *treeCoord) SessionTree(_ context.Context, id string, p orchestrator.TreeParams) (*orchestrator.SessionTree, error) {
	if id != f.tree.Root.SessionID {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "session_not_found", "session %s not found", id)
	}
	f.asked = p
	return f.tree, nil
}

// ao tree draws the tree with each session's and each subtree's cost, says where children were left out,
// passes --depth on, and exits 2 on bad input and 1 for an unknown session.
func TestTreeShown(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	end := at.Add(90 * time.Second)
	leaf := func(id string, cost float64) *orchestrator.TreeNode {
		return &orchestrator.TreeNode{SessionID: id, AgentName: "worker", Status: orchestrator.SessionCompleted,
			CreatedAt: at, EndedAt: &end, Usage: orchestrator.Usage{CostUSD: cost, InputTokens: 1200, OutputTokens: 300},
			SubtreeUsage: orchestrator.SubtreeUsage{Usage: orchestrator.Usage{CostUSD: cost, InputTokens: 1200, OutputTokens: 300}, Sessions: 1},
			Children:     []*orchestrator.TreeNode{}}
	}
	mid := leaf("ses_mid", 0.5)
	mid.Children = []*orchestrator.TreeNode{leaf("ses_leaf", 0.25)}
	mid.SubtreeUsage = orchestrator.SubtreeUsage{Usage: orchestrator.Usage{CostUSD: 0.75, InputTokens: 2400, OutputTokens: 600}, Sessions: 2}
	root := leaf("ses_root", 1)
	root.AgentName = "planner"
	root.Children = []*orchestrator.TreeNode{mid}
	root.ChildrenOmitted = 3
	root.SubtreeUsage = orchestrator.SubtreeUsage{Usage: orchestrator.Usage{CostUSD: 2.5, InputTokens: 50_000, OutputTokens: 900}, Sessions: 6}
	f := &treeCoord{fakeCoord: newFake(), tree: &orchestrator.SessionTree{Root: root}}

	app, out, errb := f.app("")
	app.Connect = func(string, string) (orchestrator.Coordinator, error) { return f, nil }
	if code := app.Run(context.Background(), []string{"tree", "ses_root", "--depth", "2"}); code != 0 {
		t.Fatalf("ao tree: exit %d, stderr %s", code, errb)
	}
	if f.asked.Depth != 2 {
		t.Errorf("asked for depth %d, want 2", f.asked.Depth)
	}
	want := []string{
		"ses_root  planner  completed  1m30s  $1.0000 1200 in / 300 out  [subtree: 6 sessions, $2.5000 50.0k in / 900 out]",
		"├─ ses_mid  worker  completed  1m30s  $0.5000 1200 in / 300 out  [subtree: 2 sessions, $0.7500 2400 in / 600 out]",
		"│  └─ ses_leaf  worker  completed  1m30s  $0.2500 1200 in / 300 out",
		"└─ … 3 more",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ao tree printed\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"tree"}, 2},
		{[]string{"tree", "ses_root", "--depth", "-1"}, 2},
		{[]string{"tree", "ses_nope"}, 1},
	} {
		app, _, _ := f.app("")
		app.Connect = func(string, string) (orchestrator.Coordinator, error) { return f, nil }
		if code := app.Run(context.Background(), c.args); code != c.code {
			t.Errorf("ao %v: exit %d, want %d", c.args, code, c.code)
		}
	}
}
