package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// claimRunners are the runners of the claim table: each runs against every run of claimRuns.
func claimRunners() []*orchestrator.RunnerInfo {
	r := func(id, host string, tags []string, require, agents bool) *orchestrator.RunnerInfo {
		x := newRunner(id)
		x.Hostname, x.ProjectDir, x.ExecutorType, x.ExecutorProfile = host, "/p1", "claude-code", "default"
		x.Tags, x.RequireMatchingTags, x.AcceptsAgents = tags, require, agents
		return x
	}
	return []*orchestrator.RunnerInfo{
		r("lnch_any", "h1", nil, false, true),
		r("lnch_tagged", "h2", []string{"gpu", "linux"}, false, true),
		r("lnch_require", "h1", []string{"gpu"}, true, true),
		r("lnch_det", "h1", []string{"linux"}, false, false),
		r("lnch_require_det", "h2", []string{"gpu"}, true, false),
	}
}

// claimRuns are the runs of the claim table, in creation order.
func claimRuns() []*orchestrator.Run {
	type fx struct {
		typ     orchestrator.AgentType
		demands orchestrator.Demands
		status  orchestrator.RunStatus
	}
	ai, det := orchestrator.AgentTypeAgent, orchestrator.AgentTypeDeterministic
	pending := orchestrator.RunPending
	type D = orchestrator.Demands
	fixtures := []fx{
		{ai, D{}, pending},
		{ai, D{Hostname: "h1"}, pending},
		{ai, D{Hostname: "h2"}, pending},
		{ai, D{Tags: []string{"gpu"}}, pending},
		{ai, D{Tags: []string{"gpu", "linux"}}, pending},
		{ai, D{Tags: []string{"gpu", "cuda"}}, pending},
		{ai, D{Tags: []string{"gpu", "gpu"}}, pending},
		{det, D{RunnerID: "lnch_det"}, pending},
		{det, D{RunnerID: "lnch_any"}, pending},
		{det, D{}, pending}, // unpinned deterministic: nobody
		{ai, D{RunnerID: "lnch_tagged"}, pending},
		{ai, D{RunnerID: "lnch_any", Hostname: "h2"}, pending}, // pinned, but the hostname does not match
		{ai, D{ExecutorType: "claude-code"}, pending},
		{ai, D{ExecutorType: "codex"}, pending},
		{ai, D{ProjectDir: "/p1", ExecutorProfile: "default"}, pending},
		{ai, D{ProjectDir: "/p2"}, pending},
		{ai, D{ExecutorProfile: "fast"}, pending},
		{ai, D{RunnerID: "lnch_det", Tags: []string{"linux"}}, pending}, // lnch_det takes no AI runs
		{det, D{RunnerID: "lnch_det", Tags: []string{"linux"}}, pending},
		{det, D{RunnerID: "lnch_det", Tags: []string{"gpu"}}, pending},
		{ai, D{}, orchestrator.RunClaimed},
		{ai, D{}, orchestrator.RunCompleted},
		{det, D{RunnerID: "lnch_det"}, orchestrator.RunStopped},
		{det, D{RunnerID: "lnch_require"}, pending},
		{det, D{RunnerID: "lnch_require", Tags: []string{"gpu"}}, pending},
		{det, D{RunnerID: "lnch_require_det", Tags: []string{"gpu"}, Hostname: "h2"}, pending},
		{ai, D{Tags: []string{"gpu"}, Hostname: "h2"}, pending},
		{ai, D{Hostname: "h1", ProjectDir: "/p1", ExecutorType: "claude-code", ExecutorProfile: "default", Tags: []string{"gpu"}}, pending},
		{det, D{RunnerID: "lnch_any", ExecutorType: "other"}, pending},
		{ai, D{}, pending},
	}
	var runs []*orchestrator.Run
	for i, f := range fixtures {
		// Ids run against creation order, so an id-only order would be caught.
		r := newRun(fmt.Sprintf("run_%02d", 99-i), "ses_a", at(i))
		r.AgentType, r.Demands, r.Status = f.typ, f.demands, f.status
		if f.status != pending {
			r.RunnerID = "lnch_someone"
		}
		runs = append(runs, r)
	}
	// Two runs created at the same time are claimed in id order.
	tie := newRun("run_00", "ses_a", at(2))
	runs = append(runs, tie)
	return runs
}

func testClaim(t *testing.T, newStore func(*testing.T) store.Store) {
	// For each runner, claiming until there is nothing left takes exactly the runs Demands.Matches accepts,
	// oldest first, whether each claim takes one run or several.
	for _, runner := range claimRunners() {
		for _, limit := range []int{0, 1, 3, 100} {
			t.Run(fmt.Sprintf("Matches/%s/Max%d", runner.ID, limit), func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				runs := claimRuns()
				for _, r := range runs {
					must(t, "CreateRun "+r.ID, s.CreateRun(ctx(t), r))
				}
				var want []*orchestrator.Run
				for _, r := range runs {
					if r.Status == orchestrator.RunPending && r.Demands.Matches(r.AgentType, runner) {
						want = append(want, r)
					}
				}
				sortRuns(want)

				var got []string
				for i := 0; ; i++ {
					now := at(1000 + i)
					claimed, err := s.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: now, Max: limit})
					must(t, "ClaimRuns", err)
					if len(claimed) == 0 {
						break
					}
					if len(claimed) > max(limit, 1) {
						t.Fatalf("claim with Max %d took %d runs", limit, len(claimed))
					}
					for _, r := range claimed {
						if r.Status != orchestrator.RunClaimed || r.RunnerID != runner.ID || r.ClaimedAt == nil || !r.ClaimedAt.Equal(now) {
							t.Fatalf("claimed run %s: status %s runner %q claimed_at %v; want claimed by %s at %v",
								r.ID, r.Status, r.RunnerID, r.ClaimedAt, runner.ID, now)
						}
						stored, err := s.GetRun(ctx(t), r.ID)
						must(t, "GetRun", err)
						equal(t, "stored claimed run", stored, r)
						got = append(got, r.ID)
					}
					if i > len(runs) {
						t.Fatalf("claimed more runs than exist: %v", got)
					}
				}
				equal(t, "claimed runs of "+runner.ID, got, runIDsOrNil(want))
			})
		}
	}

	// Claims never return a run twice, and take every run, when runners race.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const workers = 8
		perWorker := concurrencyScale(2000)
		total := workers * perWorker
		runners := make([]*orchestrator.RunnerInfo, workers)
		for i := range runners {
			runners[i] = newRunner(fmt.Sprintf("lnch_%d", i))
			runners[i].Tags = nil
		}
		// A quarter of the runs are pinned to one runner (deterministic), the rest are open to all.
		owner := map[string]string{}
		for start := 0; start < total; start += 500 {
			err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
				for i := start; i < min(start+500, total); i++ {
					r := newRun(fmt.Sprintf("run_%06d", i), "ses_a", at(i))
					r.Demands = orchestrator.Demands{}
					if i%4 == 0 {
						r.AgentType = orchestrator.AgentTypeDeterministic
						r.Demands.RunnerID = runners[i%workers].ID
						owner[r.ID] = r.Demands.RunnerID
					}
					if err := tx.CreateRun(ctx, r); err != nil {
						return err
					}
				}
				return nil
			})
			must(t, "create runs", err)
		}

		var (
			mu      sync.Mutex
			claimed = map[string]string{}
			dups    []string
			wg      sync.WaitGroup
			errs    = make(chan error, workers)
		)
		for i, runner := range runners {
			wg.Go(func() {
				for {
					// Runners take 1 to 4 runs per claim.
					rs, err := s.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: utcNow(), Max: 1 + i%4})
					if err != nil {
						errs <- err
						return
					}
					if len(rs) == 0 {
						return
					}
					mu.Lock()
					for _, r := range rs {
						if prev, ok := claimed[r.ID]; ok {
							dups = append(dups, fmt.Sprintf("%s by %s and %s", r.ID, prev, runner.ID))
						}
						claimed[r.ID] = runner.ID
					}
					mu.Unlock()
					for _, r := range rs {
						if r.RunnerID != runner.ID {
							errs <- fmt.Errorf("run %s claimed by %s came back with runner %q", r.ID, runner.ID, r.RunnerID)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("ClaimRuns: %v", err)
		}
		if len(dups) > 0 {
			t.Fatalf("%d runs claimed twice, e.g. %s", len(dups), dups[0])
		}
		if len(claimed) != total {
			t.Fatalf("claimed %d runs, want %d", len(claimed), total)
		}
		for id, want := range owner {
			if claimed[id] != want {
				t.Fatalf("pinned run %s claimed by %s, want %s", id, claimed[id], want)
			}
		}
		left, err := s.ListRuns(ctx(t), orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}})
		must(t, "ListRuns pending", err)
		if len(left) != 0 {
			t.Fatalf("%d runs still pending", len(left))
		}
	})
}

// sortRuns orders runs as claims take them: oldest first, then by id.
func sortRuns(rs []*orchestrator.Run) {
	slices.SortFunc(rs, func(a, b *orchestrator.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func runIDsOrNil(rs []*orchestrator.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// claimOne claims a single run; ErrNotFound when there is none to take.
func claimOne(ctx context.Context, s store.Store, p store.ClaimParams) (*orchestrator.Run, error) {
	p.Max = 1
	rs, err := s.ClaimRuns(ctx, p)
	switch {
	case err != nil:
		return nil, err
	case len(rs) == 0:
		return nil, fmt.Errorf("no claimable run for %s: %w", p.Runner.ID, orchestrator.ErrNotFound)
	case len(rs) > 1:
		return nil, fmt.Errorf("ClaimRuns with Max 1 took %d runs", len(rs))
	}
	return rs[0], nil
}
