package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// sessionsCreator is the optional capability a coordinator's StartRuns uses: a fan-out created in one
// transaction.
type sessionsCreator interface {
	CreateSessionsWithRuns(ctx context.Context, sessions []*orchestrator.Session, runs []*orchestrator.Run) error
}

// batchOf returns n sessions with their first runs, ids prefixed by prefix; every third run demands tags.
func batchOf(prefix string, n int) ([]*orchestrator.Session, []*orchestrator.Run) {
	sessions := make([]*orchestrator.Session, n)
	runs := make([]*orchestrator.Run, n)
	for i := range n {
		s := newSession(fmt.Sprintf("ses_%s%05d", prefix, i), at(i))
		r := newRun(fmt.Sprintf("run_%s%05d", prefix, i), s.ID, at(i))
		if i%3 != 0 {
			s.Demands.Tags, r.Demands.Tags = nil, nil
		} else {
			r.Demands = s.Demands
		}
		s.CurrentRunID = r.ID
		sessions[i], runs[i] = s, r
	}
	return sessions, runs
}

// testConcurrentCreations checks CreateSessionWithRun and CreateSessionWithRunOnce from many callers at
// once, which a store may write in groups: every creation is there when its call returns, with its key,
// and one that fails (a taken id, or a key another caller recorded first) fails alone.
func testConcurrentCreations(t *testing.T, newStore func(*testing.T) store.Store) {
	s := newStore(t)
	taken := newSession("ses_g00013", base)
	must(t, "CreateSession", s.CreateSession(ctx(t), taken))
	sessions, runs := batchOf("g", max(concurrencyScale(400), 30))
	// Every other creation carries an idempotency key of its own, but two share one: the first of them
	// to commit records it and the other fails with nothing created.
	key := func(i int) string {
		switch {
		case i%2 == 0:
			return ""
		case i == 21 || i == 23:
			return "key-shared"
		}
		return fmt.Sprintf("key-%05d", i)
	}
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			if k := key(i); k != "" {
				errs[i] = s.CreateSessionWithRunOnce(ctx(t), sessions[i], runs[i], &store.IdempotencyKey{
					Key: k, RequestHash: "h", RunID: runs[i].ID, SessionID: sessions[i].ID, CreatedAt: runs[i].CreatedAt})
			} else {
				errs[i] = s.CreateSessionWithRun(ctx(t), sessions[i], runs[i])
			}
			if errs[i] == nil { // durable when it returns: readable at once
				if _, err := s.GetRun(ctx(t), runs[i].ID); err != nil {
					errs[i] = fmt.Errorf("created but not readable: %w", err)
				}
			}
		})
	}
	wg.Wait()
	refused := func(i int, what string) {
		t.Helper()
		wantErr(t, what, errs[i], orchestrator.ErrConflict)
		_, err := s.GetRun(ctx(t), runs[i].ID)
		wantErr(t, "run of the refused creation", err, orchestrator.ErrNotFound)
		_, err = s.GetSession(ctx(t), sessions[i].ID)
		if sessions[i].ID != taken.ID {
			wantErr(t, "session of the refused creation", err, orchestrator.ErrNotFound)
		}
	}
	shared := []int{21, 23}
	if errs[21] != nil {
		shared = []int{23, 21}
	}
	for i, err := range errs {
		switch {
		case sessions[i].ID == taken.ID:
			refused(i, "creation with a taken session id")
			continue
		case i == shared[1]:
			refused(i, "creation with a key another creation recorded")
			continue
		}
		must(t, "creation "+sessions[i].ID, err)
		got, err := s.GetSession(ctx(t), sessions[i].ID)
		must(t, "GetSession", err)
		equal(t, "session "+sessions[i].ID, got, sessions[i])
		if k := key(i); k != "" {
			got, err := s.GetIdempotencyKey(ctx(t), k)
			must(t, "GetIdempotencyKey "+k, err)
			if got.RunID != runs[i].ID || got.SessionID != sessions[i].ID {
				t.Errorf("key %s reads back run %s of session %s, want %s of %s", k, got.RunID, got.SessionID, runs[i].ID, sessions[i].ID)
			}
		}
	}
}

// testBatchCreate checks CreateSessionsWithRuns on stores that have it: every session and run as
// CreateSessionWithRun would have stored them, beyond one statement's worth of rows, and all or none.
func testBatchCreate(t *testing.T, newStore func(*testing.T) store.Store) {
	if _, ok := newStore(t).(sessionsCreator); !ok {
		t.Skip("the store has no CreateSessionsWithRuns")
	}

	t.Run("All", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sessions, runs := batchOf("a", scale(1500)) // past one INSERT's parameters on the runs table
		must(t, "CreateSessionsWithRuns", s.(sessionsCreator).CreateSessionsWithRuns(ctx(t), sessions, runs))
		for i := range sessions {
			got, err := s.GetSession(ctx(t), sessions[i].ID)
			must(t, "GetSession", err)
			equal(t, "session "+sessions[i].ID, got, sessions[i])
			gotRun, err := s.GetRun(ctx(t), runs[i].ID)
			must(t, "GetRun", err)
			equal(t, "run "+runs[i].ID, gotRun, runs[i])
		}
		// The demanded tags went in too: a claim without them does not take those runs.
		pending, err := s.ListRuns(ctx(t), orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}})
		must(t, "ListRuns", err)
		equal(t, "pending runs", len(pending), len(runs))
		must(t, "empty batch", s.(sessionsCreator).CreateSessionsWithRuns(ctx(t), nil, nil))
	})

	t.Run("NoneOnConflict", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		taken := newSession("ses_b00007", base)
		must(t, "CreateSession", s.CreateSession(ctx(t), taken))
		sessions, runs := batchOf("b", 20) // the eighth session's id is taken
		err := s.(sessionsCreator).CreateSessionsWithRuns(ctx(t), sessions, runs)
		wantErr(t, "batch with a taken session id", err, orchestrator.ErrConflict)
		sessions, runs = batchOf("c", 20)
		runs[19].ID = runs[3].ID // two runs with one id: the runs' INSERT fails after the sessions'
		err = s.(sessionsCreator).CreateSessionsWithRuns(ctx(t), sessions, runs)
		wantErr(t, "batch with a repeated run id", err, orchestrator.ErrConflict)
		all, err := s.ListSessions(ctx(t), orchestrator.SessionFilter{})
		must(t, "ListSessions", err)
		equal(t, "sessions after the refused batches", sessionIDs(all), []string{taken.ID})
		left, err := s.ListRuns(ctx(t), orchestrator.RunFilter{})
		must(t, "ListRuns", err)
		equal(t, "runs after the refused batches", len(left), 0)
	})

	t.Run("InTx", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rollback := errors.New("roll back")
		err := s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			sessions, runs := batchOf("d", 5)
			if err := tx.(sessionsCreator).CreateSessionsWithRuns(ctx, sessions, runs); err != nil {
				return err
			}
			return rollback
		})
		wantErr(t, "InTx", err, rollback)
		_, err = s.GetSession(ctx(t), "ses_d00000")
		wantErr(t, "session of a rolled back batch", err, orchestrator.ErrNotFound)
		must(t, "InTx", s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			sessions, runs := batchOf("e", 5)
			return tx.(sessionsCreator).CreateSessionsWithRuns(ctx, sessions, runs)
		}))
		_, err = s.GetRun(ctx(t), "run_e00004")
		must(t, "run of a committed batch", err)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		const callers = 4
		n := concurrencyScale(200)
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for c := range callers {
			wg.Go(func() {
				sessions, runs := batchOf(fmt.Sprintf("f%d_", c), n)
				errs[c] = s.(sessionsCreator).CreateSessionsWithRuns(ctx(t), sessions, runs)
			})
		}
		wg.Wait()
		for c, err := range errs {
			must(t, fmt.Sprintf("caller %d", c), err)
		}
		all, err := s.ListRuns(ctx(t), orchestrator.RunFilter{})
		must(t, "ListRuns", err)
		equal(t, "runs created", len(all), callers*n)
	})
}
