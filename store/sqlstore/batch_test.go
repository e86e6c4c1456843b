package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Concurrent transactions on SQLite share commits; each still succeeds or fails alone.
func TestBatchedTransactionsAreIndependent(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "batch.db"))
	ctx := context.Background()
	errBoom := errors.New("boom")
	const n = 120
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					results[i] = fmt.Errorf("panic: %v", p)
				}
			}()
			results[i] = s.InTx(ctx, func(ctx context.Context, tx store.Store) error {
				now := time.Now().UTC().Truncate(time.Microsecond)
				a := &store.Agent{Name: fmt.Sprintf("a%03d", i), Blueprint: &orchestrator.Blueprint{Name: fmt.Sprintf("a%03d", i), Type: orchestrator.AgentTypeAgent}, CreatedAt: now, UpdatedAt: now}
				if err := tx.CreateAgent(ctx, a); err != nil {
					return err
				}
				switch i % 4 {
				case 1:
					return errBoom // rolled back: only this agent disappears
				case 2:
					panic("kaboom") // re-raised in the caller, rolled back
				case 3:
					// A failing statement inside: a duplicate name.
					return tx.CreateAgent(ctx, a)
				}
				return nil
			})
		})
	}
	wg.Wait()
	agents, err := s.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, a := range agents {
		have[a.Name] = true
	}
	for i, err := range results {
		name := fmt.Sprintf("a%03d", i)
		switch i % 4 {
		case 0:
			if err != nil || !have[name] {
				t.Errorf("tx %d: err %v, committed %v; want success", i, err, have[name])
			}
		case 1:
			if !errors.Is(err, errBoom) || have[name] {
				t.Errorf("tx %d: err %v, committed %v; want boom and nothing committed", i, err, have[name])
			}
		case 2:
			if err == nil || err.Error() != "panic: kaboom" || have[name] {
				t.Errorf("tx %d: err %v, committed %v; want the panic re-raised and nothing committed", i, err, have[name])
			}
		case 3:
			if !errors.Is(err, orchestrator.ErrConflict) || have[name] {
				t.Errorf("tx %d: err %v, committed %v; want ErrConflict and nothing committed", i, err, have[name])
			}
		}
	}
	// A cancelled context is refused before anything runs.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.InTx(cctx, func(context.Context, store.Store) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("InTx with a cancelled context: %v, want context.Canceled", err)
	}
}

// A transaction whose turn has come runs to its end and commits, even when its caller's context ends
// while it runs: the caller learns the outcome either way.
func TestBatchedTransactionOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "batch.db"))
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now().UTC().Truncate(time.Microsecond)
	agent := func(name string) *store.Agent {
		return &store.Agent{Name: name, Blueprint: &orchestrator.Blueprint{Name: name, Type: orchestrator.AgentTypeAgent}, CreatedAt: now, UpdatedAt: now}
	}
	err := s.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateAgent(ctx, agent("before")); err != nil {
			return err
		}
		cancel()
		return tx.CreateAgent(ctx, agent("after"))
	})
	if err != nil {
		t.Fatalf("InTx whose caller gave up midway: %v", err)
	}
	for _, name := range []string{"before", "after"} {
		if _, err := s.GetAgent(context.Background(), name); err != nil {
			t.Errorf("agent %q of the committed transaction: %v", name, err)
		}
	}
	// A transaction whose context ended before its turn is not run.
	err = s.InTx(ctx, func(ctx context.Context, tx store.Store) error { return tx.CreateAgent(ctx, agent("never")) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("InTx with an ended context = %v, want context.Canceled", err)
	}
}
