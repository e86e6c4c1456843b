package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// The same idempotency key with the same request answers with the first run, from any number of
// concurrent duplicates; with a different request it is refused.
func TestStartRunIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	register(t, c, "host-a", crawler())
	p := orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`), IdempotencyKey: "order-42"}

	const callers = 8
	results := make([]*orchestrator.StartRunResult, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			q := p
			if i%2 == 1 {
				q.Parameters = json.RawMessage(`{ "url": "https://a.example" }`) // the same request, spaced differently
			}
			res, err := c.StartRun(ctx, q)
			if err != nil {
				t.Errorf("StartRun %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	first := 0
	for i, res := range results {
		if res.RunID != results[0].RunID || res.SessionID != results[0].SessionID {
			t.Fatalf("duplicate %d answered run %s of session %s, want run %s of %s", i, res.RunID, res.SessionID, results[0].RunID, results[0].SessionID)
		}
		if !res.Replayed {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("%d answers were not replays, want exactly 1", first)
	}
	runs, err := c.ListRuns(ctx, orchestrator.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns: %d runs (%v), want 1", len(runs), err)
	}

	q := p
	q.Parameters = json.RawMessage(`{"url":"https://b.example"}`)
	_, err = c.StartRun(ctx, q)
	if !errors.Is(err, orchestrator.ErrConflict) || orchestrator.ErrorCode(err) != "idempotency_key_reused" {
		t.Fatalf("same key, different request: %v, want idempotency_key_reused", err)
	}
}

// Bad submission fields are refused with their own codes, and create nothing.
func TestStartRunSubmissionValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	register(t, c, "host-a", crawler())
	past := time.Now().Add(-time.Hour)
	far := time.Now().Add(400 * 24 * time.Hour)
	for _, tc := range []struct {
		name string
		edit func(*orchestrator.StartRunParams)
		code string
	}{
		{"priority 0 is the default", func(p *orchestrator.StartRunParams) { p.Priority = 0 }, ""},
		{"priority 5", func(p *orchestrator.StartRunParams) { p.Priority = 5 }, "invalid_priority"},
		{"priority -1", func(p *orchestrator.StartRunParams) { p.Priority = -1 }, "invalid_priority"},
		{"negative delay", func(p *orchestrator.StartRunParams) { p.Delay = -time.Second }, "invalid_delay"},
		{"run_at and delay", func(p *orchestrator.StartRunParams) { p.Delay, p.RunAt = time.Second, &past }, "invalid_run_at"},
		{"run_at too far", func(p *orchestrator.StartRunParams) { p.RunAt = &far }, "invalid_run_at"},
		{"run_at in the past is now", func(p *orchestrator.StartRunParams) { p.RunAt = &past }, ""},
		{"control character in a key", func(p *orchestrator.StartRunParams) { p.IdempotencyKey = "a\nb" }, "invalid_idempotency_key"},
		{"long concurrency key", func(p *orchestrator.StartRunParams) { p.ConcurrencyKey = string(make([]byte, 256)) }, "invalid_concurrency_key"},
	} {
		p := orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)}
		tc.edit(&p)
		before, _ := c.ListRuns(ctx, orchestrator.RunFilter{})
		res, err := c.StartRun(ctx, p)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else if r, _ := c.GetRun(ctx, res.RunID); r.RunAt != nil {
				t.Errorf("%s: the run is delayed until %v", tc.name, r.RunAt)
			}
			continue
		}
		if !errors.Is(err, orchestrator.ErrInvalid) || orchestrator.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v (code %q), want code %s", tc.name, err, orchestrator.ErrorCode(err), tc.code)
		}
		if after, _ := c.ListRuns(ctx, orchestrator.RunFilter{}); len(after) != len(before) {
			t.Errorf("%s: a refused request created a run", tc.name)
		}
	}
}

// A runner parked in a long poll is handed a delayed run when it becomes due: woken by the coordinator's
// timer, not by looking again and again. Its poll looks at the store twice: when it starts (nothing is due)
// and when the timer wakes it.
func TestDelayedRunWakesParkedPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &lookCountingStore{Store: newStore(t)}
	c := newCoordinator(t, coordinator.Config{Store: st, PollTimeout: time.Minute})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`), Delay: 300 * time.Millisecond})
	run, err := c.GetRun(ctx, res.RunID)
	if err != nil || run.RunAt == nil {
		t.Fatalf("GetRun: %+v, %v; want a delayed run", run, err)
	}
	st.looks.Store(0)
	w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: a.RunnerID, Wait: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Runs) != 1 || w.Runs[0].Run.ID != res.RunID {
		t.Fatalf("parked poll returned %+v, want run %s", w, res.RunID)
	}
	if claimed := w.Runs[0].Run.ClaimedAt; claimed == nil || claimed.Before(*run.RunAt) {
		t.Fatalf("the run due at %v was claimed at %v", run.RunAt, claimed)
	}
	if n := st.looks.Load(); n != 2 {
		t.Fatalf("the parked poll looked at the store %d times, want 2 (at its start and when the run was due)", n)
	}
}

// An agent's max_concurrent holds across runners: with a limit of 1, the second runner gets nothing until
// the first run ends, and is then woken with the next run.
func TestAgentLimitAcrossRunners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{PollTimeout: time.Minute})
	registerAI(t, c, "host-a")
	b := registerAI(t, c, "host-b")
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "gpu-agent", MaxConcurrent: 1}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 2 {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "gpu-agent", Prompt: fmt.Sprint("job ", i)})
		ids = append(ids, res.RunID)
	}
	regs, _ := c.ListRunners(ctx)
	var first *orchestrator.Work
	for _, r := range regs {
		if r.ID != b.RunnerID {
			first = poll(t, c, r.ID, 4)
			if len(first.Runs) != 1 || first.Runs[0].Run.ID != ids[0] {
				t.Fatalf("first runner got %+v, want only %s", first, ids[0])
			}
		}
	}
	if w := poll(t, c, b.RunnerID, 4); len(w.Runs) != 0 {
		t.Fatalf("second runner got %d runs while the agent's only slot is taken", len(w.Runs))
	}
	got := make(chan *orchestrator.Work, 1)
	go func() {
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: b.RunnerID, Wait: time.Minute, Max: 4})
		if err != nil {
			t.Errorf("PollWork: %v", err)
		}
		got <- w
	}()
	holder := first.Runs[0].Run
	report(t, c, orchestrator.RunReport{RunnerID: holder.RunnerID, RunID: holder.ID, Status: orchestrator.RunCompleted, Result: &orchestrator.Result{ResultText: "ok"}})
	select {
	case w := <-got:
		if w == nil || len(w.Runs) != 1 || w.Runs[0].Run.ID != ids[1] {
			t.Fatalf("parked poll returned %+v, want %s", w, ids[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the parked runner was not woken when the slot freed")
	}
}
