package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// usageEvent is a usage event with the delta u.
func usageEvent(u orchestrator.Usage) *orchestrator.Event {
	b, _ := json.Marshal(u)
	return &orchestrator.Event{Type: orchestrator.EventUsage, Data: b}
}

// sessionUsage reads session id's usage totals.
func sessionUsage(t *testing.T, s store.Store, id string) orchestrator.Usage {
	t.Helper()
	se, err := s.GetSession(ctx(t), id)
	must(t, "GetSession", err)
	return se.Usage
}

// testUsage checks the sessions' running usage totals: usage events add their deltas in the same write
// as the events, SessionUpdate.AddUsage adds a run's final figure, and concurrent additions are all
// counted. Costs are multiples of 1/64 so that every sum is exact whatever the order of the additions.
func testUsage(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("Events", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		equal(t, "usage of a new session", sessionUsage(t, s, "ses_a"), orchestrator.Usage{})
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", []*orchestrator.Event{
			usageEvent(orchestrator.Usage{Model: "m1", InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheCreationInputTokens: 40, CostUSD: 0.25}),
			{Type: "progress", Data: json.RawMessage(`{"input_tokens": 1000}`)}, // not a usage event: counts nothing
			usageEvent(orchestrator.Usage{Model: "m2", InputTokens: 1, OutputTokens: 2, CostUSD: 0.125}),
		}))
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", []*orchestrator.Event{{Type: "progress", Data: json.RawMessage(`{}`)}}))
		want := orchestrator.Usage{InputTokens: 11, OutputTokens: 22, CacheReadInputTokens: 30, CacheCreationInputTokens: 40, CostUSD: 0.375}
		equal(t, "usage after two usage events", sessionUsage(t, s, "ses_a"), want)
		page, err := s.ListSessions(ctx(t), orchestrator.SessionFilter{})
		must(t, "ListSessions", err)
		if len(page) != 1 || !reflect.DeepEqual(page[0].Usage, want) {
			t.Fatalf("ListSessions: %s, want usage %s", show(page), show(want))
		}
		se, err := s.GetSession(ctx(t), "ses_a")
		must(t, "GetSession", err)
		if se.LastEventSeq != 4 {
			t.Fatalf("last event seq %d, want 4", se.LastEventSeq)
		}

		// A usage event whose data is not a usage delta is refused with everything appended with it.
		err = s.AppendEvents(ctx(t), "ses_a", []*orchestrator.Event{
			{Type: "progress", Data: json.RawMessage(`{}`)},
			{Type: orchestrator.EventUsage, Data: json.RawMessage(`{"input_tokens": "many"}`)},
		})
		wantErr(t, "AppendEvents with a malformed usage event", err, orchestrator.ErrInvalid)
		se, err = s.GetSession(ctx(t), "ses_a")
		must(t, "GetSession", err)
		if se.LastEventSeq != 4 || !reflect.DeepEqual(se.Usage, want) {
			t.Fatalf("after a refused append: seq %d, usage %s; want 4, %s", se.LastEventSeq, show(se.Usage), show(want))
		}
		wantErr(t, "AppendEvents usage to a missing session",
			s.AppendEvents(ctx(t), "ses_missing", []*orchestrator.Event{usageEvent(orchestrator.Usage{InputTokens: 1})}), orchestrator.ErrNotFound)
	})

	// A run's final usage is added by the update that ends it, and only when its guard lets it through;
	// usage events appended by an update count as AppendEvents counts them.
	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		running := orchestrator.SessionRunning
		pending := []orchestrator.SessionStatus{orchestrator.SessionPending}
		_, err := s.UpdateSession(ctx(t), "ses_a", pending, store.SessionUpdate{Status: &running, UpdatedAt: at(1),
			AddUsage:     &orchestrator.Usage{InputTokens: 5, OutputTokens: 6, CostUSD: 0.5, Model: "ignored", Models: map[string]*orchestrator.ModelUsage{"x": {InputTokens: 99}}},
			AppendEvents: []*orchestrator.Event{usageEvent(orchestrator.Usage{InputTokens: 1, CacheReadInputTokens: 2})}})
		must(t, "UpdateSession", err)
		want := orchestrator.Usage{InputTokens: 6, OutputTokens: 6, CacheReadInputTokens: 2, CostUSD: 0.5}
		equal(t, "usage after an update", sessionUsage(t, s, "ses_a"), want)
		_, err = s.UpdateSession(ctx(t), "ses_a", pending, store.SessionUpdate{UpdatedAt: at(2), AddUsage: &orchestrator.Usage{InputTokens: 1000}})
		wantErr(t, "UpdateSession whose guard does not match", err, orchestrator.ErrConflict)
		equal(t, "usage after a refused update", sessionUsage(t, s, "ses_a"), want)
		if b, ok := s.(store.BriefUpdater); ok {
			_, err := b.UpdateSessionBrief(ctx(t), "ses_a", nil, store.SessionUpdate{UpdatedAt: at(3), AddUsage: &orchestrator.Usage{OutputTokens: 4, CostUSD: 0.25}})
			must(t, "UpdateSessionBrief", err)
			want.OutputTokens, want.CostUSD = 10, 0.75
			equal(t, "usage after a brief update", sessionUsage(t, s, "ses_a"), want)
		}
	})

	// Grouped ends (several sessions in one statement, where the store groups them) add each session's
	// own final usage.
	t.Run("Grouped", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		if _, ok := s.(store.BatchBriefUpdater); !ok {
			t.Skip("the store is not a store.BatchBriefUpdater")
		}
		const n = 5
		us := make([]store.SessionsUpdate, n)
		for i := range n {
			id := fmt.Sprintf("ses_%d", i)
			must(t, "CreateSession", s.CreateSession(ctx(t), newSession(id, base)))
			completed := orchestrator.SessionCompleted
			us[i] = store.SessionsUpdate{ID: id, Update: store.SessionUpdate{Status: &completed, UpdatedAt: at(1),
				AddUsage:     &orchestrator.Usage{InputTokens: int64(i + 1), CostUSD: float64(i) / 4},
				AppendEvents: []*orchestrator.Event{{Type: orchestrator.EventRunEnded, Data: json.RawMessage(`{}`)}}}}
		}
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			_, err := tx.(store.BatchBriefUpdater).UpdateSessionsBrief(ctx, us)
			return err
		})
		must(t, "UpdateSessionsBrief", err)
		for i := range n {
			equal(t, fmt.Sprintf("usage of ses_%d", i), sessionUsage(t, s, fmt.Sprintf("ses_%d", i)),
				orchestrator.Usage{InputTokens: int64(i + 1), CostUSD: float64(i) / 4})
		}
	})

	// Many children report usage at once, each several times and some in batches, while their parent's
	// final usage is added: no update is lost.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const children = 12
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_root", base)))
		for c := range children {
			child := newSession(fmt.Sprintf("ses_child%02d", c), base)
			child.ParentSessionID = "ses_root"
			must(t, "CreateSession", s.CreateSession(ctx(t), child))
		}
		reports := concurrencyScale(40)
		delta := orchestrator.Usage{Model: "m", InputTokens: 3, OutputTokens: 5, CacheReadInputTokens: 7, CacheCreationInputTokens: 11, CostUSD: 1.0 / 64}
		var wg sync.WaitGroup
		errs := make(chan error, 2*children+1)
		// Two writers per child, so that appends to one session race each other as well as other sessions'.
		for w := range 2 * children {
			id := fmt.Sprintf("ses_child%02d", w%children)
			wg.Go(func() {
				for i := range reports {
					batch := []*orchestrator.Event{usageEvent(delta)}
					if i%4 == 0 {
						batch = append(batch, &orchestrator.Event{Type: "progress", Data: json.RawMessage(`{}`)}, usageEvent(delta))
					}
					if err := s.AppendEvents(ctx(t), id, batch); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range reports {
				if _, err := s.UpdateSession(ctx(t), "ses_root", nil, store.SessionUpdate{UpdatedAt: at(1), AddUsage: &delta}); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent usage: %v", err)
		}
		times := func(k int64) orchestrator.Usage {
			return orchestrator.Usage{InputTokens: 3 * k, OutputTokens: 5 * k, CacheReadInputTokens: 7 * k, CacheCreationInputTokens: 11 * k, CostUSD: float64(k) / 64}
		}
		perWriter := int64(reports + (reports+3)/4) // one delta per report, two in every fourth
		for c := range children {
			id := fmt.Sprintf("ses_child%02d", c)
			equal(t, "usage of "+id, sessionUsage(t, s, id), times(2*perWriter))
			evs, err := s.ListEvents(ctx(t), id, 0, 0)
			must(t, "ListEvents", err)
			var sum orchestrator.Usage
			for _, e := range evs {
				if e.Type == orchestrator.EventUsage {
					var d orchestrator.Usage
					must(t, "decode usage event", json.Unmarshal(e.Data, &d))
					sum.Add(d)
				}
			}
			equal(t, "usage events of "+id, sum, times(2*perWriter))
		}
		equal(t, "usage of ses_root", sessionUsage(t, s, "ses_root"), times(int64(reports)))
	})
}
