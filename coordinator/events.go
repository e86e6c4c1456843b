package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/wellformed"
	"github.com/agentorchestrator/orchestrator/store"
)

// ListEvents returns up to limit events with a sequence number above after (limit defaults to 100 and is
// capped at Limits.MaxEventsPage). With a positive wait and nothing new it parks until the next event
// arrives, the session ends, or wait elapses.
func (c *Coordinator) ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*orchestrator.Event, error) {
	if after < 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "after must not be negative")
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, c.limits.MaxEventsPage)
	var evs []*orchestrator.Event
	_, err := c.await(ctx, wait, eventsKey(sessionID), "", func() (bool, error) {
		s, err := c.GetSession(ctx, sessionID)
		if err != nil {
			return false, err
		}
		if s.LastEventSeq > after {
			evs, err = c.store.ListEvents(ctx, sessionID, after, limit)
		}
		return len(evs) > 0, err
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

var eventTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// AppendEvents validates events and appends them to the session. An executor_session event also records
// the executor's session id on the session, for resume.
func (c *Coordinator) AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error) {
	if len(events) == 0 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "no events")
	}
	if len(events) > c.limits.MaxEventsPerAppend {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "too_many_events", "at most %d events per call", c.limits.MaxEventsPerAppend)
	}
	now := c.now()
	out := make([]*orchestrator.Event, len(events))
	var executorSessionID string
	var usage []orchestrator.Usage // the usage events' deltas, for the metrics
	for i := range events {
		e := events[i]
		if !eventTypePattern.MatchString(e.Type) {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "event %d: event_type %q must be a lowercase word (letters, digits, _ . -)", i, e.Type)
		}
		if e.SessionID != "" && e.SessionID != sessionID {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "event %d belongs to session %q, not %q", i, e.SessionID, sessionID)
		}
		// The lifecycle markers and callback records are the coordinator's own: readers (a sync answer, the
		// dashboard, a parent's callback) trust them, so no runner or agent may write one.
		switch e.Type {
		case orchestrator.EventRunStarted, orchestrator.EventRunEnded, orchestrator.EventCallback:
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "reserved_event_type", "event %d: event_type %q is written by the coordinator only", i, e.Type)
		}
		data := bytes.TrimSpace(e.Data)
		if len(data) == 0 {
			data = []byte(`{}`)
		}
		if len(data) > c.limits.MaxEventBytes {
			return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "event_too_large", "event %d exceeds %d bytes", i, c.limits.MaxEventBytes)
		}
		if data[0] != '{' || !json.Valid(data) {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "event %d: data must be a JSON object", i)
		}
		// Stored as it came and served back to every reader: it must be text every store and JSON reader
		// takes (json.Valid does not check UTF-8).
		if err := wellformed.JSON(data); err != nil {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_encoding", "event %d: data %v", i, err)
		}
		if e.Type == orchestrator.EventExecutorSession {
			var d struct {
				ID string `json:"executor_session_id"`
			}
			if e.DecodeData(&d) != nil || d.ID == "" || len(d.ID) > 256 {
				return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "event %d: executor_session needs executor_session_id", i)
			}
			executorSessionID = d.ID
		}
		if e.Type == orchestrator.EventUsage {
			priced, u, err := c.usageEvent(i, data)
			if err != nil {
				return nil, err
			}
			data = priced
			usage = append(usage, u)
		}
		out[i] = &orchestrator.Event{SessionID: sessionID, Type: e.Type, Time: now, Data: data}
	}
	started := false
	agent := ""
	err := c.inTx(ctx, opAppendEvents, func(ctx context.Context, tx store.Store) error {
		first, s, err := startedByEvents(ctx, tx, sessionID, now)
		if err != nil {
			return err
		}
		agent = s.AgentName
		started = first != nil
		if executorSessionID != "" {
			if _, err := tx.UpdateSession(ctx, sessionID, nil, store.SessionUpdate{ExecutorSessionID: &executorSessionID, UpdatedAt: now}); err != nil {
				return err
			}
		}
		if first != nil {
			return tx.AppendEvents(ctx, sessionID, append([]*orchestrator.Event{first}, out...))
		}
		return tx.AppendEvents(ctx, sessionID, out)
	})
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, notFound("session", sessionID)
	}
	if err != nil {
		return nil, err
	}
	c.wake(eventsKey(sessionID))
	if started {
		c.wake(sessionKey(sessionID))
	}
	if len(usage) > 0 {
		counts := make([]usageCount, len(usage))
		for i, u := range usage {
			counts[i] = usageCount{agent: agent, u: u}
		}
		c.countUsage(counts)
	}
	return out, nil
}

// startedByEvents marks the session's claimed run started when its events arrive before the runner's
// started report — an executor that posts through the runner's gateway races that report — and returns
// the run_started event to append before them (nil when the run is not claimed), so that run_started is
// always a run's first event. The started report that follows finds the run running and changes nothing.
// It returns the session as it read it, too.
func startedByEvents(ctx context.Context, tx store.Store, sessionID string, now time.Time) (*orchestrator.Event, *orchestrator.Session, error) {
	s, err := tx.GetSession(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if s.Status != orchestrator.SessionPending || s.CurrentRunID == "" {
		return nil, s, nil
	}
	run, err := markStarted(ctx, tx, s.CurrentRunID, "", now)
	if errors.Is(err, orchestrator.ErrConflict) {
		return nil, s, nil // not claimed yet (events before any runner took it), or started meanwhile
	}
	if err != nil {
		return nil, nil, err
	}
	return runStartedEvent(run, now), s, nil
}
