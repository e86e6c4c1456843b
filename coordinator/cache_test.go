package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// cachedCrawler is the crawler with a result cache of a minute.
func cachedCrawler() *orchestrator.Blueprint {
	b := crawler()
	b.Cache = &orchestrator.CachePolicy{TTLSeconds: 60}
	return b
}

// execute claims the run the runner is handed and reports it with result (completed), or failed when
// result is nil.
func execute(t *testing.T, c orchestrator.Coordinator, runnerID string, result *orchestrator.Result) string {
	t.Helper()
	w := poll(t, c, runnerID, 1)
	if len(w.Runs) != 1 {
		t.Fatalf("poll handed %d runs, want 1", len(w.Runs))
	}
	id := w.Runs[0].Run.ID
	report(t, c, orchestrator.RunReport{RunnerID: runnerID, RunID: id, Status: orchestrator.RunRunning})
	if result == nil {
		report(t, c, orchestrator.RunReport{RunnerID: runnerID, RunID: id, Status: orchestrator.RunFailed, Error: "exit 1"})
	} else {
		report(t, c, orchestrator.RunReport{RunnerID: runnerID, RunID: id, Status: orchestrator.RunCompleted, Result: result})
	}
	return id
}

func pagesResult(n int) *orchestrator.Result {
	exit := 0
	data, _ := json.Marshal(map[string]int{"pages": n})
	return &orchestrator.Result{ResultType: "deterministic", ResultText: string(data), ResultData: data, ExitCode: &exit}
}

func sessionOf(t *testing.T, c orchestrator.Coordinator, id string) *orchestrator.Session {
	t.Helper()
	s, err := c.GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", id, err)
	}
	return s
}

func TestResultCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	a := register(t, c, "host-a", cachedCrawler())
	params := func(s string) orchestrator.StartRunParams {
		return orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(s)}
	}

	// A miss executes; the same start then completes at once from the cache, without a runner: key order
	// and an explicit default (depth 2) do not matter.
	first := start(t, c, params(`{"url":"https://a.example"}`))
	execute(t, c, a.RunnerID, pagesResult(3))
	hit, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"depth": 2, "url": "https://a.example"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if hit.Status != orchestrator.SessionCompleted || hit.Result == nil || string(hit.Result.ResultData) != `{"pages":3}` {
		t.Fatalf("identical start answered %+v, want completed at once with the cached result", hit)
	}
	s := sessionOf(t, c, hit.SessionID)
	if s.CachedFrom != first.SessionID {
		t.Fatalf("cached_from = %q, want %s", s.CachedFrom, first.SessionID)
	}
	evs, err := c.ListEvents(ctx, hit.SessionID, 0, 10, 0)
	if err != nil || len(evs) == 0 || evs[0].Type != orchestrator.EventCacheHit {
		t.Fatalf("events of the hit = %v %v, want cache_hit first", evs, err)
	}
	if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 0 {
		t.Fatalf("a hit reached the runner: %+v", w.Runs[0].Run)
	}

	// Different parameters execute; a bypass executes; a refresh executes.
	start(t, c, params(`{"url":"https://b.example"}`))
	execute(t, c, a.RunnerID, pagesResult(4))
	p := params(`{"url":"https://a.example"}`)
	p.Cache = orchestrator.CacheBypass
	start(t, c, p)
	execute(t, c, a.RunnerID, pagesResult(5))
	// The bypass still wrote its result.
	got := start(t, c, params(`{"url":"https://a.example"}`))
	if s := sessionOf(t, c, got.SessionID); s.Status != orchestrator.SessionCompleted || string(s.Result.ResultData) != `{"pages":5}` {
		t.Fatalf("start after a bypass = %s %+v, want the bypass's result", s.Status, s.Result)
	}

	// After the TTL, a start executes again.
	clk.Advance(61 * time.Second)
	expired := start(t, c, params(`{"url":"https://a.example"}`))
	if s := sessionOf(t, c, expired.SessionID); s.Status != orchestrator.SessionPending || s.CachedFrom != "" {
		t.Fatalf("start after the TTL = %s (cached_from %q), want pending: it executes", s.Status, s.CachedFrom)
	}
	execute(t, c, a.RunnerID, nil) // and fails: not cached
	again := start(t, c, params(`{"url":"https://a.example"}`))
	if s := sessionOf(t, c, again.SessionID); s.Status != orchestrator.SessionPending {
		t.Fatalf("start after a failure = %s, want pending: a failure is not cached", s.Status)
	}
	execute(t, c, a.RunnerID, pagesResult(6))

	// A cache on an AI agent is refused; so are an unknown mode and a cache mode on a resume.
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "writer", Cache: &orchestrator.CachePolicy{TTLSeconds: 5}}); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("AI agent with a cache: %v, want ErrInvalid", err)
	}
	p = params(`{"url":"https://a.example"}`)
	p.Cache = "sometimes"
	if _, err := c.StartRun(ctx, p); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Fatalf("cache mode sometimes: %v, want ErrInvalid", err)
	}
	if info, err := c.GetAgent(ctx, "web-crawler"); err != nil || info.Cache == nil || info.Cache.TTLSeconds != 60 {
		t.Fatalf("GetAgent shows cache %+v (%v), want ttl 60", info, err)
	}
}

// Identical starts while the first executes wait for it and share its result; when it fails, the oldest
// of them executes in its place.
func TestResultCacheSingleFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", cachedCrawler())
	p := orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)}
	lead := start(t, c, p)
	var waiters []string
	for range 3 {
		waiters = append(waiters, start(t, c, p).SessionID)
	}
	for _, id := range waiters {
		if s := sessionOf(t, c, id); s.Status != orchestrator.SessionPending || s.WaitingReason != orchestrator.WaitingCacheInFlight {
			t.Fatalf("waiter %s: %s, waiting_reason %q; want pending, cache_in_flight", id, s.Status, s.WaitingReason)
		}
	}
	// The leader fails: the oldest waiter executes, the others keep waiting.
	execute(t, c, a.RunnerID, nil)
	if s := sessionOf(t, c, lead.SessionID); s.Status != orchestrator.SessionFailed {
		t.Fatalf("leader %s, want failed", s.Status)
	}
	execute(t, c, a.RunnerID, pagesResult(7))
	for i, id := range waiters {
		s, err := c.WaitSession(ctx, id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != orchestrator.SessionCompleted || string(s.Result.ResultData) != `{"pages":7}` {
			t.Fatalf("waiter %d: %s %+v, want completed with the new leader's result", i, s.Status, s.Result)
		}
		if i > 0 && s.CachedFrom != waiters[0] {
			t.Fatalf("waiter %d cached_from %q, want %s (the promoted leader)", i, s.CachedFrom, waiters[0])
		}
	}
	if w := poll(t, c, a.RunnerID, 5); len(w.Runs) != 0 {
		t.Fatalf("runs left for the runner after the flight: %d", len(w.Runs))
	}
}

// A rate limit holds runs pending (waiting_reason rate_limited) and lets them start as its window slides.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Now: clk.Now})
	b := crawler()
	b.RateLimit = &orchestrator.RateLimit{Limit: 2, PeriodSeconds: 10, Key: "$.url"}
	a := register(t, c, "host-a", b)
	var ids []string
	for _, u := range []string{"a", "a", "a", "b"} {
		ids = append(ids, start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://` + u + `.example"}`)}).SessionID)
	}
	if w := poll(t, c, a.RunnerID, 10); len(w.Runs) != 3 {
		t.Fatalf("first poll handed %d runs, want 3 (two of bucket a, one of b)", len(w.Runs))
	}
	if s := sessionOf(t, c, ids[2]); s.WaitingReason != orchestrator.WaitingRateLimited {
		t.Fatalf("third run of bucket a: waiting_reason %q, want rate_limited", s.WaitingReason)
	}
	clk.Advance(11 * time.Second)
	if w := poll(t, c, a.RunnerID, 10); len(w.Runs) != 1 || w.Runs[0].Run.SessionID != ids[2] {
		t.Fatalf("poll after the window handed %d runs, want the held one", len(w.Runs))
	}
	if info, err := c.GetAgent(context.Background(), "web-crawler"); err != nil || info.RateLimit == nil || info.RateLimit.Limit != 2 {
		t.Fatalf("GetAgent shows rate_limit %+v (%v)", info, err)
	}
}
