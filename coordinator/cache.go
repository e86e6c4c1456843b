package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// The result cache of deterministic agents ([orchestrator.CachePolicy]). A start whose agent has a cache
// gets its key in newSession; startCached then decides, in one transaction holding the key's entry
// (store.LockCacheEntry), whether the start is answered from the cache (a hit), waits for an identical
// start in flight (it joins), or executes (a miss: it leads, and the starts that join wait for it). The
// run that leads fills the entry when it completes and answers the waiters in the same transaction
// (cacheRunEnded); when it does not complete, the oldest waiter leads in its place.

// Cache roles of a run ([orchestrator.Run].CacheRole).
const (
	cacheLead  = "lead"
	cacheWrite = "write"
	cacheWait  = "wait"
)

// Outcomes of [CacheMetrics.CacheRequest].
const (
	cacheHit     = "hit"
	cacheMiss    = "miss"
	cacheJoined  = "joined"
	cacheBypass  = "bypass"
	cacheRefresh = "refresh"
)

// CacheMetrics is an optional capability of a [Metrics]: it counts the result cache's answers to starts
// by agent and outcome — "hit" (answered from a cached result), "joined" (waited for an identical start
// in flight), "miss" (executed to fill the cache), "bypass" and "refresh" (executed as the start asked).
// Package prommetrics has it (orchestrator_cache_requests_total).
type CacheMetrics interface {
	CacheRequest(agent, outcome string)
}

// cacheKeyOf sets run's cache key when its agent's blueprint has a cache and the start may use it.
func cacheKeyOf(run *orchestrator.Run, b *orchestrator.Blueprint, env map[string]string, p *orchestrator.StartRunParams) error {
	if b.Cache == nil || b.Type != orchestrator.AgentTypeDeterministic {
		return nil
	}
	key, err := orchestrator.CacheKey(run.AgentName, b, run.Parameters, env, p.ProjectDir, p.OutputSchema)
	if err != nil {
		return err
	}
	run.CacheKey = key
	return nil
}

// checkCacheMode refuses an unknown cache mode, and one on a resume (a resume is never cached).
func checkCacheMode(p *orchestrator.StartRunParams) error {
	if !p.Cache.Valid() {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cache", "cache must be use, bypass or refresh, not %q", p.Cache)
	}
	if p.Cache != "" && p.Type == orchestrator.RunTypeResume {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cache", "cache applies to starts of deterministic agents; a resume is never cached")
	}
	return nil
}

// startCached creates the session and run of a start whose agent has a cache, as createSession does,
// answering it from the cache or making it wait for an identical start in flight when it can.
func (c *Coordinator) startCached(ctx context.Context, p orchestrator.StartRunParams, key *store.IdempotencyKey, s *orchestrator.Session, run *orchestrator.Run, fx *effects) error {
	if c.metrics != nil {
		defer c.timeStore(opStartRun, time.Now())
	}
	if key != nil {
		key.RunID, key.SessionID, key.CreatedAt = run.ID, run.SessionID, run.CreatedAt
	}
	write, _ := ctx.Value(firingKey{}).(firing)
	var outcome string
	err := c.store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		*fx = effects{}
		s.CachedFrom, run.CacheRole, run.Parked = "", "", false
		if key != nil {
			if err := tx.CreateIdempotencyKey(ctx, key); err != nil {
				if errors.Is(err, orchestrator.ErrConflict) {
					return errKeyTaken
				}
				return err
			}
		}
		if write != nil {
			if err := write(ctx, tx, s); err != nil {
				return err
			}
		}
		var err error
		outcome, err = c.cacheDecide(ctx, tx, fx, p, s, run)
		return err
	})
	if err == nil {
		if cm, ok := c.metrics.(CacheMetrics); ok {
			cm.CacheRequest(run.AgentName, outcome)
		}
	}
	return err
}

// cacheDecide is startCached's transaction, after the idempotency key and the schedule's tick: it locks
// the key's entry, creates the session and run in the role the entry gives them, and returns the outcome.
func (c *Coordinator) cacheDecide(ctx context.Context, tx store.Store, fx *effects, p orchestrator.StartRunParams, s *orchestrator.Session, run *orchestrator.Run) (string, error) {
	now := c.now()
	if p.Cache == orchestrator.CacheBypass || run.RunAt != nil {
		// A bypass executes whatever the cache holds, and so does a delayed start: the cache answers what
		// is asked now, not what a run will find later. Both still fill it.
		run.CacheRole = cacheWrite
		fx.wakeFor(run)
		return cacheBypass, tx.CreateSessionWithRun(ctx, s, run)
	}
	e, err := tx.LockCacheEntry(ctx, run.CacheKey, run.AgentName, now)
	if err != nil {
		return "", err
	}
	if e.LeaderSessionID != "" {
		// A leader that ended without clearing its entry (its session was deleted, say) leads nothing.
		if ls, err := tx.GetSession(ctx, e.LeaderSessionID); errors.Is(err, orchestrator.ErrNotFound) || (err == nil && ls.Status.Ended()) {
			e.LeaderSessionID = ""
		} else if err != nil {
			return "", err
		}
	}
	if p.Cache != orchestrator.CacheRefresh {
		if src := c.cachedSource(ctx, tx, e, run.AgentName, now); src != nil {
			run.CacheRole, run.Parked = cacheWait, true
			s.CachedFrom = src.ID
			fx.created = append(fx.created, run.AgentName)
			if err := tx.CreateSessionWithRun(ctx, s, run); err != nil {
				return "", err
			}
			return cacheHit, c.completeFromCache(ctx, tx, fx, run, src.ID, src.Result)
		}
		if e.LeaderSessionID != "" {
			run.CacheRole, run.Parked = cacheWait, true
			fx.created = append(fx.created, run.AgentName)
			return cacheJoined, tx.CreateSessionWithRun(ctx, s, run)
		}
	}
	outcome := cacheMiss
	if p.Cache == orchestrator.CacheRefresh {
		outcome = cacheRefresh
		e.SessionID, e.CompletedAt, e.ExpiresAt = "", time.Time{}, time.Time{}
	}
	run.CacheRole = cacheWrite
	if e.LeaderSessionID == "" {
		run.CacheRole, e.LeaderSessionID = cacheLead, s.ID
	}
	e.UpdatedAt = now
	if err := tx.PutCacheEntry(ctx, e); err != nil {
		return "", err
	}
	fx.wakeFor(run)
	return outcome, tx.CreateSessionWithRun(ctx, s, run)
}

// cachedSource returns the completed session whose result e holds, when it is still fresh by the entry's
// expiry and by the agent's TTL now (it may have been shortened), nil otherwise.
func (c *Coordinator) cachedSource(ctx context.Context, tx store.Store, e *store.CacheEntry, agentName string, now time.Time) *orchestrator.Session {
	if e.SessionID == "" || !e.ExpiresAt.After(now) {
		return nil
	}
	if a, err := c.startAgent(ctx, agentName); err != nil || a.Blueprint.Cache == nil || !e.CompletedAt.Add(a.Blueprint.Cache.TTL()).After(now) {
		return nil
	}
	src, err := tx.GetSession(ctx, e.SessionID)
	if err != nil || src.Status != orchestrator.SessionCompleted || src.Result == nil {
		return nil // deleted by retention, or resumed since: execute
	}
	return src
}

// completeFromCache completes a pending run (a hit, or a waiter whose leader completed) with the result of
// session from, without a runner: its session gets CachedFrom and a cache_hit event, then ends as any
// completed run ends (result and run_ended events, webhook, callbacks).
func (c *Coordinator) completeFromCache(ctx context.Context, tx store.Store, fx *effects, run *orchestrator.Run, from string, res *orchestrator.Result) error {
	shared := *res
	shared.Usage = nil // the answer consumed nothing
	now := c.now()
	if _, err := tx.UpdateSession(ctx, run.SessionID, []orchestrator.SessionStatus{orchestrator.SessionPending}, store.SessionUpdate{
		CachedFrom: &from, UpdatedAt: now,
		AppendEvents: []*orchestrator.Event{eventOf(orchestrator.EventCacheHit, now, map[string]string{"cached_from": from, "cache_key": run.CacheKey})},
	}); err != nil {
		return err
	}
	return c.finishRunFrom(ctx, tx, fx, run.ID, "", []orchestrator.RunStatus{orchestrator.RunPending}, orchestrator.RunCompleted, &shared, "")
}

// cacheRunEnded follows the end of a run that fills the cache (lead or write), in the transaction that
// ends it: a completed, untruncated result is cached for the agent's TTL; a leader's end answers the runs
// waiting for it with its result when it completed, and otherwise makes the oldest of them lead.
func (c *Coordinator) cacheRunEnded(ctx context.Context, tx store.Store, fx *effects, run *store.RunBrief, status orchestrator.RunStatus, res *orchestrator.Result, sessionID string) error {
	now := c.now()
	e, err := tx.LockCacheEntry(ctx, run.CacheKey, run.AgentName, now)
	if err != nil {
		return err
	}
	share := status == orchestrator.RunCompleted && res != nil && !res.Truncated && !res.Failed()
	if share {
		if a, err := c.startAgent(ctx, run.AgentName); err == nil && a.Blueprint.Cache != nil {
			e.SessionID, e.CompletedAt, e.ExpiresAt = sessionID, now, now.Add(a.Blueprint.Cache.TTL())
		}
	}
	if e.LeaderSessionID == sessionID {
		e.LeaderSessionID = ""
		waiters, err := tx.ListCacheWaiters(ctx, run.CacheKey)
		if err != nil {
			return err
		}
		switch {
		case len(waiters) == 0:
		case share:
			for _, w := range waiters {
				if err := c.completeFromCache(ctx, tx, fx, w, sessionID, res); err != nil {
					return err
				}
			}
		default:
			// A failure is not shared (it may be passing): the oldest waiter executes, the others wait for it.
			next := waiters[0]
			if err := tx.SetRunCacheRole(ctx, next.ID, cacheLead, false); err != nil {
				return err
			}
			e.LeaderSessionID = next.SessionID
			fx.wakeFor(next)
		}
	}
	e.UpdatedAt = now
	return tx.PutCacheEntry(ctx, e)
}

// pruneCache deletes the cache entries whose result expired (retention sweep).
func (c *Coordinator) pruneCache(ctx context.Context) error {
	before := c.now()
	for ctx.Err() == nil {
		n, err := c.store.DeleteCacheEntries(ctx, before, retentionBatch)
		if err != nil || n < retentionBatch {
			return err
		}
	}
	return nil
}
