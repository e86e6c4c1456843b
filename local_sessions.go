package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/wellformed"
)

// GetSession returns a session.
func (c *LocalCoordinator) GetSession(ctx context.Context, id string) (*Session, error) {
	return lookup(c.store.GetSession(ctx, id)).as("session", id)
}

// ListSessions returns a page of sessions, oldest first. Limit defaults to 100 and is capped at 1000;
// NextCursor continues the listing.
func (c *LocalCoordinator) ListSessions(ctx context.Context, f SessionFilter) (*SessionPage, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		return nil, Errorf(ErrInvalid, "invalid_request", "limit must be at most 1000")
	}
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	list, err := c.store.ListSessions(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &SessionPage{Sessions: list}
	if len(list) > want {
		page.Sessions = list[:want]
		page.NextCursor = list[want-1].ID
	}
	return page, nil
}

// WaitSession returns the session as soon as it has ended, or as it is when wait elapses. It parks on a
// notification, never a sleep loop.
func (c *LocalCoordinator) WaitSession(ctx context.Context, id string, wait time.Duration) (*Session, error) {
	var s *Session
	done, err := c.await(ctx, wait, sessionKey(id), "", func() (bool, error) {
		var err error
		s, err = c.GetSession(ctx, id)
		return err == nil && s.Status.Ended(), err
	})
	if err != nil || done || wait <= 0 {
		return s, err
	}
	return c.GetSession(ctx, id) // as it is when the wait ends
}

// StopSession stops the session's current run (see [LocalCoordinator.StopRun]); an idle session is
// returned unchanged.
func (c *LocalCoordinator) StopSession(ctx context.Context, id string) (*Session, error) {
	s, err := c.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.Status.Ended() && s.CurrentRunID != "" {
		if _, err := c.StopRun(ctx, s.CurrentRunID); err != nil {
			return nil, err
		}
	}
	return c.GetSession(ctx, id)
}

// DeleteSession deletes an ended session with its runs, events and callbacks. A session with a run in
// progress is ErrConflict: stop it first.
func (c *LocalCoordinator) DeleteSession(ctx context.Context, id string) error {
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		s, err := lookup(tx.GetSession(ctx, id)).as("session", id)
		if err != nil {
			return err
		}
		if !s.Status.Ended() {
			return Errorf(ErrConflict, "session_active", "session %s is %s; stop it before deleting it", id, s.Status)
		}
		return tx.DeleteSession(ctx, id)
	})
	if err == nil {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	return err
}

// ListEvents returns up to limit events with a sequence number above after (limit defaults to 100 and is
// capped at Limits.MaxEventsPage). With a positive wait and nothing new it parks until the next event
// arrives, the session ends, or wait elapses.
func (c *LocalCoordinator) ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*Event, error) {
	if after < 0 {
		return nil, Errorf(ErrInvalid, "invalid_request", "after must not be negative")
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, c.limits.MaxEventsPage)
	var evs []*Event
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
func (c *LocalCoordinator) AppendEvents(ctx context.Context, sessionID string, events []Event) ([]*Event, error) {
	if len(events) == 0 {
		return nil, Errorf(ErrInvalid, "invalid_request", "no events")
	}
	if len(events) > c.limits.MaxEventsPerAppend {
		return nil, Errorf(ErrTooLarge, "too_many_events", "at most %d events per call", c.limits.MaxEventsPerAppend)
	}
	now := Now()
	out := make([]*Event, len(events))
	var executorSessionID string
	for i := range events {
		e := events[i]
		if !eventTypePattern.MatchString(e.Type) {
			return nil, Errorf(ErrInvalid, "invalid_event", "event %d: event_type %q must be a lowercase word (letters, digits, _ . -)", i, e.Type)
		}
		if e.SessionID != "" && e.SessionID != sessionID {
			return nil, Errorf(ErrInvalid, "invalid_event", "event %d belongs to session %q, not %q", i, e.SessionID, sessionID)
		}
		data := bytes.TrimSpace(e.Data)
		if len(data) == 0 {
			data = []byte(`{}`)
		}
		if len(data) > c.limits.MaxEventBytes {
			return nil, Errorf(ErrTooLarge, "event_too_large", "event %d exceeds %d bytes", i, c.limits.MaxEventBytes)
		}
		if data[0] != '{' || !json.Valid(data) {
			return nil, Errorf(ErrInvalid, "invalid_event", "event %d: data must be a JSON object", i)
		}
		// Stored as it came and served back to every reader: it must be text every store and JSON reader
		// takes (json.Valid does not check UTF-8).
		if err := wellformed.JSON(data); err != nil {
			return nil, Errorf(ErrInvalid, "invalid_encoding", "event %d: data %v", i, err)
		}
		if e.Type == EventExecutorSession {
			var d struct {
				ID string `json:"executor_session_id"`
			}
			if e.DecodeData(&d) != nil || d.ID == "" || len(d.ID) > 256 {
				return nil, Errorf(ErrInvalid, "invalid_event", "event %d: executor_session needs executor_session_id", i)
			}
			executorSessionID = d.ID
		}
		out[i] = &Event{SessionID: sessionID, Type: e.Type, Time: now, Data: data}
	}
	err := c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		if executorSessionID != "" {
			if _, err := tx.UpdateSession(ctx, sessionID, nil, SessionUpdate{ExecutorSessionID: &executorSessionID, UpdatedAt: now}); err != nil {
				return err
			}
		}
		return tx.AppendEvents(ctx, sessionID, out)
	})
	if errors.Is(err, ErrNotFound) {
		return nil, notFound("session", sessionID)
	}
	if err != nil {
		return nil, err
	}
	c.wake(eventsKey(sessionID))
	return out, nil
}
