package sqlstore

import (
	"context"
	"time"
)

// checkpointInterval is how often the background checkpointer copies the WAL into the database file.
const checkpointInterval = 250 * time.Millisecond

// startCheckpointer moves SQLite's WAL checkpoints off the commit path. By default the connection whose
// commit crosses the WAL size limit runs the checkpoint — including an fsync of the database file — while
// it holds the write lock, so one writer in a thousand waits milliseconds and every writer queued behind it
// waits too. Here the writer's automatic checkpoints are off and a goroutine runs a PASSIVE checkpoint (it
// never blocks writers or readers) from a read connection every checkpointInterval; WAL mode keeps
// readers and that checkpoint beside the writer. The returned stop waits for the goroutine.
func (s *Store) startCheckpointer() (stop func(), err error) {
	if _, err := s.dbW.ExecContext(context.Background(), "PRAGMA wal_autocheckpoint=0"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(checkpointInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := s.r.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil && ctx.Err() == nil {
				s.log.Warn("sqlstore: checkpoint", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}
