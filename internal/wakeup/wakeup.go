// Package wakeup wakes goroutines parked on a key (a runner's poll, a session's waiters, an event
// follower) the moment something they wait for may have happened.
//
// A wake-up is a hint, the caller's store is the truth: waiters take their channel, then read the store,
// and park only if what they read does not satisfy them. A spurious wake-up costs one read, and a missed
// one cannot happen as long as waiters take their channel before they read ([Hub.Await] does).
package wakeup

import (
	"context"
	"sync"
	"time"
)

// Hub holds the channels of the keys goroutines wait on. The zero value is not ready: use [New].
type Hub struct {
	mu    sync.Mutex
	chans map[string]*keyWait
}

type keyWait struct {
	ch      chan struct{}
	waiters int
}

// New returns an empty hub.
func New() *Hub { return &Hub{chans: map[string]*keyWait{}} }

// Wait returns a channel closed by the next Notify(key) and a release func the caller must call when it
// stops waiting (so the map does not grow with keys nobody waits on).
func (h *Hub) Wait(key string) (<-chan struct{}, func()) {
	h.mu.Lock()
	kw := h.chans[key]
	if kw == nil {
		kw = &keyWait{ch: make(chan struct{})}
		h.chans[key] = kw
	}
	kw.waiters++
	ch := kw.ch
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			if cur := h.chans[key]; cur != nil && cur.ch == ch {
				cur.waiters--
				if cur.waiters == 0 {
					delete(h.chans, key)
				}
			}
			h.mu.Unlock()
		})
	}
}

// NotifyAll wakes everyone waiting on any key.
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	for key, kw := range h.chans {
		close(kw.ch)
		delete(h.chans, key)
	}
	h.mu.Unlock()
}

// Notify wakes everyone waiting on key.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	if kw := h.chans[key]; kw != nil {
		close(kw.ch)
		delete(h.chans, key)
	}
	h.mu.Unlock()
}

// Await calls look until it reports done, parking between looks until key (or key2, when not empty) is
// notified, wait elapses or ctx ends; a wait of zero looks once. The channels are taken before each look,
// so nothing that happens after a look is missed: a waiter is woken the moment what it waits for may have
// happened, never by polling. It returns (false, nil) when wait elapses, and ctx's error when ctx ends.
func (h *Hub) Await(ctx context.Context, wait time.Duration, key, key2 string, look func() (bool, error)) (bool, error) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		ch, release := h.Wait(key)
		var ch2 <-chan struct{}
		release2 := func() {}
		if key2 != "" {
			ch2, release2 = h.Wait(key2)
		}
		done, err := look()
		if done || err != nil || timer == nil {
			release()
			release2()
			return done, err
		}
		select {
		case <-ch:
		case <-ch2:
		case <-timer:
			release()
			release2()
			return false, nil
		case <-ctx.Done():
			release()
			release2()
			return false, ctx.Err()
		}
		release()
		release2()
	}
}
