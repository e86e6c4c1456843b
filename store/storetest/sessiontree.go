package storetest

import (
	"fmt"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testSessionTree checks [store.Store.SessionTree]: the root first, generation by generation, oldest
// first within one, each session with its depth and usage; a limit; an unknown root.
func testSessionTree(t *testing.T, newStore func(*testing.T) store.Store) {
	s := newStore(t)
	// root ─┬─ a (t=3) ── a1 (t=4) ── a1x (t=5)
	//       └─ b (t=2, older than a) ── b1 (t=6)
	// other: another tree; self: a session that names itself as its parent.
	add := func(id, parent string, created int, usage orchestrator.Usage) {
		t.Helper()
		se := newSession(id, at(created))
		se.ParentSessionID, se.Usage = parent, usage
		must(t, "CreateSession "+id, s.CreateSession(ctx(t), se))
	}
	add("ses_root", "", 1, orchestrator.Usage{InputTokens: 1, CostUSD: 0.5})
	add("ses_b", "ses_root", 2, orchestrator.Usage{OutputTokens: 2})
	add("ses_a", "ses_root", 3, orchestrator.Usage{CacheReadInputTokens: 3})
	add("ses_a1", "ses_a", 4, orchestrator.Usage{})
	add("ses_a1x", "ses_a1", 5, orchestrator.Usage{CacheCreationInputTokens: 5, CostUSD: 0.25})
	add("ses_b1", "ses_b", 6, orchestrator.Usage{})
	add("ses_other", "", 7, orchestrator.Usage{InputTokens: 100})
	add("ses_self", "ses_self", 8, orchestrator.Usage{})

	got, err := s.SessionTree(ctx(t), "ses_root", 100)
	must(t, "SessionTree", err)
	var order []string
	for _, r := range got {
		order = append(order, fmt.Sprintf("%s@%d<%s", r.ID, r.Depth, r.ParentSessionID))
	}
	equal(t, "tree order", order, []string{"ses_root@0<", "ses_b@1<ses_root", "ses_a@1<ses_root", "ses_a1@2<ses_a", "ses_b1@2<ses_b", "ses_a1x@3<ses_a1"})
	root := got[0]
	equal(t, "root", *root, store.TreeSession{ID: "ses_root", AgentName: "web-crawler", Status: orchestrator.SessionPending,
		CreatedAt: at(1), Usage: orchestrator.Usage{InputTokens: 1, CostUSD: 0.5}})
	equal(t, "a1x usage", got[5].Usage, orchestrator.Usage{CacheCreationInputTokens: 5, CostUSD: 0.25})

	sub, err := s.SessionTree(ctx(t), "ses_a", 100)
	must(t, "SessionTree of a subtree", err)
	if len(sub) != 3 || sub[0].ID != "ses_a" || sub[0].Depth != 0 || sub[2].ID != "ses_a1x" || sub[2].Depth != 2 {
		t.Fatalf("subtree of ses_a: %s", show(sub))
	}
	top, err := s.SessionTree(ctx(t), "ses_root", 3)
	must(t, "SessionTree with a limit", err)
	if len(top) != 3 || top[2].ID != "ses_a" {
		t.Fatalf("tree limited to 3: %s", show(top))
	}
	self, err := s.SessionTree(ctx(t), "ses_self", 100)
	must(t, "SessionTree of a session that is its own parent", err)
	if len(self) != 1 {
		t.Fatalf("a session that is its own parent: %s", show(self))
	}
	_, err = s.SessionTree(ctx(t), "ses_missing", 100)
	wantErr(t, "SessionTree of a missing session", err, orchestrator.ErrNotFound)
}
