package runner_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// newStore opens a fresh SQLite file store, closed when the test ends.
func newStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.New(context.Background(), filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newCoordinator returns a coordinator over cfg.Store, or over a fresh SQLite file store if it is nil.
func newCoordinator(t *testing.T, cfg coordinator.Config) *coordinator.Coordinator {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newStore(t)
	}
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatalf("coordinator.New: %v", err)
	}
	return c
}

// lockedBuffer is a log sink tests may read while the code under test writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
