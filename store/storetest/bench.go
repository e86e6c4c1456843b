package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Bench runs the store benchmarks against the stores newStore returns (one fresh store per benchmark):
//
//   - CreateClaimComplete: the life of one run: create a session and its run, claim it, start it,
//     complete it.
//   - ClaimEmpty: a claim that finds nothing, on an empty queue.
//   - ClaimWith10kPinnedElsewhere: the same claim with 10,000 pending runs pinned to other runners
//     (deterministic runs of busy runners). It should cost about what ClaimEmpty costs.
//   - ClaimWith10kDemandMismatch: the same claim with 10,000 pending unpinned runs whose demanded
//     hostname the runner does not have. A store may need to step over these.
//   - ClaimWith10kParked: the same 10,000 runs parked, as the coordinator parks runs no live runner can
//     take. It should cost about what ClaimEmpty costs.
//   - ClaimBacklog1PerClaim, ClaimBacklog10PerClaim: claiming from a backlog of pinned runs one and ten
//     at a time, reported per claimed run (ns/run). Ten at a time should cost a run much less.
//   - AppendEvent: appending one event to a session.
func Bench(b *testing.B, newStore func(tb testing.TB) store.Store) {
	b.Run("CreateClaimComplete", func(b *testing.B) {
		s := newStore(b)
		runner := newRunner("lnch_bench")
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := utcNow()
			se := newSession(fmt.Sprintf("ses_%08d", i), now)
			r := newRun(fmt.Sprintf("run_%08d", i), se.ID, now)
			r.Demands = orchestrator.Demands{}
			if err := s.CreateSession(b.Context(), se); err != nil {
				b.Fatal(err)
			}
			if err := s.CreateRun(b.Context(), r); err != nil {
				b.Fatal(err)
			}
			c, err := claimOne(b.Context(), s, store.ClaimParams{Runner: runner, Now: now})
			if err != nil {
				b.Fatal(err)
			}
			if c.ID != r.ID {
				b.Fatalf("claimed %s, want %s", c.ID, r.ID)
			}
			if _, err := s.UpdateRun(b.Context(), r.ID, []orchestrator.RunStatus{orchestrator.RunClaimed}, runner.ID,
				store.RunUpdate{Status: ptr(orchestrator.RunRunning), StartedAt: ptr(now)}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.UpdateRun(b.Context(), r.ID, []orchestrator.RunStatus{orchestrator.RunRunning}, runner.ID,
				store.RunUpdate{Status: ptr(orchestrator.RunCompleted), EndedAt: ptr(now)}); err != nil {
				b.Fatal(err)
			}
		}
	})

	claimNothing := func(b *testing.B, s store.Store) {
		runner := newRunner("lnch_bench")
		runner.Hostname = "bench-host"
		b.ReportAllocs()
		for b.Loop() {
			_, err := claimOne(b.Context(), s, store.ClaimParams{Runner: runner, Now: utcNow()})
			if !errors.Is(err, orchestrator.ErrNotFound) {
				b.Fatalf("claim = %v, want ErrNotFound", err)
			}
		}
	}
	fill := func(b *testing.B, s store.Store, n int, mk func(i int) *orchestrator.Run) {
		for start := 0; start < n; start += 1000 {
			err := s.InTx(b.Context(), func(ctx context.Context, tx store.Store) error {
				for i := start; i < min(start+1000, n); i++ {
					if err := tx.CreateRun(ctx, mk(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("ClaimEmpty", func(b *testing.B) {
		claimNothing(b, newStore(b))
	})

	b.Run("ClaimWith10kPinnedElsewhere", func(b *testing.B) {
		s := newStore(b)
		fill(b, s, 10000, func(i int) *orchestrator.Run {
			r := newRun(fmt.Sprintf("run_%06d", i), "ses_bench", at(i))
			r.AgentType = orchestrator.AgentTypeDeterministic
			r.Demands = orchestrator.Demands{RunnerID: fmt.Sprintf("lnch_other_%d", i%10)}
			return r
		})
		claimNothing(b, s)
	})

	b.Run("ClaimWith10kDemandMismatch", func(b *testing.B) {
		s := newStore(b)
		fill(b, s, 10000, func(i int) *orchestrator.Run {
			r := newRun(fmt.Sprintf("run_%06d", i), "ses_bench", at(i))
			r.Demands = orchestrator.Demands{Hostname: "elsewhere"}
			return r
		})
		claimNothing(b, s)
	})

	b.Run("ClaimWith10kParked", func(b *testing.B) {
		s := newStore(b)
		ids := make([]string, 0, 10000)
		fill(b, s, 10000, func(i int) *orchestrator.Run {
			r := newRun(fmt.Sprintf("run_%06d", i), "ses_bench", at(i))
			r.Demands = orchestrator.Demands{Hostname: "elsewhere"}
			ids = append(ids, r.ID)
			return r
		})
		for start := 0; start < len(ids); start += 1000 {
			if _, err := s.SetRunsParked(b.Context(), ids[start:min(start+1000, len(ids))], true); err != nil {
				b.Fatal(err)
			}
		}
		claimNothing(b, s)
	})

	// Claiming from a backlog one run at a time against ten at a time: the cost is reported per claimed
	// run (ns/run), so the two compare directly. The backlog is refilled outside the timer.
	//
	// The Priorities and Limits variants claim backlogs whose runs carry priorities 1 to 4, or an agent
	// limit and one of ten concurrency keys, both too high to hold a run back: what the claim pays for
	// ordering by priority and for checking limits, against the plain backlog.
	variants := []struct {
		name string
		edit func(r *orchestrator.Run, i int)
	}{
		{"", func(*orchestrator.Run, int) {}},
		{"Priorities", func(r *orchestrator.Run, i int) { r.Priority = 1 + i%4 }},
		{"Limits", func(r *orchestrator.Run, i int) {
			r.AgentLimit, r.ConcurrencyKey, r.KeyLimit = 1<<40, fmt.Sprint("key-", i%10), 1<<40
		}},
	}
	for _, v := range variants {
		for _, per := range []int{1, 10} {
			benchClaimBacklog(b, newStore, fill, per, v.name, v.edit)
		}
	}

	b.Run("AppendEvent", func(b *testing.B) {
		s := newStore(b)
		if err := s.CreateSession(b.Context(), newSession("ses_bench", base)); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			e := orchestrator.NewEvent(orchestrator.EventStderr, map[string]string{"line": "fetching https://example.com/page"})
			if err := s.AppendEvents(b.Context(), "ses_bench", []*orchestrator.Event{&e}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchClaimBacklog claims from a backlog of pinned runs, per runs a claim, each run edited by edit.
func benchClaimBacklog(b *testing.B, newStore func(tb testing.TB) store.Store, fill func(*testing.B, store.Store, int, func(int) *orchestrator.Run),
	per int, variant string, edit func(r *orchestrator.Run, i int),
) {
	b.Run(fmt.Sprintf("ClaimBacklog%dPerClaim%s", per, variant), func(b *testing.B) {
		s := newStore(b)
		runner := newRunner("lnch_bench")
		const backlog = 1000
		filled, claimed := 0, 0
		var elapsed time.Duration
		for b.Loop() {
			if claimed == filled {
				b.StopTimer()
				start := filled
				fill(b, s, backlog, func(i int) *orchestrator.Run {
					r := newRun(fmt.Sprintf("run_%08d", start+i), "ses_bench", at(start+i))
					r.AgentType = orchestrator.AgentTypeDeterministic
					r.Demands = orchestrator.Demands{RunnerID: runner.ID}
					edit(r, start+i)
					return r
				})
				filled += backlog
				b.StartTimer()
			}
			t := time.Now()
			runs, err := s.ClaimRuns(b.Context(), store.ClaimParams{Runner: runner, Now: utcNow(), Max: per})
			elapsed += time.Since(t)
			if err != nil || len(runs) != per {
				b.Fatalf("ClaimRuns = %d runs, %v; want %d", len(runs), err, per)
			}
			claimed += per
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(claimed), "ns/run")
	})
}
