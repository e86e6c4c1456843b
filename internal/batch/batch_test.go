package batch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

// Items that arrive while a call is under way go together in the next calls, at most max at a time; each
// caller gets its own item's error.
func TestQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var (
			mu    sync.Mutex
			calls [][]int
		)
		var wg sync.WaitGroup
		q := New(3, &wg, func(items []int) []error {
			mu.Lock()
			calls = append(calls, items)
			first := len(calls) == 1
			mu.Unlock()
			if first {
				<-release
			}
			errs := make([]error, len(items))
			for i, it := range items {
				if it%2 == 1 {
					errs[i] = errors.New("odd")
				}
			}
			return errs
		})
		results := make([]error, 8)
		var callers sync.WaitGroup
		callers.Go(func() { results[0] = q.Do(context.Background(), 0) })
		synctest.Wait() // the first call is under way, alone
		for i := 1; i < 8; i++ {
			callers.Go(func() { results[i] = q.Do(context.Background(), i) })
		}
		synctest.Wait()
		if n := q.Len(); n != 7 {
			t.Fatalf("%d items queued behind the first call, want 7", n)
		}
		close(release)
		callers.Wait()
		wg.Wait()
		if len(calls) != 4 || len(calls[0]) != 1 || len(calls[1]) != 3 || len(calls[2]) != 3 || len(calls[3]) != 1 {
			t.Errorf("calls %v, want [0] then the 7 others by 3", calls)
		}
		for i, err := range results {
			if (err != nil) != (i%2 == 1) {
				t.Errorf("item %d: error %v", i, err)
			}
		}
	})
}

// A caller that gives up gets its context's error; its item still goes out.
func TestQueueCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		sent := make(chan int, 2)
		var wg sync.WaitGroup
		q := New(2, &wg, func(items []int) []error {
			<-release
			for _, it := range items {
				sent <- it
			}
			return make([]error, len(items))
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- q.Do(ctx, 1) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Do after its context ended = %v, want context.Canceled", err)
		}
		close(release)
		wg.Wait()
		if got := <-sent; got != 1 {
			t.Errorf("sent %d, want 1", got)
		}
	})
}

// A send that answers fewer errors than items fails the items it did not answer for.
func TestQueueShortAnswer(t *testing.T) {
	var wg sync.WaitGroup
	q := New(4, &wg, func(items []int) []error { return nil })
	if err := q.Do(context.Background(), 1); err == nil {
		t.Error("an item the send did not answer for got no error")
	}
	wg.Wait()
}
