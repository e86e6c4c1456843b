package coordinator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
)

// plainStore hides every optional capability of the store it wraps (store.BriefUpdater among
// them), in its transactions too, so that the coordinator takes the path any Store supports.
type plainStore struct{ store.Store }

func (p plainStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	return p.Store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		return fn(ctx, plainStore{tx})
	})
}

// TestRunEndsWithAndWithoutBriefs ends runs every way a run's end branches — a reported result, a result
// taken from the run's last message, a failure, a webhook to queue, a parent to call back and resume —
// on a store that returns briefs from its updates and on one that returns whole records: both must record
// the same outcome.
func TestRunEndsWithAndWithoutBriefs(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		name := "briefs"
		if plain {
			name = "whole records"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := newStore(t)
			var backing store.Store = st
			if plain {
				backing = plainStore{st}
			}
			if _, ok := backing.(store.BriefUpdater); ok == plain {
				t.Fatalf("store is a BriefUpdater: %v, want %v", ok, !plain)
			}
			c := newCoordinator(t, coordinator.Config{Store: backing, WebhookSecret: []byte("s"),
				WebhookAllowHosts: []string{"127.0.0.1"}})
			a, ai, parent := runningParent(t, c, "crawl")

			// A child that calls its parent back and has a webhook ends with a reported result.
			child := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeAsyncCallback,
				ParentSessionID: parent.SessionID, CallbackURL: "http://127.0.0.1:9/hook",
				Parameters: json.RawMessage(`{"url":"https://one.example"}`)})
			poll(t, c, a.RunnerID, 1)
			code := 0
			report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: child.RunID, Status: orchestrator.RunCompleted,
				Result: &orchestrator.Result{ResultText: "out", ResultData: json.RawMessage(`{"pages": 3}`), ExitCode: &code}})
			cs, err := c.GetSession(ctx, child.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if cs.Status != orchestrator.SessionCompleted || cs.Result == nil || cs.Result.ResultType != "deterministic" ||
				string(cs.Result.ResultData) != `{"pages":3}` || cs.RunnerID != a.RunnerID || cs.EndedAt == nil {
				t.Fatalf("child session = %+v, result %+v", cs, cs.Result)
			}
			hooks, err := st.ClaimWebhooks(ctx, time.Now().Add(time.Hour), time.Now().Add(2*time.Hour), 10)
			if err != nil || len(hooks) != 1 {
				t.Fatalf("queued webhooks = %d, %v; want 1", len(hooks), err)
			}
			var p orchestrator.WebhookPayload
			if err := json.Unmarshal(hooks[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			want := orchestrator.WebhookPayload{Event: "session.ended", SessionID: cs.ID, RunID: child.RunID, AgentName: "web-crawler",
				Status: orchestrator.SessionCompleted, Result: cs.Result, EndedAt: *cs.EndedAt}
			if got, wantJSON := mustJSON(t, p), mustJSON(t, want); got != wantJSON {
				t.Errorf("webhook payload\n got  %s\n want %s (from the stored session)", got, wantJSON)
			}
			if hooks[0].URL != "http://127.0.0.1:9/hook" || hooks[0].SessionID != cs.ID || hooks[0].RunID != child.RunID {
				t.Errorf("webhook = %+v", hooks[0])
			}

			// The parent ends without a result: its last assistant message becomes the result, and the
			// child's callback, waiting while it ran, resumes it.
			if _, err := c.AppendEvents(ctx, parent.SessionID, []orchestrator.Event{orchestrator.NewEvent(orchestrator.EventMessage,
				map[string]any{"role": "assistant", "content": []map[string]string{{"type": "text", "text": "crawled"}}})}); err != nil {
				t.Fatal(err)
			}
			report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: parent.RunID, Status: orchestrator.RunCompleted})
			ps, err := c.GetSession(ctx, parent.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if ps.Status != orchestrator.SessionPending || ps.Result == nil || ps.Result.ResultText != "crawled" ||
				ps.Result.ResultType != "agent" || ps.CurrentRunID == parent.RunID {
				t.Fatalf("parent = %+v, result %+v; want resumed by the callback, keeping its derived result", ps, ps.Result)
			}
			cbs, err := st.ListCallbacks(ctx, store.CallbackFilter{ParentSessionID: parent.SessionID})
			if err != nil || len(cbs) != 1 || cbs[0].Type != "child_completed" || cbs[0].ChildAgent != "web-crawler" ||
				cbs[0].DeliveredAt == nil || cbs[0].Result == nil || cbs[0].Result.ResultText != "out" {
				t.Fatalf("callbacks = %s, %v", mustJSON(t, cbs), err)
			}

			// A failure records its error on the session and in its result.
			failed := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://two.example"}`)})
			poll(t, c, a.RunnerID, 1)
			report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: failed.RunID, Status: orchestrator.RunFailed, Error: "boom",
				Result: &orchestrator.Result{ErrorCode: "api_overloaded"}})
			fs, err := c.GetSession(ctx, failed.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if fs.Status != orchestrator.SessionFailed || fs.Error != "boom" || fs.ErrorCode != "api_overloaded" || fs.Result == nil || fs.Result.Error != "boom" ||
				fs.Result.ResultType != "deterministic" || fs.LastEventSeq != 2 {
				t.Fatalf("failed session = %+v, result %+v", fs, fs.Result)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
