package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
)

// TestStartRuns starts a fan-out on a store that creates it in one batch and on one that has only the
// Store interface: the runs are created in order and claimable, and a batch with invalid items creates
// nothing and names each invalid item with its error.
func TestStartRuns(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var backing store.Store = newStore(t)
			if plain {
				backing = plainStore{backing}
			}
			c := newCoordinator(t, coordinator.Config{Store: backing})
			reg := register(t, c, "host-a", crawler())

			ps := make([]orchestrator.StartRunParams, 50)
			for i := range ps {
				ps[i] = orchestrator.StartRunParams{AgentName: "web-crawler",
					Parameters: json.RawMessage(fmt.Sprintf(`{"url":"https://example.com/%d"}`, i))}
			}
			res, err := c.StartRuns(ctx, ps)
			if err != nil {
				t.Fatalf("StartRuns: %v", err)
			}
			if len(res) != len(ps) {
				t.Fatalf("StartRuns returned %d results, want %d", len(res), len(ps))
			}
			for i, r := range res {
				run, err := c.GetRun(ctx, r.RunID)
				if err != nil {
					t.Fatalf("GetRun(%s): %v", r.RunID, err)
				}
				want := fmt.Sprintf(`{"depth":2,"url":"https://example.com/%d"}`, i)
				if run.SessionID != r.SessionID || string(run.Parameters) != want || r.Status != orchestrator.SessionPending {
					t.Errorf("item %d: run %+v (result %+v), want parameters %s with defaults", i, run, r, want)
				}
			}
			if w := poll(t, c, reg.RunnerID, 100); len(w.Runs) != len(ps) {
				t.Errorf("poll after StartRuns took %d runs, want %d", len(w.Runs), len(ps))
			}

			bad := []orchestrator.StartRunParams{
				{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com/ok"}`)},
				{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"not-a-url"}`)},
				{AgentName: "no-such-agent"},
				{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com/ok"}`), Mode: orchestrator.ModeSync},
				{AgentName: "web-crawler", Type: orchestrator.RunTypeResume, SessionID: res[0].SessionID},
			}
			_, err = c.StartRuns(ctx, bad)
			var oe *orchestrator.Error
			if !errors.As(err, &oe) || !errors.Is(err, orchestrator.ErrInvalid) || oe.Code != "invalid_runs" {
				t.Fatalf("StartRuns with invalid items: %v, want ErrInvalid invalid_runs", err)
			}
			items, _ := oe.Details["items"].([]any)
			var got []string
			for _, it := range items {
				m := it.(map[string]any)
				got = append(got, fmt.Sprintf("%v:%v", m["index"], m["error"]))
			}
			want := []string{"1:parameter_validation_failed", "2:agent_not_found", "3:invalid_request", "4:invalid_request"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("invalid items = %v, want %v (error %v)", got, want, err)
			}
			page, err := c.ListSessions(ctx, orchestrator.SessionFilter{})
			if err != nil || len(page.Sessions) != len(ps) {
				t.Errorf("sessions after the refused batch: %d, %v; want %d", len(page.Sessions), err, len(ps))
			}
			if _, err := c.StartRuns(ctx, nil); !errors.Is(err, orchestrator.ErrInvalid) {
				t.Errorf("StartRuns(nil) = %v, want ErrInvalid", err)
			}
		})
	}
}
