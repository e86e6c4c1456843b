package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testEvents(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("AppendList", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_b", base)))

		ev := func(typ, data string) *orchestrator.Event {
			return &orchestrator.Event{Type: typ, Data: json.RawMessage(data)}
		}
		first := []*orchestrator.Event{
			ev(orchestrator.EventRunStarted, `{"run_id": "run_1"}`),
			ev(orchestrator.EventStderr, `{"line":"a \u0000 b"}`),
			{Type: orchestrator.EventResult, Data: json.RawMessage(`{"result_text":"one"}`), Time: at(3)},
		}
		before := utcNow()
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", first))
		for i, e := range first {
			if e.Seq != int64(i+1) || e.SessionID != "ses_a" {
				t.Fatalf("event %d: seq %d session %q, want %d ses_a", i, e.Seq, e.SessionID, i+1)
			}
		}
		if first[0].Time.Before(before) || first[0].Time.Location() != time.UTC {
			t.Fatalf("a zero Time became %v, want now (UTC)", first[0].Time)
		}
		if !first[2].Time.Equal(at(3)) {
			t.Fatalf("a given Time became %v, want %v", first[2].Time, at(3))
		}
		// Another session numbers its own events.
		other := []*orchestrator.Event{ev("progress", `{}`)}
		must(t, "AppendEvents other", s.AppendEvents(ctx(t), "ses_b", other))
		if other[0].Seq != 1 {
			t.Fatalf("first event of another session has seq %d, want 1", other[0].Seq)
		}
		second := []*orchestrator.Event{ev(orchestrator.EventMessage, `{"role":"assistant"}`), ev(orchestrator.EventResult, `{"result_text":"two"}`), ev(orchestrator.EventRunEnded, `{}`)}
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", second))
		if second[0].Seq != 4 || second[2].Seq != 6 {
			t.Fatalf("second batch seqs %d..%d, want 4..6", second[0].Seq, second[2].Seq)
		}
		must(t, "AppendEvents nothing", s.AppendEvents(ctx(t), "ses_a", nil))
		if se, _ := s.GetSession(ctx(t), "ses_a"); se.LastEventSeq != 6 {
			t.Fatalf("LastEventSeq = %d, want 6", se.LastEventSeq)
		}

		all := append(append([]*orchestrator.Event{}, first...), second...)
		got, err := s.ListEvents(ctx(t), "ses_a", 0, 0)
		must(t, "ListEvents", err)
		equal(t, "ListEvents all", got, all)
		for _, tc := range []struct {
			after int64
			limit int
			want  []*orchestrator.Event
		}{
			{0, 2, all[:2]},
			{2, 2, all[2:4]},
			{4, 100, all[4:]},
			{6, 10, []*orchestrator.Event{}},
			{99, 0, []*orchestrator.Event{}},
		} {
			got, err := s.ListEvents(ctx(t), "ses_a", tc.after, tc.limit)
			must(t, "ListEvents", err)
			equal(t, fmt.Sprintf("ListEvents after %d limit %d", tc.after, tc.limit), got, tc.want)
		}

		last, err := s.LastEvent(ctx(t), "ses_a", []string{orchestrator.EventResult}, 0)
		must(t, "LastEvent result", err)
		equal(t, "LastEvent result", last, all[4])
		last, err = s.LastEvent(ctx(t), "ses_a", []string{orchestrator.EventResult, orchestrator.EventRunStarted}, 0)
		must(t, "LastEvent of two types", err)
		equal(t, "LastEvent of two types", last, all[4])
		last, err = s.LastEvent(ctx(t), "ses_a", nil, 0)
		must(t, "LastEvent any type", err)
		equal(t, "LastEvent any type", last, all[5])
		last, err = s.LastEvent(ctx(t), "ses_a", []string{orchestrator.EventRunStarted}, 0)
		must(t, "LastEvent run_started", err)
		equal(t, "LastEvent run_started", last, all[0])
		_, err = s.LastEvent(ctx(t), "ses_a", []string{orchestrator.EventRunStarted}, 1)
		wantErr(t, "LastEvent after the only match", err, orchestrator.ErrNotFound)
		_, err = s.LastEvent(ctx(t), "ses_a", []string{"nope"}, 0)
		wantErr(t, "LastEvent of an absent type", err, orchestrator.ErrNotFound)

		err = s.AppendEvents(ctx(t), "ses_missing", []*orchestrator.Event{ev("progress", `{}`)})
		wantErr(t, "AppendEvents to a missing session", err, orchestrator.ErrNotFound)
		if got, _ := s.ListEvents(ctx(t), "ses_missing", 0, 0); len(got) != 0 {
			t.Fatalf("a refused append stored %d events", len(got))
		}
	})

	// SessionUpdate.AppendEvents appends with the update, outside a transaction and inside one, and not at
	// all when the guard refuses the update.
	t.Run("WithSessionUpdate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		must(t, "AppendEvents", s.AppendEvents(ctx(t), "ses_a", []*orchestrator.Event{{Type: "progress", Data: json.RawMessage(`{}`)}}))
		pending := []orchestrator.SessionStatus{orchestrator.SessionPending}
		running := orchestrator.SessionRunning

		// A refused update appends nothing.
		refused := []*orchestrator.Event{{Type: "progress", Data: json.RawMessage(`{"n":1}`)}}
		_, err := s.UpdateSession(ctx(t), "ses_a", []orchestrator.SessionStatus{orchestrator.SessionCompleted},
			store.SessionUpdate{Status: &running, AppendEvents: refused})
		wantErr(t, "UpdateSession with events, guard refused", err, orchestrator.ErrConflict)
		_, err = s.UpdateSession(ctx(t), "ses_missing", pending, store.SessionUpdate{Status: &running, AppendEvents: refused})
		wantErr(t, "UpdateSession with events, missing session", err, orchestrator.ErrNotFound)
		if got, _ := s.ListEvents(ctx(t), "ses_a", 0, 0); len(got) != 1 {
			t.Fatalf("refused updates left %d events, want 1", len(got))
		}

		evs := []*orchestrator.Event{
			{Type: orchestrator.EventResult, Data: json.RawMessage(`{"result_text":"r"}`), Time: at(5)},
			{Type: orchestrator.EventRunEnded, Data: json.RawMessage(`{"status":"completed"}`)},
		}
		se, err := s.UpdateSession(ctx(t), "ses_a", pending, store.SessionUpdate{Status: &running, AppendEvents: evs})
		must(t, "UpdateSession with events", err)
		if se.Status != running || se.LastEventSeq != 3 {
			t.Fatalf("updated session: status %s LastEventSeq %d, want running 3", se.Status, se.LastEventSeq)
		}
		if evs[0].Seq != 2 || evs[1].Seq != 3 || evs[0].SessionID != "ses_a" || !evs[0].Time.Equal(at(5)) || evs[1].Time.IsZero() {
			t.Fatalf("appended events came back as %s", show(evs))
		}

		// Inside a transaction, and together with a plain append that follows.
		more := []*orchestrator.Event{{Type: "progress", Data: json.RawMessage(`{"n":2}`)}}
		after := []*orchestrator.Event{{Type: "progress", Data: json.RawMessage(`{"n":3}`)}}
		err = s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if _, err := tx.UpdateSession(ctx, "ses_a", []orchestrator.SessionStatus{running}, store.SessionUpdate{AppendEvents: more}); err != nil {
				return err
			}
			return tx.AppendEvents(ctx, "ses_a", after)
		})
		must(t, "UpdateSession with events in a transaction", err)
		if more[0].Seq != 4 || after[0].Seq != 5 {
			t.Fatalf("seqs in the transaction: %d, %d; want 4, 5", more[0].Seq, after[0].Seq)
		}
		got, err := s.ListEvents(ctx(t), "ses_a", 1, 0)
		must(t, "ListEvents", err)
		equal(t, "events appended with updates", got, append(append(evs, more...), after...))
	})

	// Concurrent appenders to one session get distinct sequence numbers without gaps, and each batch is
	// contiguous.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", base)))
		const workers = 8
		appends := concurrencyScale(100)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				for i := range appends {
					n := 1 + (w+i)%3
					batch := make([]*orchestrator.Event, n)
					for j := range batch {
						batch[j] = &orchestrator.Event{Type: "progress", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d,"j":%d}`, w, i, j))}
					}
					if err := s.AppendEvents(ctx(t), "ses_a", batch); err != nil {
						errs <- err
						return
					}
					for j := 1; j < n; j++ {
						if batch[j].Seq != batch[0].Seq+int64(j) {
							errs <- fmt.Errorf("batch seqs not contiguous: %d then %d", batch[0].Seq, batch[j].Seq)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("AppendEvents: %v", err)
		}
		got, err := s.ListEvents(ctx(t), "ses_a", 0, 0)
		must(t, "ListEvents", err)
		want := 0
		for w := range workers {
			for i := range appends {
				want += 1 + (w+i)%3
			}
		}
		if len(got) != want {
			t.Fatalf("%d events stored, want %d", len(got), want)
		}
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d, want %d", i, e.Seq, i+1)
			}
		}
		if se, _ := s.GetSession(ctx(t), "ses_a"); se.LastEventSeq != int64(want) {
			t.Fatalf("LastEventSeq = %d, want %d", se.LastEventSeq, want)
		}
	})
}
