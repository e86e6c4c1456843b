package coordinator_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
)

// pollReadsStore counts the reads and claims a poll makes on the store itself, outside its
// transactions, and says whether reads are cheaper inside a write transaction.
type pollReadsStore struct {
	store.Store
	warm                   bool
	runners, stops, claims atomic.Int64
}

func (s *pollReadsStore) ReadsWarmInWrites() bool { return s.warm }

func (s *pollReadsStore) GetRunner(ctx context.Context, id string) (*orchestrator.RunnerInfo, error) {
	s.runners.Add(1)
	return s.Store.GetRunner(ctx, id)
}

func (s *pollReadsStore) TakeStopRequests(ctx context.Context, runnerID string, now, resendBefore time.Time) ([]*orchestrator.Run, error) {
	s.stops.Add(1)
	return s.Store.TakeStopRequests(ctx, runnerID, now, resendBefore)
}

func (s *pollReadsStore) ClaimRuns(ctx context.Context, p store.ClaimParams) ([]*orchestrator.Run, error) {
	s.claims.Add(1)
	return s.Store.ClaimRuns(ctx, p)
}

func (s *pollReadsStore) outside() [3]int64 {
	return [3]int64{s.runners.Load(), s.stops.Load(), s.claims.Load()}
}

// TestPollReadsInClaimTransaction: on a store whose reads are cheaper in a write transaction (SQLite), a
// poll for runs reads its runner and takes its stop requests in the claim's transaction, and hands out
// both stops and runs from it; a full runner's poll, which claims nothing, reads on its own. On any other
// store each is a call of its own.
func TestPollReadsInClaimTransaction(t *testing.T) {
	t.Parallel()
	for _, warm := range []bool{true, false} {
		st := &pollReadsStore{Store: newStore(t), warm: warm}
		c := newCoordinator(t, coordinator.Config{Store: st})
		a := register(t, c, "host-a", crawler())
		first := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		second := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://b.example"}`)})

		if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 || w.Runs[0].Run.ID != first.RunID {
			t.Fatalf("warm %v: first poll: %+v, want run %s", warm, w, first.RunID)
		}
		if _, err := c.StopRun(t.Context(), first.RunID); err != nil {
			t.Fatal(err)
		}
		w := poll(t, c, a.RunnerID, 1)
		if !slices.Equal(w.Stop, []string{first.SessionID}) || len(w.Runs) != 1 || w.Runs[0].Run.ID != second.RunID {
			t.Fatalf("warm %v: second poll: stops %v, %d runs; want the stop of %s and run %s", warm, w.Stop, len(w.Runs), first.SessionID, second.RunID)
		}
		want := [3]int64{2, 2, 2} // runner, stops, claim: one each per poll
		if warm {
			want = [3]int64{}
		}
		if got := st.outside(); got != want {
			t.Errorf("warm %v: polls for runs read %v (runners, stops, claims) outside a transaction, want %v", warm, got, want)
		}

		before := st.outside()
		poll(t, c, a.RunnerID, 0)
		if got := st.outside(); got[0]-before[0] != 1 || got[1]-before[1] != 1 || got[2] != before[2] {
			t.Errorf("warm %v: a full runner's poll read %v outside a transaction, then %v; want one runner read and one stop look, no claim", warm, before, got)
		}
	}
}
