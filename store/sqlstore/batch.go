package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// SQLite has one writer, and a commit costs a write system call per page it changed (WAL frames): with
// many concurrent small transactions, most of the time goes to commits that each rewrite the same few
// pages (the newest leaf of runs, events and their indexes). The batcher is group commit: transactions
// queue for the single write connection, and whatever has queued while the previous commit ran is run in
// one SQLite transaction, each in a savepoint of its own, and committed once. A transaction that fails
// rolls back to its savepoint and the others are not affected; every caller returns only after the commit
// that made its work durable (or with the commit's error). Under light load a batch holds one transaction
// and nothing waits longer than before.

// maxBatch bounds how many transactions share one commit, so one commit's latency stays small.
const maxBatch = 64

type txRequest struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *Store) error
	err  error
	pan  any // a panic in fn, re-raised in the caller
	done chan struct{}
}

type batcher struct {
	s    *Store
	reqs chan *txRequest
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

func newBatcher(s *Store) *batcher {
	b := &batcher{s: s, reqs: make(chan *txRequest, maxBatch)}
	b.wg.Add(1)
	go b.loop()
	return b
}

// run runs fn in a batched transaction and returns its outcome.
func (b *batcher) run(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &txRequest{ctx: ctx, fn: fn, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("sqlstore: store closed")
	}
	b.reqs <- r
	b.mu.Unlock()
	// Once queued the request is seen through, whatever ctx does: its caller must learn whether it was
	// committed. The writer skips requests whose context ended before their turn.
	<-r.done
	if r.pan != nil {
		panic(r.pan)
	}
	return r.err
}

func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.reqs)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *batcher) loop() {
	defer b.wg.Done()
	for first := range b.reqs {
		batch := []*txRequest{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-b.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		b.commit(batch)
		for _, r := range batch {
			close(r.done)
		}
	}
}

// commit runs a batch in one transaction.
func (b *batcher) commit(batch []*txRequest) {
	s := b.s
	ctx := context.Background()
	tx, err := s.dbW.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.err = wrap(err, "transaction", "")
		}
		return
	}
	txs := &Store{w: tx, r: tx, inTx: true, pg: s.pg, log: s.log, dbW: s.dbW, stmts: s.stmts}
	exec := func(q string) error {
		st, err := txs.prepared(ctx, q) // prepared once: these run several times per batch
		if err == nil {
			_, err = st.ExecContext(ctx)
		}
		return err
	}
	single := len(batch) == 1
	ok := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if !single {
			if err := exec("SAVEPOINT batch"); err != nil {
				r.err = wrap(err, "savepoint", "")
				continue
			}
		}
		// Once its turn has come a transaction runs to its end: its statements take a context that its
		// caller's cancellation does not reach. With a cancellable one, the driver and database/sql each
		// start a goroutine per statement to watch it, on the single writer's path; a transaction is a few
		// statements of well under a millisecond, so there is nothing worth interrupting.
		r.pan, r.err = call(context.WithoutCancel(r.ctx), txs, r.fn)
		switch {
		case single:
		case r.err == nil && r.pan == nil:
			if err := exec("RELEASE batch"); err != nil {
				r.err = wrap(err, "savepoint", "")
			}
		default:
			err1 := exec("ROLLBACK TO batch")
			err2 := exec("RELEASE batch")
			if err := errors.Join(err1, err2); err != nil {
				// The transaction is in an unknown state: give up on the whole batch.
				_ = tx.Rollback()
				for _, o := range batch {
					if o.err == nil && o.pan == nil {
						o.err = fmt.Errorf("sqlstore: batch rolled back: %w", err)
					}
				}
				return
			}
		}
		if r.err == nil && r.pan == nil {
			ok++
		}
	}
	if single && (batch[0].err != nil || batch[0].pan != nil) || ok == 0 {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		for _, r := range batch {
			if r.err == nil && r.pan == nil {
				r.err = wrap(err, "commit", "")
			}
		}
	}
}

// call runs fn, turning a panic into a value the caller re-raises.
func call(ctx context.Context, tx *Store, fn func(ctx context.Context, tx *Store) error) (pan any, err error) {
	defer func() {
		if p := recover(); p != nil {
			pan = p
		}
	}()
	return nil, fn(ctx, tx)
}
