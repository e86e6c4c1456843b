package storetest

import (
	"encoding/json"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testWebhooks(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("CreateClaimUpdate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		whs := []*store.Webhook{
			{ID: "wh_1", URL: "https://a.example/hook", SessionID: "ses_1", RunID: "run_1", Payload: json.RawMessage(`{"n":1}`),
				Status: store.WebhookPending, NextAttemptAt: at(10), CreatedAt: at(1)},
			{ID: "wh_2", URL: "https://b.example/hook", SessionID: "ses_2", RunID: "run_2", Payload: json.RawMessage(`{"n":2}`),
				Status: store.WebhookPending, NextAttemptAt: at(5), CreatedAt: at(2)},
			{ID: "wh_3", URL: "https://c.example/hook", SessionID: "ses_3", RunID: "run_3", Payload: json.RawMessage(`{"n":3}`),
				Status: store.WebhookPending, NextAttemptAt: at(50), CreatedAt: at(3)},
			{ID: "wh_4", URL: "https://d.example/hook", SessionID: "ses_4", RunID: "run_4", Payload: json.RawMessage(`{}`),
				Status: store.WebhookDelivered, Attempts: 1, NextAttemptAt: at(1), CreatedAt: at(4), DeliveredAt: ptr(at(4))},
		}
		for _, w := range whs {
			must(t, "CreateWebhook "+w.ID, s.CreateWebhook(ctx(t), w))
		}
		wantErr(t, "CreateWebhook with a taken id", s.CreateWebhook(ctx(t), whs[0]), orchestrator.ErrConflict)

		// Due at 20: wh_2 (due 5) then wh_1 (due 10); wh_3 is not due, wh_4 is delivered.
		got, err := s.ClaimWebhooks(ctx(t), at(20), at(1000), 10)
		must(t, "ClaimWebhooks", err)
		if len(got) != 2 {
			t.Fatalf("ClaimWebhooks at 20 = %d webhooks, want 2 (wh_2, wh_1)", len(got))
		}
		byID := map[string]*store.Webhook{}
		for _, w := range got {
			byID[w.ID] = w
			if !w.NextAttemptAt.Equal(at(1000)) {
				t.Errorf("claimed %s has NextAttemptAt %v, want the lease end %v", w.ID, w.NextAttemptAt, at(1000))
			}
		}
		if byID["wh_1"] == nil || byID["wh_2"] == nil || string(byID["wh_1"].Payload) != `{"n":1}` {
			t.Fatalf("claimed %+v, want wh_1 and wh_2 with their payloads", got)
		}
		// Leased: not claimable again before the lease ends.
		again, err := s.ClaimWebhooks(ctx(t), at(30), at(2000), 10)
		must(t, "ClaimWebhooks again", err)
		if len(again) != 0 {
			t.Fatalf("leased webhooks claimed again: %+v", again)
		}
		// A failed attempt is rescheduled; a success is recorded.
		w1 := byID["wh_1"]
		w1.Attempts, w1.NextAttemptAt, w1.LastError = 1, at(40), "503 Service Unavailable"
		must(t, "UpdateWebhook wh_1", s.UpdateWebhook(ctx(t), w1))
		w2 := byID["wh_2"]
		w2.Attempts, w2.Status, w2.DeliveredAt = 1, store.WebhookDelivered, ptr(at(21))
		must(t, "UpdateWebhook wh_2", s.UpdateWebhook(ctx(t), w2))
		wantErr(t, "UpdateWebhook missing", s.UpdateWebhook(ctx(t), &store.Webhook{ID: "wh_missing", Status: store.WebhookFailed}), orchestrator.ErrNotFound)

		got, err = s.ClaimWebhooks(ctx(t), at(60), at(3000), 1)
		must(t, "ClaimWebhooks at 60", err)
		if len(got) != 1 || got[0].ID != "wh_1" || got[0].Attempts != 1 || got[0].LastError != "503 Service Unavailable" {
			t.Fatalf("ClaimWebhooks at 60 limit 1 = %+v, want wh_1 (due 40, before wh_3 due 50) with its attempt recorded", got)
		}
	})

	t.Run("ConcurrentClaimsNeverShare", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const n = 60
		for i := range n {
			must(t, "CreateWebhook", s.CreateWebhook(ctx(t), &store.Webhook{
				ID: "wh_" + string(rune('A'+i/26)) + string(rune('a'+i%26)), URL: "https://x.example", SessionID: "ses", RunID: "run",
				Payload: json.RawMessage(`{}`), Status: store.WebhookPending, NextAttemptAt: at(i), CreatedAt: at(i)}))
		}
		var (
			mu   sync.Mutex
			seen = map[string]bool{}
			wg   sync.WaitGroup
		)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					got, err := s.ClaimWebhooks(ctx(t), at(n), at(100000), 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, w := range got {
						if seen[w.ID] {
							t.Errorf("webhook %s leased twice", w.ID)
						}
						seen[w.ID] = true
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != n {
			t.Errorf("leased %d webhooks, want %d", len(seen), n)
		}
	})
}
