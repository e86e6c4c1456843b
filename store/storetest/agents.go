package storetest

import (
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testAgents(t *testing.T, newStore func(*testing.T) store.Store) {
	det, ai := orchestrator.AgentTypeDeterministic, orchestrator.AgentTypeAgent

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, a := range []*store.Agent{
			newAgent("web-crawler", det, "lnch_a", "web", "io"),
			newAgent("writer", ai, ""),
		} {
			must(t, "CreateAgent "+a.Name, s.CreateAgent(ctx(t), a))
			got, err := s.GetAgent(ctx(t), a.Name)
			must(t, "GetAgent "+a.Name, err)
			equal(t, "GetAgent "+a.Name, got, a)
		}
		err := s.CreateAgent(ctx(t), newAgent("web-crawler", ai, ""))
		wantErr(t, "CreateAgent with a taken name", err, orchestrator.ErrConflict)
		_, err = s.GetAgent(ctx(t), "missing")
		wantErr(t, "GetAgent missing", err, orchestrator.ErrNotFound)
		_, err = s.GetAgent(ctx(t), "nul\x00name") // PostgreSQL text cannot hold one: still just missing
		wantErr(t, "GetAgent with a NUL byte", err, orchestrator.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, a := range []*store.Agent{
			newAgent("zeta", det, "lnch_a", "web", "io"),
			newAgent("alpha", det, "lnch_b", "web"),
			newAgent("mid", ai, "", "io", "web_x"),
			newAgent("beta", ai, "", "we"),
		} {
			must(t, "CreateAgent "+a.Name, s.CreateAgent(ctx(t), a))
		}
		for _, tc := range []struct {
			name string
			f    store.AgentFilter
			want []string
		}{
			{"all, by name", store.AgentFilter{}, []string{"alpha", "beta", "mid", "zeta"}},
			{"deterministic", store.AgentFilter{Type: det}, []string{"alpha", "zeta"}},
			{"agent", store.AgentFilter{Type: ai}, []string{"beta", "mid"}},
			{"tag web (not web_x, not we)", store.AgentFilter{Tags: []string{"web"}}, []string{"alpha", "zeta"}},
			{"tags web and io", store.AgentFilter{Tags: []string{"web", "io"}}, []string{"zeta"}},
			{"tag we", store.AgentFilter{Tags: []string{"we"}}, []string{"beta"}},
			{"tag with LIKE wildcard", store.AgentFilter{Tags: []string{"web%"}}, []string{}},
			{"runner", store.AgentFilter{RunnerID: "lnch_b"}, []string{"alpha"}},
			{"runner and tag", store.AgentFilter{RunnerID: "lnch_b", Tags: []string{"io"}}, []string{}},
		} {
			got, err := s.ListAgents(ctx(t), tc.f)
			must(t, "ListAgents "+tc.name, err)
			equal(t, "ListAgents "+tc.name, agentNames(got), tc.want)
		}
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		a := newAgent("writer", ai, "", "old")
		must(t, "CreateAgent", s.CreateAgent(ctx(t), a))

		b := newAgent("writer", ai, "", "new")
		b.Blueprint.Description = "rewritten"
		b.RunnerID = "lnch_ignored" // not part of an update
		b.CreatedAt = at(999)       // nor is this
		b.UpdatedAt = at(7)
		must(t, "UpdateAgent", s.UpdateAgent(ctx(t), b))
		got, err := s.GetAgent(ctx(t), "writer")
		must(t, "GetAgent", err)
		want := newAgent("writer", ai, "", "new")
		want.Blueprint.Description = "rewritten"
		want.UpdatedAt = at(7)
		equal(t, "GetAgent after UpdateAgent", got, want)
		if l, _ := s.ListAgents(ctx(t), store.AgentFilter{Tags: []string{"new"}}); len(l) != 1 {
			t.Fatalf("ListAgents by the new tag = %v, want [writer]", agentNames(l))
		}

		err = s.UpdateAgent(ctx(t), newAgent("missing", ai, ""))
		wantErr(t, "UpdateAgent missing", err, orchestrator.ErrNotFound)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, a := range []*store.Agent{
			newAgent("a1", det, "lnch_a"), newAgent("a2", det, "lnch_a"), newAgent("b1", det, "lnch_b"),
			newAgent("registry", ai, ""),
		} {
			must(t, "CreateAgent "+a.Name, s.CreateAgent(ctx(t), a))
		}
		n, err := s.DeleteRunnerAgents(ctx(t), "lnch_a")
		must(t, "DeleteRunnerAgents", err)
		if n != 2 {
			t.Fatalf("DeleteRunnerAgents = %d, want 2", n)
		}
		n, err = s.DeleteRunnerAgents(ctx(t), "lnch_a")
		if err != nil || n != 0 {
			t.Fatalf("DeleteRunnerAgents again = %d, %v; want 0, nil", n, err)
		}
		must(t, "DeleteAgent", s.DeleteAgent(ctx(t), "registry"))
		wantErr(t, "DeleteAgent again", s.DeleteAgent(ctx(t), "registry"), orchestrator.ErrNotFound)
		got, err := s.ListAgents(ctx(t), store.AgentFilter{})
		must(t, "ListAgents", err)
		equal(t, "agents left", agentNames(got), []string{"b1"})
	})
}
