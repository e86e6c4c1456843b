package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentorchestrator/orchestrator/store"
	"github.com/uptrace/bun"
)

type webhookRow struct {
	bun.BaseModel `bun:"table:webhooks,alias:wh"`

	ID            string          `bun:"id,pk"`
	URL           string          `bun:"url"`
	SessionID     string          `bun:"session_id"`
	RunID         string          `bun:"run_id"`
	Payload       json.RawMessage `bun:"payload"`
	Status        string          `bun:"status"`
	Attempts      int64           `bun:"attempts"`
	NextAttemptAt time.Time       `bun:"next_attempt_at"`
	LastError     string          `bun:"last_error"`
	CreatedAt     time.Time       `bun:"created_at"`
	DeliveredAt   *time.Time      `bun:"delivered_at"`
}

func (r *webhookRow) domain() *store.Webhook {
	return &store.Webhook{
		ID:            r.ID,
		URL:           r.URL,
		SessionID:     r.SessionID,
		RunID:         r.RunID,
		Payload:       r.Payload,
		Status:        store.WebhookStatus(r.Status),
		Attempts:      int(r.Attempts),
		NextAttemptAt: r.NextAttemptAt.UTC(),
		LastError:     r.LastError,
		CreatedAt:     r.CreatedAt.UTC(),
		DeliveredAt:   utcPtr(r.DeliveredAt),
	}
}

// CreateWebhook inserts the webhook; a taken id is ErrConflict.
func (s *Store) CreateWebhook(ctx context.Context, w *store.Webhook) error {
	row := &webhookRow{
		ID:            w.ID,
		URL:           w.URL,
		SessionID:     w.SessionID,
		RunID:         w.RunID,
		Payload:       w.Payload,
		Status:        string(w.Status),
		Attempts:      int64(w.Attempts),
		NextAttemptAt: utc(w.NextAttemptAt),
		LastError:     w.LastError,
		CreatedAt:     utc(w.CreatedAt),
		DeliveredAt:   utcPtr(w.DeliveredAt),
	}
	return wrap(s.insert(ctx, row), "webhook", w.ID)
}

// ClaimWebhooks leases the due pending webhooks (see store.Store). On PostgreSQL the candidates are
// locked with SKIP LOCKED, so replicas claiming at once take different webhooks; the UPDATE re-checks
// status and due time, so a webhook is never leased twice.
func (s *Store) ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*store.Webhook, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []webhookRow
	err := s.tx(ctx, func(ctx context.Context, tx *Store) error {
		rows = nil
		due := tx.w.NewSelect().Model((*webhookRow)(nil)).Column("id").
			Where("status = ?", string(store.WebhookPending)).
			Where("next_attempt_at <= ?", utc(now)).
			OrderExpr("next_attempt_at, id").Limit(int64(limit))
		if tx.pg {
			due = due.For("UPDATE SKIP LOCKED")
		}
		var ids []string
		if err := due.Scan(ctx, &ids); err != nil {
			return wrap(err, "due webhooks", "")
		}
		if len(ids) == 0 {
			return nil
		}
		_, err := tx.w.NewUpdate().Model(&rows).
			Set("next_attempt_at = ?", utc(leaseUntil)).
			Where("id IN (?)", bun.List(ids)).
			Where("status = ?", string(store.WebhookPending)).
			Where("next_attempt_at <= ?", utc(now)).
			Returning("*").Exec(ctx)
		return wrap(err, "due webhooks", "")
	})
	if err != nil {
		return nil, err
	}
	out := make([]*store.Webhook, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// UpdateWebhook records a delivery attempt's outcome. It is fenced by the attempt count: it applies only
// while the webhook is pending with w.Attempts-1 attempts recorded, so a replica whose lease ran out while
// it delivered cannot overwrite what the replica that took the webhook over recorded (ErrConflict).
func (s *Store) UpdateWebhook(ctx context.Context, w *store.Webhook) error {
	res, err := s.w.NewUpdate().Model((*webhookRow)(nil)).
		Set("status = ?", string(w.Status)).
		Set("attempts = ?", w.Attempts).
		Set("next_attempt_at = ?", utc(w.NextAttemptAt)).
		Set("last_error = ?", w.LastError).
		Set("delivered_at = ?", utcPtr(w.DeliveredAt)).
		Where("id = ?", w.ID).
		Where("status = ?", string(store.WebhookPending)).
		Where("attempts = ?", w.Attempts-1).
		Exec(ctx)
	if err != nil {
		return wrap(err, "webhook", w.ID)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return wrap(err, "webhook", w.ID)
	}
	exists, err := s.w.NewSelect().Model((*webhookRow)(nil)).Where("id = ?", w.ID).Exists(ctx)
	if err != nil {
		return wrap(err, "webhook", w.ID)
	}
	if !exists {
		return notFound("webhook", w.ID)
	}
	return conflict("webhook", w.ID, "was updated by another delivery")
}
