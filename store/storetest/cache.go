package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testCache covers the result cache's entries: a key never seen is a miss (an empty entry), a written
// entry reads back (a hit while fresh), retention deletes expired entries and keeps fresh and led ones,
// waiters are listed and promoted, and concurrent starts of one key elect one leader (single flight).
func testCache(t *testing.T, newStore func(*testing.T) store.Store) {
	lock := func(t *testing.T, s store.Store, key string, now time.Time) *store.CacheEntry {
		t.Helper()
		var e *store.CacheEntry
		must(t, "LockCacheEntry", s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			var err error
			e, err = tx.LockCacheEntry(ctx, key, "lint", now)
			return err
		}))
		return e
	}
	put := func(t *testing.T, s store.Store, e *store.CacheEntry) {
		t.Helper()
		must(t, "PutCacheEntry", s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if _, err := tx.LockCacheEntry(ctx, e.Key, e.AgentName, e.UpdatedAt); err != nil {
				return err
			}
			return tx.PutCacheEntry(ctx, e)
		}))
	}

	// A key never seen is a miss: an empty entry for the agent. A written entry reads back whole: a hit.
	t.Run("MissThenHit", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		got := lock(t, s, "k1", at(0))
		equal(t, "entry of a new key", got, &store.CacheEntry{Key: "k1", AgentName: "lint", UpdatedAt: at(0)})
		e := &store.CacheEntry{Key: "k1", AgentName: "lint", SessionID: "ses_1", CompletedAt: at(10), ExpiresAt: at(60010), UpdatedAt: at(10)}
		put(t, s, e)
		equal(t, "entry after a write", lock(t, s, "k1", at(20)), e)
		led := &store.CacheEntry{Key: "k1", AgentName: "lint", LeaderSessionID: "ses_2", UpdatedAt: at(30)}
		put(t, s, led)
		equal(t, "entry of a refresh in flight", lock(t, s, "k1", at(40)), led)
	})

	// Retention deletes entries whose result expired, and empty entries last written before its time;
	// it keeps fresh entries and entries a start is filling.
	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		put(t, s, &store.CacheEntry{Key: "expired", AgentName: "lint", SessionID: "ses_1", CompletedAt: at(0), ExpiresAt: at(1000), UpdatedAt: at(0)})
		put(t, s, &store.CacheEntry{Key: "fresh", AgentName: "lint", SessionID: "ses_2", CompletedAt: at(0), ExpiresAt: at(9000), UpdatedAt: at(0)})
		put(t, s, &store.CacheEntry{Key: "empty", AgentName: "lint", UpdatedAt: at(0)})
		put(t, s, &store.CacheEntry{Key: "led", AgentName: "lint", SessionID: "ses_3", CompletedAt: at(0), ExpiresAt: at(1000), LeaderSessionID: "ses_4", UpdatedAt: at(0)})
		n, err := s.DeleteCacheEntries(ctx(t), at(5000), 100)
		must(t, "DeleteCacheEntries", err)
		if n != 2 {
			t.Fatalf("DeleteCacheEntries deleted %d entries, want 2 (expired, empty)", n)
		}
		if e := lock(t, s, "expired", at(6000)); e.SessionID != "" {
			t.Fatalf("expired entry survived retention: %+v", e)
		}
		if e := lock(t, s, "fresh", at(6000)); e.SessionID != "ses_2" {
			t.Fatalf("fresh entry lost its result: %+v", e)
		}
		if e := lock(t, s, "led", at(6000)); e.LeaderSessionID != "ses_4" {
			t.Fatalf("entry in flight lost its leader: %+v", e)
		}
	})

	// Waiters are the pending runs with role wait under the key, oldest first; promoting one unparks it,
	// and a run no longer pending cannot be promoted.
	t.Run("Waiters", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		mk := func(id string, created time.Time, key, role string) *orchestrator.Run {
			r := newRun(id, "ses_"+id, created)
			r.CacheKey, r.CacheRole, r.Parked = key, role, role == "wait"
			must(t, "CreateRun", s.CreateRun(ctx(t), r))
			return r
		}
		mk("run_w2", at(2), "k", "wait")
		mk("run_w1", at(1), "k", "wait")
		lead := mk("run_lead", at(0), "k", "lead")
		mk("run_other", at(3), "k2", "wait")
		got, err := s.GetRun(ctx(t), lead.ID)
		must(t, "GetRun", err)
		equal(t, "leader run", got, lead)
		ws, err := s.ListCacheWaiters(ctx(t), "k")
		must(t, "ListCacheWaiters", err)
		equal(t, "waiters", runIDs(ws), []string{"run_w1", "run_w2"})
		must(t, "SetRunCacheRole", s.SetRunCacheRole(ctx(t), "run_w1", "lead", false))
		r, err := s.GetRun(ctx(t), "run_w1")
		must(t, "GetRun", err)
		if r.CacheRole != "lead" || r.Parked {
			t.Fatalf("promoted waiter has role %q, parked %v; want lead, unparked", r.CacheRole, r.Parked)
		}
		ws, err = s.ListCacheWaiters(ctx(t), "k")
		must(t, "ListCacheWaiters", err)
		equal(t, "waiters after a promotion", runIDs(ws), []string{"run_w2"})
		_, err = s.UpdateRun(ctx(t), "run_w2", nil, "", store.RunUpdate{Status: ptr(orchestrator.RunStopped), EndedAt: ptr(at(5))})
		must(t, "UpdateRun", err)
		wantErr(t, "SetRunCacheRole of a stopped run", s.SetRunCacheRole(ctx(t), "run_w2", "lead", false), orchestrator.ErrConflict)
		ws, err = s.ListCacheWaiters(ctx(t), "k")
		must(t, "ListCacheWaiters", err)
		equal(t, "waiters once all have left", runIDs(ws), []string{})
	})

	// Of concurrent starts of one key, exactly one finds no leader and leads; every other one sees it.
	t.Run("SingleFlight", func(t *testing.T) { CacheSingleFlight(t, newStore(t), newStore(t), false) })

	// A session's CachedFrom is stored and updated.
	t.Run("CachedFrom", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		se := newSession("ses_hit", at(0))
		se.CachedFrom = "ses_src"
		must(t, "CreateSession", s.CreateSession(ctx(t), se))
		got, err := s.GetSession(ctx(t), se.ID)
		must(t, "GetSession", err)
		equal(t, "session answered from the cache", got, se)
		got, err = s.UpdateSession(ctx(t), se.ID, nil, store.SessionUpdate{CachedFrom: ptr("ses_other"), UpdatedAt: at(1)})
		must(t, "UpdateSession", err)
		if got.CachedFrom != "ses_other" {
			t.Fatalf("CachedFrom after an update = %q, want ses_other", got.CachedFrom)
		}
	})
}

// CacheSingleFlight has starts of one cache key race on two stores — two coordinator replicas when a
// and b share a database, else the same store twice (shared false: b is ignored) — and checks that
// exactly one of them leads.
func CacheSingleFlight(t *testing.T, a, b store.Store, shared bool) {
	t.Parallel()
	if !shared {
		b = a
	}
	starts := concurrencyScale(40)
	var (
		mu      sync.Mutex
		leaders []string
		wg      sync.WaitGroup
		errs    = make(chan error, starts)
	)
	for i := range starts {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			me := fmt.Sprintf("ses_%03d", i)
			err := st.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
				e, err := tx.LockCacheEntry(ctx, "hot", "lint", utcNow())
				if err != nil {
					return err
				}
				if e.LeaderSessionID != "" {
					return nil // joins
				}
				e.LeaderSessionID, e.UpdatedAt = me, utcNow()
				if err := tx.PutCacheEntry(ctx, e); err != nil {
					return err
				}
				mu.Lock()
				leaders = append(leaders, me)
				mu.Unlock()
				return nil
			})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent start: %v", err)
	}
	if len(leaders) != 1 {
		t.Fatalf("%d of %d concurrent starts led (%v), want exactly one", len(leaders), starts, leaders)
	}
}
