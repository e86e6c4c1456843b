package gofunc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// ErrNoInvocation is returned by [Emit] and [Progress] when ctx does not come from a task's invocation.
var ErrNoInvocation = errors.New("gofunc: context does not belong to a task invocation")

// ErrInvocationEnded is returned by [Emit] and [Progress] once Execute has returned: a run's events must
// all precede its result.
var ErrInvocationEnded = errors.New("gofunc: the invocation has ended")

type callKey struct{}

// call is one invocation in flight, as seen from inside the task's function.
type call struct {
	inv  *orchestrator.Invocation
	sink orchestrator.EventSink

	// mu is held for reading by every Emit in flight and for writing by finish, so no Emit reaches the
	// sink after Execute returned.
	mu    sync.RWMutex
	ended bool
}

func (c *call) finish() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// InvocationFrom returns the invocation a task's ctx belongs to (its session and run ids, parameters,
// metadata and env). Treat it as read-only.
func InvocationFrom(ctx context.Context) (*orchestrator.Invocation, bool) {
	if c := callFrom(ctx); c != nil {
		return c.inv, true
	}
	return nil, false
}

// Emit adds events to the session of the invocation ctx belongs to, while the task runs. Events without a
// session id or time get the invocation's and the current time. Emit may be called from several goroutines;
// it returns the sink's error, [ErrNoInvocation], or [ErrInvocationEnded] once Execute has returned.
func Emit(ctx context.Context, events ...orchestrator.Event) error {
	c := callFrom(ctx)
	if c == nil {
		return ErrNoInvocation
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ended {
		return ErrInvocationEnded
	}
	if len(events) == 0 {
		return nil
	}
	evs := make([]orchestrator.Event, len(events))
	now := time.Now().UTC()
	for i, ev := range events {
		if ev.SessionID == "" {
			ev.SessionID = c.inv.SessionID
		}
		if ev.Time.IsZero() {
			ev.Time = now
		}
		if len(ev.Data) == 0 {
			ev.Data = []byte("{}")
		}
		evs[i] = ev
	}
	return c.sink.Emit(ctx, evs...)
}

// Progress emits an [orchestrator.EventProgress] event, {"message": "…"}, formatted as by fmt.Sprintf.
func Progress(ctx context.Context, format string, args ...any) error {
	return Emit(ctx, orchestrator.NewEvent(orchestrator.EventProgress, map[string]string{"message": fmt.Sprintf(format, args...)}))
}
