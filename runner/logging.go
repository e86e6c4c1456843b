package runner

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// link tracks whether the coordinator answers, so that an outage logs one WARN when it begins and one
// INFO when it ends, however many calls fail meanwhile (each retried with backoff by its caller).
type link struct {
	log       *slog.Logger
	mu        sync.Mutex
	downSince time.Time // zero while the coordinator answers
}

// answered reports whether err is an answer of the coordinator's (a refusal, a conflict, …) rather than
// no answer at all: a transport error, a server fault, a broken response.
func answered(err error) bool {
	for _, kind := range []error{orchestrator.ErrNotFound, orchestrator.ErrConflict, orchestrator.ErrInvalid,
		orchestrator.ErrUnauthorized, orchestrator.ErrForbidden, orchestrator.ErrTooLarge} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// isDown reports whether the last call found the coordinator unreachable.
func (l *link) isDown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.downSince.IsZero()
}

// result records the outcome of a call to the coordinator (op names it, for the log). It returns
// whether err means the coordinator could not be reached; the caller then retries quietly.
func (l *link) result(op string, err error) (lost bool) {
	if err == nil || answered(err) {
		l.mu.Lock()
		since := l.downSince
		l.downSince = time.Time{}
		l.mu.Unlock()
		if !since.IsZero() {
			l.log.Info("coordinator reachable again", "unreachable_for", time.Since(since).Round(time.Second))
		}
		return false
	}
	l.mu.Lock()
	first := l.downSince.IsZero()
	if first {
		l.downSince = time.Now()
	}
	l.mu.Unlock()
	if first {
		l.log.Warn("coordinator unreachable; retrying with backoff until it is back", "op", op, "err", err)
	} else {
		l.log.Debug("coordinator still unreachable", "op", op, "err", err)
	}
	return true
}

// maxLoggedError bounds the error a run's log line quotes; the session keeps all of it.
const maxLoggedError = 300

// logRunEnded writes the one INFO line of a run this runner executed; log carries the run's agent,
// session and run ids.
func logRunEnded(log *slog.Logger, runnerID string, begun time.Time, outcome, errMsg string) {
	attrs := []any{"runner_id", runnerID, "outcome", outcome, "duration", time.Since(begun).Round(time.Millisecond)}
	if errMsg != "" {
		attrs = append(attrs, "error", jsonsize.CutString(errMsg, maxLoggedError))
	}
	log.Info("run ended", attrs...)
}
