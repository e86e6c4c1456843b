package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

type scheduleRow struct {
	bun.BaseModel `bun:"table:schedules,alias:sc"`

	ID            string          `bun:"id,pk"`
	AgentName     string          `bun:"agent_name"`
	Parameters    json.RawMessage `bun:"parameters"`
	Cron          string          `bun:"cron"`
	Timezone      string          `bun:"timezone"`
	Overlap       string          `bun:"overlap"`
	Paused        bool            `bun:"paused"`
	NextFireAt    time.Time       `bun:"next_fire_at"`
	Queued        bool            `bun:"queued"`
	LastFiredAt   *time.Time      `bun:"last_fired_at"`
	LastSessionID string          `bun:"last_session_id"`
	LastError     string          `bun:"last_error"`
	CreatedAt     time.Time       `bun:"created_at"`
	UpdatedAt     time.Time       `bun:"updated_at"`
	Revision      int64           `bun:"revision"`
}

func scheduleToRow(s *orchestrator.Schedule) *scheduleRow {
	return &scheduleRow{
		ID:            s.ID,
		AgentName:     s.AgentName,
		Parameters:    rawOrNil(s.Parameters),
		Cron:          s.Cron,
		Timezone:      s.Timezone,
		Overlap:       string(s.Overlap),
		Paused:        s.Paused,
		NextFireAt:    utc(s.NextFireAt),
		Queued:        s.Queued,
		LastFiredAt:   utcPtr(s.LastFiredAt),
		LastSessionID: s.LastSessionID,
		LastError:     s.LastError,
		CreatedAt:     utc(s.CreatedAt),
		UpdatedAt:     utc(s.UpdatedAt),
		Revision:      s.Revision,
	}
}

func (r *scheduleRow) domain() (*orchestrator.Schedule, error) {
	return &orchestrator.Schedule{
		ID:            r.ID,
		AgentName:     r.AgentName,
		Parameters:    rawOrNil(r.Parameters),
		Cron:          r.Cron,
		Timezone:      r.Timezone,
		Overlap:       orchestrator.OverlapPolicy(r.Overlap),
		Paused:        r.Paused,
		NextFireAt:    r.NextFireAt.UTC(),
		Queued:        r.Queued,
		LastFiredAt:   utcPtr(r.LastFiredAt),
		LastSessionID: r.LastSessionID,
		LastError:     r.LastError,
		CreatedAt:     r.CreatedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
		Revision:      r.Revision,
	}, nil
}

// CreateSchedule inserts the schedule; a taken id is ErrConflict.
func (s *Store) CreateSchedule(ctx context.Context, sc *orchestrator.Schedule) error {
	_, err := s.w.NewInsert().Model(scheduleToRow(sc)).Exec(ctx)
	return wrap(err, "schedule", sc.ID)
}

// CountSchedules returns how many schedules there are.
func (s *Store) CountSchedules(ctx context.Context) (int, error) {
	n, err := s.r.NewSelect().Model((*scheduleRow)(nil)).Count(ctx)
	return int(n), wrap(err, "schedules", "")
}

// GetSchedule returns the schedule with the id.
func (s *Store) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	var row scheduleRow
	if err := s.r.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, wrap(err, "schedule", id)
	}
	return row.domain()
}

// ListSchedules returns the schedules f selects: with DueBy or Active, soonest next tick first (the
// schedules_next index); otherwise oldest first.
func (s *Store) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	var rows []scheduleRow
	q := s.r.NewSelect().Model(&rows)
	if f.AgentName != "" {
		q = q.Where("agent_name = ?", f.AgentName)
	}
	bySoonest := f.Active || !f.DueBy.IsZero()
	if bySoonest {
		q = q.Where("NOT paused").OrderExpr("next_fire_at, id")
		if !f.DueBy.IsZero() {
			q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("next_fire_at <= ?", utc(f.DueBy)).WhereOr("queued")
			})
		}
	} else {
		q = q.OrderExpr("created_at, id")
	}
	if f.AfterID != "" {
		var after scheduleRow
		if err := s.r.NewSelect().Model(&after).Column("id", "created_at", "next_fire_at").Where("id = ?", f.AfterID).Scan(ctx); err != nil {
			return nil, wrap(err, "cursor schedule", f.AfterID)
		}
		if bySoonest {
			q = q.Where("(next_fire_at > ? OR (next_fire_at = ? AND id > ?))", after.NextFireAt, after.NextFireAt, after.ID)
		} else {
			q = afterCursor(q, after.CreatedAt, after.ID)
		}
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "schedules", "")
	}
	return domains(rows, (*scheduleRow).domain)
}

// UpdateSchedule writes sc when the stored revision is still sc.Revision (see store.Store): one
// UPDATE whose WHERE clause is the guard, so of two replicas that read the same revision exactly one
// changes a row.
func (s *Store) UpdateSchedule(ctx context.Context, sc *orchestrator.Schedule) error {
	row := scheduleToRow(sc)
	res, err := s.w.NewUpdate().Model(row).
		Column("parameters", "cron", "timezone", "overlap", "paused", "next_fire_at", "queued",
			"last_fired_at", "last_session_id", "last_error", "updated_at").
		Set("revision = revision + 1").
		Where("id = ?", sc.ID).
		Where("revision = ?", sc.Revision).
		Exec(ctx)
	if err != nil {
		return wrap(err, "schedule", sc.ID)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		if err == nil {
			sc.Revision++
		}
		return wrap(err, "schedule", sc.ID)
	}
	exists, err := s.w.NewSelect().Model((*scheduleRow)(nil)).Where("id = ?", sc.ID).Exists(ctx)
	if err != nil {
		return wrap(err, "schedule", sc.ID)
	}
	if !exists {
		return notFound("schedule", sc.ID)
	}
	return conflict("schedule", sc.ID, "was changed by another writer")
}

// DeleteSchedule deletes the schedule; the sessions it started stay.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	res, err := s.w.NewDelete().Model((*scheduleRow)(nil)).Where("id = ?", id).Exec(ctx)
	return deleted(res, err, "schedule", id)
}
