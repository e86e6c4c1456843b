package runner_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// lockedBuffer is a log sink tests may read while the code under test writes to it, and wait on.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed, and replaced, by each write
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor waits until the buffer holds s at least n times, and fails the test after timeout.
func (b *lockedBuffer) waitFor(t *testing.T, s string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		count := strings.Count(b.b.String(), s)
		if b.written == nil {
			b.written = make(chan struct{})
		}
		written := b.written
		b.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-written:
		case <-deadline.C:
			t.Fatalf("%q logged %d times within %s, want %d; logs:\n%s", s, count, timeout, n, b.String())
		}
	}
}
