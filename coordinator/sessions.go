package coordinator

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// GetSession returns a session.
func (c *Coordinator) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	return lookup(c.store.GetSession(ctx, id)).as("session", id)
}

// ListSessions returns a page of sessions, oldest first. Limit defaults to 100 and is capped at 1000;
// NextCursor continues the listing.
func (c *Coordinator) ListSessions(ctx context.Context, f orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "limit must be at most 1000")
	}
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	list, err := c.store.ListSessions(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &orchestrator.SessionPage{Sessions: list}
	if len(list) > want {
		page.Sessions = list[:want]
		page.NextCursor = list[want-1].ID
	}
	return page, nil
}

// WaitSession returns the session as soon as it has ended, or as it is when wait elapses. It parks on a
// notification, never a sleep loop.
func (c *Coordinator) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	var s *orchestrator.Session
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

// StopSession stops the session's current run (see [Coordinator.StopRun]); an idle session is
// returned unchanged.
func (c *Coordinator) StopSession(ctx context.Context, id string) (*orchestrator.Session, error) {
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
func (c *Coordinator) DeleteSession(ctx context.Context, id string) error {
	err := c.inTx(ctx, opDeleteSession, func(ctx context.Context, tx store.Store) error {
		s, err := lookup(tx.GetSession(ctx, id)).as("session", id)
		if err != nil {
			return err
		}
		if !s.Status.Ended() {
			return orchestrator.Errorf(orchestrator.ErrConflict, "session_active", "session %s is %s; stop it before deleting it", id, s.Status)
		}
		return tx.DeleteSession(ctx, id)
	})
	if err == nil {
		c.wake(sessionKey(id))
		c.wake(eventsKey(id))
	}
	return err
}
