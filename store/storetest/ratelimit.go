package storetest

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// rateRun is a run of agent under a rate limit of limit per period, in bucket.
func rateRun(id string, created time.Time, agent, bucket string, limit int, period time.Duration) *orchestrator.Run {
	r := newRun(id, "ses_"+id, created)
	r.Demands = orchestrator.Demands{}
	r.AgentName, r.RateLimit, r.RatePeriod, r.RateBucket = agent, limit, period, bucket
	return r
}

// testRateLimit covers rate limits in the claim: a bucket's window, buckets apart, priority order within a
// held bucket, the counts that say a run is held, and windows under concurrent claims.
func testRateLimit(t *testing.T, newStore func(*testing.T) store.Store) {
	runner := newRunner("lnch_a")
	runner.Tags = nil
	claim := func(t *testing.T, s store.Store, now time.Time, max int) []string {
		t.Helper()
		rs, err := s.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: now, Max: max})
		must(t, "ClaimRuns", err)
		return runIDsOrNil(rs)
	}

	// Two per second: a claim takes two, the next ones within the second take none (the free run behind
	// them is not held up), and a second after the first claims two more. Priority orders the held runs.
	t.Run("Window", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for i := range 5 {
			r := rateRun(fmt.Sprintf("run_%d", i), at(i), "api", "", 2, time.Second)
			if i == 4 {
				r.Priority = 2 // the lowest: last
			}
			must(t, "CreateRun", s.CreateRun(ctx(t), r))
		}
		free := newRun("run_free", "ses_free", at(10))
		free.Demands = orchestrator.Demands{}
		must(t, "CreateRun", s.CreateRun(ctx(t), free))
		got, err := s.GetRun(ctx(t), "run_0")
		must(t, "GetRun", err)
		equal(t, "rate-limited run", got, rateRun("run_0", at(0), "api", "", 2, time.Second))

		if ids := claim(t, s, at(100), 10); !equal2(ids, []string{"run_0", "run_1", "run_free"}) {
			t.Fatalf("first claim took %v, want run_0, run_1 (the limit) and run_free", ids)
		}
		if ids := claim(t, s, at(600), 10); len(ids) != 0 {
			t.Fatalf("claim within the window took %v, want none", ids)
		}
		n, err := s.RateLimitStarts(ctx(t), "api", "", at(600).Add(-time.Second))
		must(t, "RateLimitStarts", err)
		if n != 2 {
			t.Fatalf("RateLimitStarts within the window = %d, want 2", n)
		}
		held, err := s.RateLimitedRuns(ctx(t), at(600))
		must(t, "RateLimitedRuns", err)
		equal(t, "runs held at 600ms", held, map[string]int{"api": 3})
		if ids := claim(t, s, at(1099), 10); len(ids) != 0 {
			t.Fatalf("claim a millisecond before the window slides took %v, want none", ids)
		}
		if ids := claim(t, s, at(1101), 1); !equal2(ids, []string{"run_2"}) {
			t.Fatalf("claim of one after the window slid took %v, want run_2", ids)
		}
		if ids := claim(t, s, at(1102), 10); !equal2(ids, []string{"run_3"}) {
			t.Fatalf("claim after the window slid took %v, want run_3 (one more fits)", ids)
		}
		if ids := claim(t, s, at(2200), 10); !equal2(ids, []string{"run_4"}) {
			t.Fatalf("last claim took %v, want run_4", ids)
		}
		held, err = s.RateLimitedRuns(ctx(t), at(2200))
		must(t, "RateLimitedRuns", err)
		equal(t, "runs held once all are claimed", held, map[string]int{})
	})

	// Buckets are apart: a full bucket holds its own runs only.
	t.Run("Buckets", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for i, b := range []string{`"a"`, `"a"`, `"b"`, `"a"`, `"b"`, `"b"`} {
			must(t, "CreateRun", s.CreateRun(ctx(t), rateRun(fmt.Sprintf("run_%d", i), at(i), "api", b, 1, time.Minute)))
		}
		if ids := claim(t, s, at(100), 10); !equal2(ids, []string{"run_0", "run_2"}) {
			t.Fatalf("claim took %v, want one run per bucket: run_0, run_2", ids)
		}
		if ids := claim(t, s, at(200), 10); len(ids) != 0 {
			t.Fatalf("claim with both buckets full took %v", ids)
		}
		if ids := claim(t, s, at(100+60000), 1); !equal2(ids, []string{"run_1"}) {
			t.Fatalf("claim a minute later took %v, want run_1", ids)
		}
	})

	t.Run("Concurrent", func(t *testing.T) { RateLimitConcurrent(t, newStore(t), nil) })
}

// RateLimitConcurrent has workers on a and b — two coordinator replicas when b shares a's database; b nil
// uses a alone — claim runs under a limit of 3 per 150 ms in two buckets at once, and checks the claim
// times: in no window of 150 ms did a bucket get more than 3 runs, and every run was claimed once.
func RateLimitConcurrent(t *testing.T, a, b store.Store) {
	t.Parallel()
	if b == nil {
		b = a
	}
	const (
		limit   = 3
		period  = 150 * time.Millisecond
		workers = 6
	)
	total := 24
	if raceDetector {
		total = 12
	}
	buckets := []string{`"x"`, `"y"`}
	now := utcNow()
	for i := range total {
		must(t, "CreateRun", a.CreateRun(ctx(t), rateRun(fmt.Sprintf("run_%03d", i), now.Add(time.Duration(i)*time.Microsecond), "api", buckets[i%2], limit, period)))
	}
	var (
		mu      sync.Mutex
		claimed = map[string][]time.Time{}
		seen    = map[string]bool{}
		wg      sync.WaitGroup
		errs    = make(chan error, workers)
		twice   string
	)
	deadline := time.Now().Add(time.Minute)
	for w := range workers {
		st := a
		if w%2 == 1 {
			st = b
		}
		runner := newRunner(fmt.Sprintf("lnch_%d", w))
		runner.Tags = nil
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				finished := len(seen) == total
				mu.Unlock()
				if finished {
					return
				}
				rs, err := st.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: utcNow(), Max: 2})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, r := range rs {
					if seen[r.ID] {
						twice = r.ID
					}
					seen[r.ID] = true
					claimed[r.RateBucket] = append(claimed[r.RateBucket], *r.ClaimedAt)
				}
				mu.Unlock()
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim: %v", err)
	}
	if twice != "" {
		t.Fatalf("run %s claimed twice", twice)
	}
	if len(seen) != total {
		t.Fatalf("claimed %d of %d runs within a minute", len(seen), total)
	}
	for bucket, times := range claimed {
		slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
		for i := 0; i+limit < len(times); i++ {
			// The claim times are kept to the millisecond: a gap a millisecond short is rounding.
			if gap := times[i+limit].Sub(times[i]); gap < period-time.Millisecond {
				t.Fatalf("bucket %s: %d claims within %v (claims %d and %d are %v apart), limit %d per %v",
					bucket, limit+1, period, i, i+limit, gap, limit, period)
			}
		}
	}
}
