package wakeup

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Await looks once, parks, and looks again only when one of its keys is notified; a notification of
// another key does not wake it.
func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		looks := 0
		ready := false
		done := make(chan bool, 1)
		go func() {
			ok, err := h.Await(context.Background(), time.Hour, "a", "b", func() (bool, error) {
				looks++
				return ready, nil
			})
			if err != nil {
				t.Error(err)
			}
			done <- ok
		}()
		synctest.Wait()
		if looks != 1 {
			t.Fatalf("%d looks before any notification, want 1", looks)
		}
		h.Notify("other")
		synctest.Wait()
		if looks != 1 {
			t.Fatalf("%d looks after another key was notified, want 1", looks)
		}
		h.Notify("b")
		synctest.Wait()
		if looks != 2 {
			t.Fatalf("%d looks after key2 was notified, want 2", looks)
		}
		ready = true
		h.Notify("a")
		if ok := <-done; !ok || looks != 3 {
			t.Fatalf("Await = %v after %d looks, want true after 3", ok, looks)
		}
		if n := len(h.chans); n != 0 {
			t.Errorf("%d keys still held after the waiter left", n)
		}
	})
}

// Await gives up when its wait elapses, or its context ends; a zero wait looks once.
func TestAwaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		never := func() (bool, error) { return false, nil }
		start := time.Now()
		if ok, err := h.Await(context.Background(), time.Minute, "a", "", never); ok || err != nil {
			t.Errorf("Await after its wait = %v, %v; want false, nil", ok, err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("Await returned after %s, want 1m", d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := h.Await(ctx, time.Minute, "a", "", never); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Await after its context ended: %v", err)
		}
		looks := 0
		_, _ = h.Await(context.Background(), 0, "a", "", func() (bool, error) { looks++; return false, nil })
		if looks != 1 {
			t.Errorf("a zero wait looked %d times, want 1", looks)
		}
	})
}

// NotifyAll wakes the waiters of every key.
func TestNotifyAll(t *testing.T) {
	h := New()
	a, releaseA := h.Wait("a")
	b, releaseB := h.Wait("b")
	defer releaseA()
	defer releaseB()
	h.NotifyAll()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Error("a waiter was not woken")
		}
	}
}
