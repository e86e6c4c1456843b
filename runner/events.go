package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// A run's events reach the coordinator in calls of bounded size. The HTTP API refuses a body over its limit
// (2 MiB by default) whole, and a coordinator takes at most Limits.MaxEventsPerAppend events (1,000 by
// default) in one call: a runner splits what its executor emits into calls that fit both. Should a call be
// refused anyway as too large (a coordinator configured with lower limits) or invalid, it is halved, down
// to single events, so that one event the coordinator will not take costs only itself. Nothing is lost in
// silence: the stderr lines the coordinator did not store are counted, and a stderr_dropped event
// ({"dropped_lines": n, "reason": "not_stored"}) records them as soon as the coordinator answers again;
// other events lost are logged.
const (
	// eventCallBytes bounds one call's events, measured as their data plus eventEnvelopeBytes each: half
	// the HTTP API's default body limit, leaving room for what encoding adds.
	eventCallBytes = 1 << 20
	// eventEnvelopeBytes is what an event's wire form adds to its data: its type, session id, sequence
	// number and timestamp.
	eventEnvelopeBytes = 160
	// eventCallMax bounds one call's events: the coordinator's default Limits.MaxEventsPerAppend.
	eventCallMax = 1000
	// minEventCallBytes is as low as a call's budget goes when the coordinator refuses calls as too large.
	minEventCallBytes = 64 << 10
	// maxDroppedError bounds the error a stderr_dropped event quotes.
	maxDroppedError = 1 << 10
)

// runEvents is a run's event sink: it records the events an executor emits in the run's session. It is
// safe for concurrent use.
type runEvents struct {
	r         *Runner
	sessionID string
	log       *slog.Logger

	mu sync.Mutex
	// dropped counts the stderr lines the coordinator did not store and no stderr_dropped event records
	// yet; why is the last error that lost some.
	dropped int
	why     string
}

// Emit stores events in the run's session, in calls that fit the coordinator's limits. It returns the
// first error a call met; the events that call carried were not stored (and are counted).
func (e *runEvents) Emit(ctx context.Context, events ...orchestrator.Event) error {
	var first error
	for len(events) > 0 {
		n := e.r.eventCall(events)
		err := e.store(ctx, events[:n])
		if err != nil && first == nil {
			first = err
		}
		if err != nil && !answered(err) {
			// The coordinator did not answer: the next calls would not reach it either.
			e.lost(events[n:], err)
			return first
		}
		events = events[n:]
	}
	if first == nil {
		e.reportDropped(ctx)
	}
	return first
}

// store appends events in one call. Refused as too large or invalid, they are halved and each half stored
// on its own; an event refused alone, or events lost for any other reason, are counted.
func (e *runEvents) store(ctx context.Context, events []orchestrator.Event) error {
	_, err := e.r.co.AppendEvents(ctx, e.sessionID, events)
	if err == nil {
		return nil
	}
	if len(events) > 1 && (errors.Is(err, orchestrator.ErrTooLarge) || errors.Is(err, orchestrator.ErrInvalid)) {
		if orchestrator.ErrorCode(err) == "body_too_large" {
			e.r.lowerEventBudget(eventsSize(events) / 2)
		}
		h := len(events) / 2
		err1 := e.store(ctx, events[:h])
		err2 := e.store(ctx, events[h:])
		if err1 != nil {
			return err1
		}
		return err2
	}
	e.lost(events, err)
	return err
}

// lost counts the stderr lines among events, which err kept from the session, and logs the rest.
func (e *runEvents) lost(events []orchestrator.Event, err error) {
	lines, others := 0, 0
	for _, ev := range events {
		switch ev.Type {
		case orchestrator.EventStderr:
			lines++
		case orchestrator.EventStderrDropped:
			// The count of lines an executor dropped, lost with it: carried on.
			var d struct {
				N int `json:"dropped_lines"`
			}
			if ev.DecodeData(&d) == nil && d.N > 0 {
				lines += d.N
			}
		default:
			others++
		}
	}
	if len(events) == 0 {
		return
	}
	e.log.Warn("the coordinator did not store some of the run's events", "stderr_lines", lines, "other_events", others, "err", err)
	e.mu.Lock()
	e.dropped += lines
	e.why = err.Error()
	e.mu.Unlock()
}

// reportDropped records, in a stderr_dropped event, the stderr lines lost since the last one. Should that
// fail too, the count waits for the next success.
func (e *runEvents) reportDropped(ctx context.Context) {
	e.mu.Lock()
	n, why := e.dropped, e.why
	e.mu.Unlock()
	if n == 0 {
		return
	}
	ev := orchestrator.NewEvent(orchestrator.EventStderrDropped, map[string]any{
		"dropped_lines": n, "reason": "not_stored", "error": jsonsize.CutString(why, maxDroppedError)})
	if _, err := e.r.co.AppendEvents(ctx, e.sessionID, []orchestrator.Event{ev}); err != nil {
		e.log.Warn("could not record the stderr lines the coordinator did not store", "dropped_lines", n, "err", err)
		return
	}
	e.mu.Lock()
	e.dropped -= n
	e.mu.Unlock()
}

// eventCall returns how many of events, from the first, go in the next call: as many as fit the budget
// (at least one) and eventCallMax.
func (r *Runner) eventCall(events []orchestrator.Event) int {
	budget := r.eventBudget.Load()
	n, size := 0, int64(0)
	for n < len(events) && n < eventCallMax {
		s := eventSize(events[n])
		if n > 0 && size+s > budget {
			break
		}
		size += s
		n++
	}
	return n
}

// lowerEventBudget lowers the size of later calls to b (not below minEventCallBytes) after the
// coordinator refused a call's body as too large.
func (r *Runner) lowerEventBudget(b int64) {
	b = max(b, minEventCallBytes)
	for {
		cur := r.eventBudget.Load()
		if b >= cur || r.eventBudget.CompareAndSwap(cur, b) {
			return
		}
	}
}

func eventSize(ev orchestrator.Event) int64 {
	return int64(len(ev.Data) + len(ev.Type) + eventEnvelopeBytes)
}

func eventsSize(events []orchestrator.Event) int64 {
	var n int64
	for _, ev := range events {
		n += eventSize(ev)
	}
	return n
}
