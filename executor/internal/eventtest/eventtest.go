// Package eventtest holds the event sink the executors' tests record a run's events with.
package eventtest

import (
	"context"
	"sync"

	"github.com/agentorchestrator/orchestrator"
)

// Recorder is an [orchestrator.EventSink] that keeps every event emitted to it. It is safe for concurrent
// use; the zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []orchestrator.Event
}

// Emit records events.
func (r *Recorder) Emit(_ context.Context, events ...orchestrator.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
	return nil
}

// All returns a copy of the events recorded so far, in order.
func (r *Recorder) All() []orchestrator.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]orchestrator.Event(nil), r.events...)
}
