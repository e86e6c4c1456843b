package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

type inputRequestRow struct {
	bun.BaseModel `bun:"table:input_requests,alias:ir"`

	ID         string          `bun:"id,pk"`
	SessionID  string          `bun:"session_id"`
	RunID      string          `bun:"run_id"`
	AgentName  string          `bun:"agent_name"`
	Kind       string          `bun:"kind"`
	Prompt     string          `bun:"prompt"`
	Schema     json.RawMessage `bun:"schema"`
	Status     string          `bun:"status"`
	Answer     json.RawMessage `bun:"answer"`
	AnsweredBy string          `bun:"answered_by"`
	CreatedAt  time.Time       `bun:"created_at"`
	ExpiresAt  *time.Time      `bun:"expires_at"`
	ClosedAt   *time.Time      `bun:"closed_at"`
}

func inputRequestToRow(r *orchestrator.InputRequest) *inputRequestRow {
	return &inputRequestRow{
		ID:         r.ID,
		SessionID:  r.SessionID,
		RunID:      r.RunID,
		AgentName:  r.AgentName,
		Kind:       string(r.Kind),
		Prompt:     r.Prompt,
		Schema:     rawOrNil(r.Schema),
		Status:     string(r.Status),
		Answer:     rawOrNil(r.Answer),
		AnsweredBy: r.AnsweredBy,
		CreatedAt:  utc(r.CreatedAt),
		ExpiresAt:  utcPtr(r.ExpiresAt),
		ClosedAt:   utcPtr(r.ClosedAt),
	}
}

func (r *inputRequestRow) domain() (*orchestrator.InputRequest, error) {
	return &orchestrator.InputRequest{
		ID:         r.ID,
		SessionID:  r.SessionID,
		RunID:      r.RunID,
		AgentName:  r.AgentName,
		Kind:       orchestrator.InputRequestKind(r.Kind),
		Prompt:     r.Prompt,
		Schema:     rawOrNil(r.Schema),
		Status:     orchestrator.InputRequestStatus(r.Status),
		Answer:     rawOrNil(r.Answer),
		AnsweredBy: r.AnsweredBy,
		CreatedAt:  r.CreatedAt.UTC(),
		ExpiresAt:  utcPtr(r.ExpiresAt),
		ClosedAt:   utcPtr(r.ClosedAt),
	}, nil
}

// CreateInputRequest inserts the request; a taken id is ErrConflict.
func (s *Store) CreateInputRequest(ctx context.Context, r *orchestrator.InputRequest) error {
	_, err := s.w.NewInsert().Model(inputRequestToRow(r)).Exec(ctx)
	return wrap(err, "input request", r.ID)
}

// GetInputRequest returns the request with the id.
func (s *Store) GetInputRequest(ctx context.Context, id string) (*orchestrator.InputRequest, error) {
	var row inputRequestRow
	if err := s.r.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, wrap(err, "input request", id)
	}
	return row.domain()
}

// ListInputRequests returns the requests f selects, oldest first. A selection of open requests alone is
// served by the input_requests_open index, one by session by input_requests_session.
func (s *Store) ListInputRequests(ctx context.Context, f orchestrator.InputRequestFilter) ([]*orchestrator.InputRequest, error) {
	var rows []inputRequestRow
	q := s.r.NewSelect().Model(&rows).OrderExpr("created_at, id")
	if len(f.Statuses) == 1 {
		// Written as the partial index's predicate is, so that the planners use it.
		q = q.Where("status = '" + string(f.Statuses[0]) + "'")
	} else if len(f.Statuses) > 1 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.SessionID != "" {
		q = q.Where("session_id = ?", f.SessionID)
	}
	if !f.ExpiresBefore.IsZero() {
		q = q.Where("expires_at IS NOT NULL AND expires_at < ?", utc(f.ExpiresBefore))
	}
	if f.AfterID != "" {
		var after inputRequestRow
		if err := s.r.NewSelect().Model(&after).Column("id", "created_at").Where("id = ?", f.AfterID).Scan(ctx); err != nil {
			return nil, wrap(err, "cursor input request", f.AfterID)
		}
		q = afterCursor(q, after.CreatedAt, after.ID)
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "input requests", "")
	}
	return domains(rows, (*inputRequestRow).domain)
}

// CloseInputRequest closes an open request with one UPDATE whose WHERE clause is the guard (status =
// 'open'): of concurrent closes exactly one changes the row.
func (s *Store) CloseInputRequest(ctx context.Context, id string, c store.InputRequestClose) (*orchestrator.InputRequest, error) {
	switch c.Status {
	case orchestrator.InputAnswered, orchestrator.InputExpired, orchestrator.InputCancelled:
	default:
		return nil, errors.New("sqlstore: an input request closes as answered, expired or cancelled, not " + string(c.Status))
	}
	var answer any // NULL without an answer; text, which a JSON column takes, with one
	if len(c.Answer) > 0 {
		answer = string(c.Answer)
	}
	var row inputRequestRow
	err := s.w.NewUpdate().Model(&row).
		Set("status = ?", string(c.Status)).
		Set("answer = ?", answer).
		Set("answered_by = ?", c.AnsweredBy).
		Set("closed_at = ?", utc(c.At)).
		Where("id = ?", id).
		Where("status = ?", string(orchestrator.InputOpen)).
		Returning("*").Scan(ctx)
	if err == nil {
		return row.domain()
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap(err, "input request", id)
	}
	exists, err := s.w.NewSelect().Model((*inputRequestRow)(nil)).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return nil, wrap(err, "input request", id)
	}
	if !exists {
		return nil, notFound("input request", id)
	}
	return nil, conflict("input request", id, "is no longer open")
}

// ReleaseRun clears held and parked of a held pending run and makes it due at at.
func (s *Store) ReleaseRun(ctx context.Context, id string, at time.Time) error {
	res, err := s.w.NewUpdate().Model((*runRow)(nil)).Set("held = FALSE").Set("parked = FALSE").Set("run_at = ?", utc(at)).
		Where("id = ?", id).Where("status = ?", string(orchestrator.RunPending)).Where("held").Exec(ctx)
	if err != nil {
		return wrap(err, "run", id)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return wrap(err, "run", id)
	}
	exists, err := s.w.NewSelect().Model((*runRow)(nil)).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return wrap(err, "run", id)
	}
	if !exists {
		return notFound("run", id)
	}
	return conflict("run", id, "is not a held pending run")
}
