package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testSubmission covers submission control: priorities, delayed runs, concurrency limits and idempotency
// keys.
func testSubmission(t *testing.T, newStore func(*testing.T) store.Store) {
	runner := newRunner("lnch_a")
	runner.Tags = nil
	openRun := func(id string, created time.Time) *orchestrator.Run {
		r := newRun(id, "ses_"+id, created)
		r.Demands = orchestrator.Demands{}
		return r
	}
	claimAll := func(t *testing.T, s store.Store, now time.Time, max int) []string {
		t.Helper()
		rs, err := s.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: now, Max: max})
		must(t, "ClaimRuns", err)
		return runIDsOrNil(rs)
	}

	// Higher priorities first (1 is the highest, 0 means 1), oldest first within one, whether a claim
	// takes one run or all of them.
	t.Run("Priority", func(t *testing.T) {
		t.Parallel()
		for _, max := range []int{1, 10} {
			s := newStore(t)
			for i, p := range []int{3, 0, 2, 1, 4, 2, 0} {
				r := openRun(fmt.Sprintf("run_%d", i), at(i))
				r.Priority = p
				must(t, "CreateRun", s.CreateRun(ctx(t), r))
				got, err := s.GetRun(ctx(t), r.ID)
				must(t, "GetRun", err)
				if want := p; (p == 1 && got.Priority != 0) || (p != 1 && got.Priority != want) {
					t.Fatalf("run with priority %d reads back %d", p, got.Priority)
				}
			}
			var got []string
			for i := 0; i < 10; i++ {
				ids := claimAll(t, s, at(100), max)
				if len(ids) == 0 {
					break
				}
				got = append(got, ids...)
			}
			equal(t, fmt.Sprintf("claim order with Max %d", max), got,
				[]string{"run_1", "run_3", "run_6", "run_2", "run_5", "run_0", "run_4"})
		}
	})

	// A delayed run is not claimed before its time, is claimed at it, and orders by it among the runs of
	// its priority; NextRunAt finds it while it waits.
	t.Run("Delayed", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		d := openRun("run_delayed", at(0))
		d.RunAt = ptr(at(5000))
		must(t, "CreateRun", s.CreateRun(ctx(t), d))
		got, err := s.GetRun(ctx(t), d.ID)
		must(t, "GetRun", err)
		equal(t, "delayed run", got, d)
		must(t, "CreateRun", s.CreateRun(ctx(t), openRun("run_later", at(3000))))

		next, err := s.NextRunAt(ctx(t), at(0))
		must(t, "NextRunAt", err)
		if !next.Equal(at(5000)) {
			t.Fatalf("NextRunAt = %v, want %v", next, at(5000))
		}
		if ids := claimAll(t, s, at(4999), 10); !equal2(ids, []string{"run_later"}) {
			t.Fatalf("claim a microsecond before the delayed run is due took %v, want only run_later", ids)
		}
		must(t, "CreateRun", s.CreateRun(ctx(t), openRun("run_after", at(4000))))
		if ids := claimAll(t, s, at(5000), 10); !equal2(ids, []string{"run_after", "run_delayed"}) {
			t.Fatalf("claim at the due time took %v, want run_after (created before it was due) then run_delayed", ids)
		}
		next, err = s.NextRunAt(ctx(t), at(0))
		must(t, "NextRunAt", err)
		if !next.IsZero() {
			t.Fatalf("NextRunAt with no delayed run pending = %v, want zero", next)
		}
	})

	// A run held back by a full limit does not hold back the runs behind it, and is claimed once a slot
	// frees.
	t.Run("LimitStepsOver", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for i := range 3 {
			r := openRun(fmt.Sprintf("run_l%d", i), at(i))
			r.AgentName, r.AgentLimit = "limited", 1
			must(t, "CreateRun", s.CreateRun(ctx(t), r))
		}
		for i := range 2 {
			r := openRun(fmt.Sprintf("run_k%d", i), at(10+i))
			r.AgentName, r.ConcurrencyKey, r.KeyLimit = "keyed", "cust-1", 1
			must(t, "CreateRun", s.CreateRun(ctx(t), r))
		}
		must(t, "CreateRun", s.CreateRun(ctx(t), openRun("run_free", at(20))))
		if ids := claimAll(t, s, at(100), 10); !equal2(ids, []string{"run_l0", "run_k0", "run_free"}) {
			t.Fatalf("first claim took %v, want run_l0, run_k0, run_free", ids)
		}
		if ids := claimAll(t, s, at(101), 10); len(ids) != 0 {
			t.Fatalf("claim with every limit full took %v", ids)
		}
		for _, id := range []string{"run_l0", "run_k0"} {
			_, err := s.UpdateRun(ctx(t), id, nil, "", store.RunUpdate{Status: ptr(orchestrator.RunCompleted), EndedAt: ptr(at(102))})
			must(t, "UpdateRun", err)
		}
		if ids := claimAll(t, s, at(103), 10); !equal2(ids, []string{"run_l1", "run_k1"}) {
			t.Fatalf("claim after the slots freed took %v, want run_l1, run_k1", ids)
		}
		// A run deleted while it holds a slot frees it.
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_run_l1", at(1))))
		must(t, "DeleteSession", s.DeleteSession(ctx(t), "ses_run_l1"))
		if ids := claimAll(t, s, at(104), 10); !equal2(ids, []string{"run_l2"}) {
			t.Fatalf("claim after the holder was deleted took %v, want run_l2", ids)
		}
	})

	t.Run("LimitsConcurrent", func(t *testing.T) { testLimitsConcurrent(t, newStore(t)) })

	// Of concurrent creates with one idempotency key (CreateSessionWithRunOnce, or CreateIdempotencyKey
	// and CreateSessionWithRun in a transaction), exactly one commits; the key reads back; retention
	// deletes it.
	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const callers = 8
		var (
			wg        sync.WaitGroup
			won       atomic.Int32
			conflicts atomic.Int32
			errs      = make(chan error, callers)
		)
		for i := range callers {
			wg.Go(func() {
				se := newSession(fmt.Sprintf("ses_%d", i), at(i))
				se.Demands = orchestrator.Demands{}
				r := openRun(fmt.Sprintf("run_%d", i), at(i))
				r.SessionID = se.ID
				k := &store.IdempotencyKey{Key: "key-1", RequestHash: "h", RunID: r.ID, SessionID: se.ID, CreatedAt: at(i)}
				var err error
				if i%2 == 0 {
					err = s.CreateSessionWithRunOnce(ctx(t), se, r, k)
				} else {
					// The same through a transaction, as a resume records its key.
					err = s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
						if err := tx.CreateIdempotencyKey(ctx, k); err != nil {
							return err
						}
						return tx.CreateSessionWithRun(ctx, se, r)
					})
				}
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, orchestrator.ErrConflict):
					conflicts.Add(1)
				default:
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("create with a key: %v", err)
		}
		if won.Load() != 1 || conflicts.Load() != callers-1 {
			t.Fatalf("%d creates committed and %d conflicted, want 1 and %d", won.Load(), conflicts.Load(), callers-1)
		}
		runs, err := s.ListRuns(ctx(t), orchestrator.RunFilter{})
		must(t, "ListRuns", err)
		if len(runs) != 1 {
			t.Fatalf("%d runs exist, want 1", len(runs))
		}
		k, err := s.GetIdempotencyKey(ctx(t), "key-1")
		must(t, "GetIdempotencyKey", err)
		if k.RunID != runs[0].ID || k.SessionID != runs[0].SessionID || k.RequestHash != "h" {
			t.Fatalf("key reads back %+v, want run %s of session %s", k, runs[0].ID, runs[0].SessionID)
		}
		_, err = s.GetIdempotencyKey(ctx(t), "key-2")
		wantErr(t, "GetIdempotencyKey of an unknown key", err, orchestrator.ErrNotFound)
		n, err := s.DeleteIdempotencyKeys(ctx(t), k.CreatedAt, 100)
		must(t, "DeleteIdempotencyKeys", err)
		if n != 0 {
			t.Fatalf("DeleteIdempotencyKeys before the key's creation deleted %d", n)
		}
		n, err = s.DeleteIdempotencyKeys(ctx(t), k.CreatedAt.Add(time.Microsecond), 100)
		must(t, "DeleteIdempotencyKeys", err)
		if n != 1 {
			t.Fatalf("DeleteIdempotencyKeys after the key's creation deleted %d, want 1", n)
		}
		_, err = s.GetIdempotencyKey(ctx(t), "key-1")
		wantErr(t, "GetIdempotencyKey of a deleted key", err, orchestrator.ErrNotFound)
	})
}

// testLimitsConcurrent has 8 runners claim and complete runs under an agent limit and per-key limits
// at once. A recorder adds each run when its claim returns and removes it before its completion is
// written, so its count of runs in progress never exceeds the store's: it checks the limits at every
// change. Every run is claimed exactly once in the end.
func testLimitsConcurrent(t *testing.T, s store.Store) {
	t.Parallel()
	const (
		workers    = 8
		agentLimit = 3
		keyLimit   = 2
	)
	total := max(40, concurrencyScale(400))
	keys := []string{"cust-a", "cust-b", "cust-c"}
	err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
		for i := range total {
			r := newRun(fmt.Sprintf("run_%05d", i), "ses_a", at(i))
			r.Demands = orchestrator.Demands{}
			if i%2 == 0 {
				r.AgentName, r.AgentLimit = "capped", agentLimit
			} else {
				r.AgentName, r.ConcurrencyKey, r.KeyLimit = "keyed", keys[i%len(keys)], keyLimit
			}
			if err := tx.CreateRun(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, "create runs", err)

	var (
		mu        sync.Mutex
		perAgent  = map[string]int{}
		perKey    = map[string]int{}
		claimed   = map[string]bool{}
		violation string
		done      atomic.Int32
		wg        sync.WaitGroup
		errs      = make(chan error, workers)
	)
	for w := range workers {
		runner := newRunner(fmt.Sprintf("lnch_%d", w))
		runner.Tags = nil
		wg.Go(func() {
			for int(done.Load()) < total {
				rs, err := s.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: utcNow(), Max: 1 + w%4})
				if err != nil {
					errs <- err
					return
				}
				if len(rs) == 0 {
					runtime.Gosched()
					continue
				}
				mu.Lock()
				for _, r := range rs {
					if claimed[r.ID] {
						violation = "run " + r.ID + " claimed twice"
					}
					claimed[r.ID] = true
					if r.AgentLimit > 0 {
						if perAgent[r.AgentName]++; perAgent[r.AgentName] > agentLimit {
							violation = fmt.Sprintf("%d runs of %s at once, limit %d", perAgent[r.AgentName], r.AgentName, agentLimit)
						}
					}
					if r.ConcurrencyKey != "" {
						if perKey[r.ConcurrencyKey]++; perKey[r.ConcurrencyKey] > keyLimit {
							violation = fmt.Sprintf("%d runs of key %s at once, limit %d", perKey[r.ConcurrencyKey], r.ConcurrencyKey, keyLimit)
						}
					}
				}
				mu.Unlock()
				runtime.Gosched() // the "execution"
				for _, r := range rs {
					mu.Lock()
					if r.AgentLimit > 0 {
						perAgent[r.AgentName]--
					}
					if r.ConcurrencyKey != "" {
						perKey[r.ConcurrencyKey]--
					}
					mu.Unlock()
					status := orchestrator.RunRunning
					if _, err := s.UpdateRun(ctx(t), r.ID, []orchestrator.RunStatus{orchestrator.RunClaimed}, runner.ID, store.RunUpdate{Status: &status}); err != nil {
						errs <- err
						return
					}
					status = orchestrator.RunCompleted
					if _, err := s.UpdateRun(ctx(t), r.ID, []orchestrator.RunStatus{orchestrator.RunRunning}, runner.ID, store.RunUpdate{Status: &status, EndedAt: ptr(utcNow())}); err != nil {
						errs <- err
						return
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim or report: %v", err)
	}
	if violation != "" {
		t.Fatal(violation)
	}
	if len(claimed) != total {
		t.Fatalf("claimed %d runs, want %d", len(claimed), total)
	}
}

func equal2(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
