package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// CreateCallback inserts the callback; a taken id is ErrConflict.
func (s *Store) CreateCallback(ctx context.Context, c *orchestrator.Callback) error {
	row, err := callbackToRow(c)
	if err != nil {
		return err
	}
	return wrap(s.insert(ctx, row), "callback", c.ID)
}

// ListCallbacks returns the callbacks f selects, oldest first.
func (s *Store) ListCallbacks(ctx context.Context, f store.CallbackFilter) ([]*orchestrator.Callback, error) {
	var rows []callbackRow
	q := s.r.NewSelect().Model(&rows).OrderExpr("created_at, id")
	if f.ParentSessionID != "" {
		q = q.Where("parent_session_id = ?", f.ParentSessionID)
	}
	if f.ChildSessionID != "" {
		q = q.Where("child_session_id = ?", f.ChildSessionID)
	}
	if f.Pending {
		q = q.Where("delivered_at IS NULL")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "callbacks", "")
	}
	return domains(rows, (*callbackRow).domain)
}

// MarkCallbacksDelivered marks the listed undelivered callbacks delivered by runID at at, and returns how
// many it marked.
func (s *Store) MarkCallbacksDelivered(ctx context.Context, ids []string, runID string, at time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := s.w.NewUpdate().Model((*callbackRow)(nil)).
		Set("delivered_at = ?", utc(at)).
		Set("delivered_run = ?", runID).
		Where("id IN (?)", bun.List(ids)).
		Where("delivered_at IS NULL").
		Exec(ctx)
	if err != nil {
		return 0, wrap(err, "callbacks for run", runID)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
