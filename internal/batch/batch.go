// Package batch sends the items that become ready together in one call, without adding delay.
package batch

import (
	"context"
	"fmt"
	"sync"
)

// Queue gathers items for a send function. An item that finds no call under way is sent at once, alone;
// the items that arrive while a call is under way go together in the next one, at most max at a time.
// A caller with many items ready at about the same time thus makes one call per round trip instead of
// one per item.
type Queue[T any] struct {
	max  int
	wg   *sync.WaitGroup
	send func(items []T) []error

	mu      sync.Mutex
	pending []*queued[T]
	sending bool // a flusher goroutine is running
}

type queued[T any] struct {
	item T
	done chan error // buffered: the flusher never waits for a caller that gave up
}

// New returns a queue that sends through send, which gets 1 to max items and returns one error per item,
// in order. The goroutine that sends is counted in wg, so that waiting on wg also waits for the items
// queued to be sent; while something may wait on wg, call Do only from goroutines wg counts.
func New[T any](max int, wg *sync.WaitGroup, send func(items []T) []error) *Queue[T] {
	return &Queue[T]{max: max, wg: wg, send: send}
}

// Do queues item and waits until it was sent, returning its error, or until ctx ends. An item whose
// caller gave up may still go out with a later call.
func (q *Queue[T]) Do(ctx context.Context, item T) error {
	e := &queued[T]{item: item, done: make(chan error, 1)}
	q.mu.Lock()
	q.pending = append(q.pending, e)
	if !q.sending {
		q.sending = true
		q.wg.Add(1)
		go q.flush()
	}
	q.mu.Unlock()
	select {
	case err := <-e.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Len returns how many items wait for a call.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// flush sends what is queued, call after call, until the queue is empty.
func (q *Queue[T]) flush() {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		n := min(len(q.pending), q.max)
		if n == 0 {
			q.sending = false
			q.pending = nil // let the backing array go
			q.mu.Unlock()
			return
		}
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		q.mu.Unlock()

		items := make([]T, n)
		for i, e := range batch {
			items[i] = e.item
		}
		errs := q.send(items)
		for i, e := range batch {
			var err error
			if i < len(errs) {
				err = errs[i]
			} else {
				err = fmt.Errorf("batch: %d errors answered for %d items", len(errs), n)
			}
			e.done <- err
		}
	}
}
