package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// checkpointInterval is how often the background checkpointer copies the WAL into the database file.
const checkpointInterval = 250 * time.Millisecond

// DefaultMaxWALBytes is the default of [Config.MaxWALBytes].
const DefaultMaxWALBytes = 64 << 20

// walFrameHeader is the size of the header SQLite writes before each page in the WAL.
const walFrameHeader = 24

// startCheckpointer moves SQLite's WAL checkpoints off the commit path. By default the connection whose
// commit crosses the WAL size limit runs the checkpoint — including an fsync of the database file — while
// it holds the write lock, so one writer in a thousand waits milliseconds and every writer queued behind it
// waits too. Here the writer's automatic checkpoints are off and a goroutine runs a PASSIVE checkpoint (it
// never blocks writers or readers) from a read connection every checkpointInterval; WAL mode keeps
// readers and that checkpoint beside the writer.
//
// A PASSIVE checkpoint copies only the frames committed before it began. Under a steady stream of commits
// there are always newer ones, so the WAL is never wholly copied, SQLite never starts it over, and it grows
// for as long as the stream lasts: 350 MB in 11 s of the HTTP benchmark, and a crash then replays all of it
// when the database opens. So once the WAL holds more than maxWALBytes, the checkpointer copies what has
// come since twice more, which leaves little, and then finishes the checkpoint on the write connection.
// SQLite writes through that one connection, so while the checkpoint holds it no commit can add a frame: it
// completes (unless a reader still uses an older snapshot; then it is tried again next time), and the next
// write transaction starts the WAL over. journal_size_limit then cuts the file back to maxWALBytes. Writers
// wait for that last copy and its fsyncs: 7 – 40 ms (waiting for the connection included), once per 64 MB
// of WAL, about every 2 s at the HTTP benchmark's rate. The WAL stays near 64 MB instead of growing; the
// benchmark's rate is the same or a little higher.
//
// The returned stop waits for the goroutine.
func (s *Store) startCheckpointer(maxWALBytes int64) (stop func(), err error) {
	ctx := context.Background()
	var pageSize int64
	if err := s.dbW.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return nil, err
	}
	for _, pragma := range []string{
		"PRAGMA wal_autocheckpoint=0",
		fmt.Sprintf("PRAGMA journal_size_limit=%d", maxWALBytes),
	} {
		if _, err := s.dbW.ExecContext(ctx, pragma); err != nil {
			return nil, err
		}
	}
	maxFrames := maxWALBytes / (pageSize + walFrameHeader)
	ctx, cancel := context.WithCancel(ctx)
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
			frames, err := s.checkpointPassive(ctx)
			for i := 0; err == nil && frames > maxFrames && i < 2; i++ {
				_, err = s.checkpointPassive(ctx)
			}
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("sqlstore: checkpoint", "err", err)
				}
				continue
			}
			if frames > maxFrames {
				// The write pool's one connection: holding it, this checkpoint is the only writer.
				if _, err := s.dbW.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil && ctx.Err() == nil {
					s.log.Warn("sqlstore: checkpoint on the write connection", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// checkpointPassive runs a PASSIVE checkpoint on a read connection and returns the frames in the WAL.
func (s *Store) checkpointPassive(ctx context.Context) (frames int64, err error) {
	var busy, copied int64
	err = s.r.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	return frames, err
}
