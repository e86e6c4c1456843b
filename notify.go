package orchestrator

import "sync"

// notifier wakes goroutines parked on a key (a runner's poll, a session's waiters, an event follower) the
// moment something they wait for may have happened. Waiters re-read the store after waking: a notification
// is a hint, the store is the truth, so a spurious wake-up costs one read and a missed one cannot happen as
// long as waiters take their channel before they read.
type notifier struct {
	mu    sync.Mutex
	chans map[string]*keyWait
}

type keyWait struct {
	ch      chan struct{}
	waiters int
}

func newNotifier() *notifier { return &notifier{chans: map[string]*keyWait{}} }

// wait returns a channel closed by the next notify(key) and a release func the caller must call when it
// stops waiting (so the map does not grow with keys nobody waits on).
func (n *notifier) wait(key string) (<-chan struct{}, func()) {
	n.mu.Lock()
	kw := n.chans[key]
	if kw == nil {
		kw = &keyWait{ch: make(chan struct{})}
		n.chans[key] = kw
	}
	kw.waiters++
	ch := kw.ch
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			if cur := n.chans[key]; cur != nil && cur.ch == ch {
				cur.waiters--
				if cur.waiters == 0 {
					delete(n.chans, key)
				}
			}
			n.mu.Unlock()
		})
	}
}

// notifyAll wakes everyone waiting on any key.
func (n *notifier) notifyAll() {
	n.mu.Lock()
	for key, kw := range n.chans {
		close(kw.ch)
		delete(n.chans, key)
	}
	n.mu.Unlock()
}

// notify wakes everyone waiting on key.
func (n *notifier) notify(key string) {
	n.mu.Lock()
	if kw := n.chans[key]; kw != nil {
		close(kw.ch)
		delete(n.chans, key)
	}
	n.mu.Unlock()
}

// Keys.
func runnerKey(id string) string  { return "r:" + id }
func sessionKey(id string) string { return "s:" + id }
func eventsKey(id string) string  { return "e:" + id }

// runnerStopsKey wakes a full runner's poll, which takes stop requests alone. A stop wakes runnerKey
// too, the key a poll for runs waits on.
func runnerStopsKey(id string) string { return "x:" + id }

const anyRunnerKey = "r:*"
