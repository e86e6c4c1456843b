package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/store"
)

var _ store.WriteChecker = (*Store)(nil)

// writeCheckTTL is how long a write check's outcome is reused: readiness probes may come often, from
// several load balancers, and one small commit a second is all they cost.
const writeCheckTTL = time.Second

// writeCheckTimeout bounds one check: a store that cannot commit within it is not ready.
const writeCheckTimeout = 5 * time.Second

// writeCheck is the outcome of the latest write check. Its mutex also makes concurrent checks wait for
// the one under way instead of each writing.
type writeCheck struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// CheckWrite implements [store.WriteChecker]: it commits one small write — it rewrites the
// single row of table ready_probe — through the path every write takes (on SQLite the one write
// connection and its group commit), and reports its error: a full disk, a read-only file or database,
// a lost connection, a lock held past the timeout (5s). The outcome is reused for a second. The row
// stays the same size, so on a disk that is full but still has room in pages the store owns, the
// check passes as long as such writes do; it is the first to fail once commits do.
func (s *Store) CheckWrite(ctx context.Context) error {
	c := s.check
	if c == nil {
		c = &writeCheck{} // a transaction's Store: check now, within it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < writeCheckTTL {
		return c.err
	}
	ctx, cancel := context.WithTimeout(ctx, writeCheckTimeout)
	defer cancel()
	err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
		_, err := tx.w.NewRaw("INSERT INTO ready_probe (id, checked_at) VALUES (1, ?) "+
			"ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at", utc(time.Now())).Exec(ctx)
		return err
	})
	if err != nil {
		err = fmt.Errorf("sqlstore: write check: %w", err)
	}
	c.at, c.err = time.Now(), err
	return err
}
