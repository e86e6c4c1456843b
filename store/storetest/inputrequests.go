package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func newInputRequest(id, sessionID string, created int) *orchestrator.InputRequest {
	return &orchestrator.InputRequest{
		ID:        id,
		SessionID: sessionID,
		RunID:     "run_" + sessionID,
		AgentName: "deploy",
		Kind:      orchestrator.InputQuestion,
		Prompt:    "Which region? \u00e9 <b> & c",
		Schema:    json.RawMessage(`{"type":"object","properties":{"region":{"type":"string"}},"required":["region"]}`),
		Status:    orchestrator.InputOpen,
		CreatedAt: at(created),
	}
}

func inputRequestIDs(rs []*orchestrator.InputRequest) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func testInputRequests(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		r := newInputRequest("inp_1", "ses_1", 10)
		r.Kind, r.ExpiresAt = orchestrator.InputApproval, ptr(at(5000))
		must(t, "CreateInputRequest", st.CreateInputRequest(ctx(t), r))
		wantErr(t, "CreateInputRequest twice", st.CreateInputRequest(ctx(t), newInputRequest("inp_1", "ses_2", 1)), orchestrator.ErrConflict)
		got, err := st.GetInputRequest(ctx(t), "inp_1")
		must(t, "GetInputRequest", err)
		equal(t, "GetInputRequest", got, r)
		_, err = st.GetInputRequest(ctx(t), "inp_nope")
		wantErr(t, "GetInputRequest missing", err, orchestrator.ErrNotFound)
	})

	t.Run("GuardedAnswer", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		must(t, "CreateInputRequest", st.CreateInputRequest(ctx(t), newInputRequest("inp_1", "ses_1", 10)))
		first := store.InputRequestClose{Status: orchestrator.InputAnswered, Answer: json.RawMessage(`{"region":"eu"}`), AnsweredBy: "client:ana", At: at(20)}
		got, err := st.CloseInputRequest(ctx(t), "inp_1", first)
		must(t, "CloseInputRequest", err)
		want := newInputRequest("inp_1", "ses_1", 10)
		want.Status, want.Answer, want.AnsweredBy, want.ClosedAt = orchestrator.InputAnswered, first.Answer, "client:ana", ptr(at(20))
		equal(t, "CloseInputRequest's answer", got, want)

		// A second answer, and an expiry after the answer, change nothing.
		_, err = st.CloseInputRequest(ctx(t), "inp_1", store.InputRequestClose{Status: orchestrator.InputAnswered, Answer: json.RawMessage(`{"region":"us"}`), At: at(30)})
		wantErr(t, "second answer", err, orchestrator.ErrConflict)
		_, err = st.CloseInputRequest(ctx(t), "inp_1", store.InputRequestClose{Status: orchestrator.InputExpired, At: at(40)})
		wantErr(t, "expiry after the answer", err, orchestrator.ErrConflict)
		got, err = st.GetInputRequest(ctx(t), "inp_1")
		must(t, "GetInputRequest", err)
		equal(t, "the request after refused closes", got, want)

		_, err = st.CloseInputRequest(ctx(t), "inp_nope", first)
		wantErr(t, "answer to a missing request", err, orchestrator.ErrNotFound)
		_, err = st.CloseInputRequest(ctx(t), "inp_1", store.InputRequestClose{Status: orchestrator.InputOpen, At: at(50)})
		if err == nil {
			t.Fatal("closing a request as open: no error")
		}
	})

	t.Run("ListAndExpiry", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		for i, id := range []string{"inp_a", "inp_b", "inp_c", "inp_d"} {
			r := newInputRequest(id, "ses_1", 10*(i+1))
			if id == "inp_b" || id == "inp_c" {
				r.SessionID = "ses_2"
			}
			if id != "inp_d" {
				r.ExpiresAt = ptr(at(1000 * (i + 1)))
			}
			must(t, "CreateInputRequest "+id, st.CreateInputRequest(ctx(t), r))
		}
		_, err := st.CloseInputRequest(ctx(t), "inp_a", store.InputRequestClose{Status: orchestrator.InputCancelled, At: at(100)})
		must(t, "cancel inp_a", err)

		list := func(f orchestrator.InputRequestFilter) []string {
			t.Helper()
			rs, err := st.ListInputRequests(ctx(t), f)
			must(t, "ListInputRequests", err)
			return inputRequestIDs(rs)
		}
		open := []orchestrator.InputRequestStatus{orchestrator.InputOpen}
		equal(t, "all", list(orchestrator.InputRequestFilter{}), []string{"inp_a", "inp_b", "inp_c", "inp_d"})
		equal(t, "open", list(orchestrator.InputRequestFilter{Statuses: open}), []string{"inp_b", "inp_c", "inp_d"})
		equal(t, "open or cancelled", list(orchestrator.InputRequestFilter{Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen, orchestrator.InputCancelled}}), []string{"inp_a", "inp_b", "inp_c", "inp_d"})
		equal(t, "session ses_2", list(orchestrator.InputRequestFilter{SessionID: "ses_2"}), []string{"inp_b", "inp_c"})
		equal(t, "page", list(orchestrator.InputRequestFilter{Limit: 2}), []string{"inp_a", "inp_b"})
		equal(t, "after inp_b", list(orchestrator.InputRequestFilter{AfterID: "inp_b"}), []string{"inp_c", "inp_d"})

		// Expiry: the sweep selects open requests whose deadline passed — not one without a deadline, not
		// one closed already — and expires each with a guarded close.
		due := list(orchestrator.InputRequestFilter{Statuses: open, ExpiresBefore: at(2500)})
		equal(t, "due at 2.5s", due, []string{"inp_b"})
		equal(t, "due at 10s", list(orchestrator.InputRequestFilter{Statuses: open, ExpiresBefore: at(10000)}), []string{"inp_b", "inp_c"})
		got, err := st.CloseInputRequest(ctx(t), "inp_b", store.InputRequestClose{Status: orchestrator.InputExpired, At: at(2500)})
		must(t, "expire inp_b", err)
		if got.Status != orchestrator.InputExpired || got.Answer != nil || got.ClosedAt == nil || !got.ClosedAt.Equal(at(2500)) {
			t.Fatalf("expired request: %s", show(got))
		}
		_, err = st.CloseInputRequest(ctx(t), "inp_b", store.InputRequestClose{Status: orchestrator.InputAnswered, Answer: json.RawMessage(`{"region":"eu"}`), At: at(2600)})
		wantErr(t, "answer after expiry", err, orchestrator.ErrConflict)
		equal(t, "due after the expiry", list(orchestrator.InputRequestFilter{Statuses: open, ExpiresBefore: at(2500)}), []string{})
	})

	t.Run("ConcurrentAnswers", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		must(t, "CreateInputRequest", st.CreateInputRequest(ctx(t), newInputRequest("inp_1", "ses_1", 10)))
		n := max(8, concurrencyScale(32))
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			others  []error
		)
		for i := range n {
			wg.Go(func() {
				answer := fmt.Sprintf(`{"region":"r%d"}`, i)
				_, err := st.CloseInputRequest(ctx(t), "inp_1", store.InputRequestClose{
					Status: orchestrator.InputAnswered, Answer: json.RawMessage(answer), AnsweredBy: fmt.Sprint("client:", i), At: at(20 + i),
				})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					winners = append(winners, answer)
				} else if !errors.Is(err, orchestrator.ErrConflict) {
					others = append(others, err)
				}
			})
		}
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("concurrent answers failed otherwise than with ErrConflict: %v", others)
		}
		if len(winners) != 1 {
			t.Fatalf("%d concurrent answers: %d won (%v), want exactly 1", n, len(winners), winners)
		}
		got, err := st.GetInputRequest(ctx(t), "inp_1")
		must(t, "GetInputRequest", err)
		if string(got.Answer) != winners[0] || got.Status != orchestrator.InputAnswered {
			t.Fatalf("stored answer %s (%s), want the winner's %s", got.Answer, got.Status, winners[0])
		}
	})

	t.Run("HeldRun", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		runner := newRunner("lnch_a")
		must(t, "PutRunner", st.PutRunner(ctx(t), runner))
		s := newSession("ses_1", at(0))
		s.Status, s.Demands = orchestrator.SessionWaiting, orchestrator.Demands{}
		r := newRun("run_1", "ses_1", at(0))
		r.Held, r.Parked = true, true
		must(t, "CreateSessionWithRun", st.CreateSessionWithRun(ctx(t), s, r))
		got, err := st.GetRun(ctx(t), "run_1")
		must(t, "GetRun", err)
		if !got.Held || !got.Parked {
			t.Fatalf("held run read back with held %v, parked %v", got.Held, got.Parked)
		}
		claim := func() []string {
			t.Helper()
			rs, err := st.ClaimRuns(ctx(t), store.ClaimParams{Runner: runner, Now: at(1000), Max: 4})
			must(t, "ClaimRuns", err)
			return runIDs(rs)
		}
		equal(t, "claim of a held run", claim(), []string{})
		n, err := st.SetRunsParked(ctx(t), []string{"run_1"}, false)
		must(t, "SetRunsParked", err)
		if n != 0 {
			t.Fatalf("SetRunsParked(false) unparked %d held runs, want 0", n)
		}
		equal(t, "claim after an unpark", claim(), []string{})

		must(t, "ReleaseRun", st.ReleaseRun(ctx(t), "run_1", at(900)))
		wantErr(t, "ReleaseRun twice", st.ReleaseRun(ctx(t), "run_1", at(900)), orchestrator.ErrConflict)
		wantErr(t, "ReleaseRun missing", st.ReleaseRun(ctx(t), "run_nope", at(900)), orchestrator.ErrNotFound)
		got, err = st.GetRun(ctx(t), "run_1")
		must(t, "GetRun", err)
		if got.Held || got.Parked || got.RunAt == nil || !got.RunAt.Equal(at(900)) {
			t.Fatalf("released run: held %v, parked %v, run_at %v; want neither, due at %v", got.Held, got.Parked, got.RunAt, at(900))
		}
		equal(t, "claim after the release", claim(), []string{"run_1"})
	})

	t.Run("DeletedWithTheSession", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		s := newSession("ses_1", at(0))
		s.Status = orchestrator.SessionStopped
		must(t, "CreateSession", st.CreateSession(ctx(t), s))
		must(t, "CreateInputRequest", st.CreateInputRequest(ctx(t), newInputRequest("inp_1", "ses_1", 10)))
		must(t, "CreateInputRequest", st.CreateInputRequest(ctx(t), newInputRequest("inp_2", "ses_2", 10)))
		must(t, "DeleteSession", st.DeleteSession(ctx(t), "ses_1"))
		_, err := st.GetInputRequest(ctx(t), "inp_1")
		wantErr(t, "request of the deleted session", err, orchestrator.ErrNotFound)
		_, err = st.GetInputRequest(ctx(t), "inp_2")
		must(t, "another session's request", err)
	})
}
