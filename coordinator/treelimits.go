package coordinator

import (
	"context"
	"errors"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Defaults of Config.MaxTreeDepth and Config.MaxTreeSessions.
const (
	defaultMaxTreeDepth    = 8
	defaultMaxTreeSessions = 10_000
)

// treeLimits returns the tighter, field by field, of the coordinator's limits and want (nil: none asked).
func (c *Coordinator) treeLimits(want *orchestrator.TreeLimits) *orchestrator.TreeLimits {
	l := &orchestrator.TreeLimits{MaxDepth: c.cfg.MaxTreeDepth, MaxSessions: c.cfg.MaxTreeSessions}
	if want != nil {
		if want.MaxDepth > 0 && want.MaxDepth < l.MaxDepth {
			l.MaxDepth = want.MaxDepth
		}
		if want.MaxSessions > 0 && want.MaxSessions < l.MaxSessions {
			l.MaxSessions = want.MaxSessions
		}
	}
	return l
}

// placeInTree sets the new session s's place in its tree — its root, depth, detachment and the tree's
// limits — and refuses a start deeper than the tree allows. parent is nil for a root. The size of the
// tree is checked when the session is created (createChild), in the same transaction.
func (c *Coordinator) placeInTree(p orchestrator.StartRunParams, parent, s *orchestrator.Session) error {
	if l := p.Limits; l != nil && (l.MaxDepth < 0 || l.MaxSessions < 0) {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "limits: max_depth and max_sessions must not be negative")
	}
	if parent == nil {
		if p.Detached {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "detached is for a child session: give parent_session_id")
		}
		s.RootSessionID, s.Depth, s.Limits = s.ID, 0, c.treeLimits(p.Limits)
		return nil
	}
	if p.Limits != nil {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"limits are set by the root of a tree (a start without parent_session_id); session %s's tree has them already", parent.RootSessionID)
	}
	s.RootSessionID, s.Depth, s.Detached = parent.RootSessionID, parent.Depth+1, p.Detached
	if s.RootSessionID == "" {
		s.RootSessionID = parent.ID
	}
	s.Limits = c.treeLimits(parent.Limits)
	if s.Depth > s.Limits.MaxDepth {
		return treeLimitError("max_depth", s.Limits.MaxDepth, s.RootSessionID,
			"session %s is at depth %d of its tree, and the tree allows %d levels below its root", parent.ID, parent.Depth, s.Limits.MaxDepth)
	}
	return nil
}

func treeLimitError(limit string, max int, root, format string, args ...any) error {
	return orchestrator.Errorf(orchestrator.ErrConflict, orchestrator.CodeTreeLimitExceeded, "tree limit %s exceeded: "+format, append([]any{limit}, args...)...).
		With("limit", limit).With("max", max).With("root_session_id", root)
}

// createChild creates a session below a root — with its first run and, when there is one, the
// idempotency key — in the transaction that admits it to its tree ([store.Store.AdmitToTree]): of
// concurrent starts in one tree, no more than its max_sessions are created, and a creation that fails
// takes its count back with it.
func (c *Coordinator) createChild(ctx context.Context, key *store.IdempotencyKey, s *orchestrator.Session, run *orchestrator.Run) error {
	err := c.store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := admitChild(ctx, tx, s); err != nil {
			return err
		}
		if key == nil {
			return tx.CreateSessionWithRun(ctx, s, run)
		}
		return tx.CreateSessionWithRunOnce(ctx, s, run, key)
	})
	if key != nil && errors.Is(err, orchestrator.ErrConflict) && orchestrator.ErrorCode(err) != orchestrator.CodeTreeLimitExceeded {
		return errKeyTaken
	}
	return err
}

// admitChild counts the new child session s in its tree inside tx, or refuses it when the tree is full.
func admitChild(ctx context.Context, tx store.Store, s *orchestrator.Session) error {
	max := s.Limits.MaxSessions
	ok, err := tx.AdmitToTree(ctx, s.RootSessionID, max)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil // the root was deleted: its tree is no longer counted
	}
	if err != nil {
		return err
	}
	if !ok {
		return treeLimitError("max_sessions", max, s.RootSessionID, "the tree of session %s holds %d sessions already", s.RootSessionID, max)
	}
	return nil
}
