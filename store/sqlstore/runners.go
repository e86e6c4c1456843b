package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// PutRunner inserts the runner or replaces the record with the same ID.
func (s *Store) PutRunner(ctx context.Context, r *orchestrator.RunnerInfo) error {
	row, err := runnerToRow(r)
	if err != nil {
		return err
	}
	q := s.w.NewInsert().Model(row).On("CONFLICT (id) DO UPDATE")
	for _, c := range []string{"hostname", "project_dir", "executor_type", "executor_profile", "executor", "tags",
		"require_matching_tags", "max_concurrent", "accepts_agents", "status", "registered_at", "last_heartbeat_at"} {
		q = q.Set("? = EXCLUDED.?", bun.Ident(c), bun.Ident(c))
	}
	_, err = q.Exec(ctx)
	return wrap(err, "runner", r.ID)
}

// GetRunner returns the runner with the id.
func (s *Store) GetRunner(ctx context.Context, id string) (*orchestrator.RunnerInfo, error) {
	var row runnerRow
	if err := s.getRow(ctx, &row, "id", id); err != nil {
		return nil, wrap(err, "runner", id)
	}
	return row.domain()
}

// ListRunners returns the runners f selects, oldest registration first.
func (s *Store) ListRunners(ctx context.Context, f store.RunnerFilter) ([]*orchestrator.RunnerInfo, error) {
	var rows []runnerRow
	q := s.r.NewSelect().Model(&rows).OrderExpr("registered_at, id")
	if len(f.Statuses) > 0 {
		q = q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if !f.HeartbeatBefore.IsZero() {
		q = q.Where("last_heartbeat_at < ?", utc(f.HeartbeatBefore))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "runners", "")
	}
	return domains(rows, (*runnerRow).domain)
}

// TouchRunner records a heartbeat; a stale runner becomes online. Unknown or offline runners are
// ErrNotFound.
func (s *Store) TouchRunner(ctx context.Context, id string, at time.Time) (*orchestrator.RunnerInfo, error) {
	var row runnerRow
	err := s.w.NewUpdate().Model(&row).
		Set("last_heartbeat_at = ?", utc(at)).
		Set("status = ?", orchestrator.RunnerOnline).
		Where("id = ?", id).
		Where("status IN (?)", bun.List([]orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale})).
		Returning("*").Scan(ctx)
	if err != nil {
		return nil, wrap(err, "runner", id)
	}
	return row.domain()
}

// UpdateRunnerStatus moves the runner to status to when its status is one of from (any, when from is
// empty) and, when heartbeatBefore is set, its last heartbeat is older than heartbeatBefore.
func (s *Store) UpdateRunnerStatus(ctx context.Context, id string, from []orchestrator.RunnerStatus, to orchestrator.RunnerStatus, heartbeatBefore time.Time) (*orchestrator.RunnerInfo, error) {
	var row runnerRow
	q := s.w.NewUpdate().Model(&row).Set("status = ?", to).Where("id = ?", id)
	if len(from) > 0 {
		q = q.Where("status IN (?)", bun.List(from))
	}
	if !heartbeatBefore.IsZero() {
		q = q.Where("last_heartbeat_at < ?", utc(heartbeatBefore))
	}
	err := q.Returning("*").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetRunner(ctx, id); err != nil {
			return nil, err
		}
		return nil, conflict("runner", id, "is not in an expected state")
	}
	if err != nil {
		return nil, wrap(err, "runner", id)
	}
	return row.domain()
}

// DeleteRunner deletes the runner record (not its agents: see DeleteRunnerAgents).
func (s *Store) DeleteRunner(ctx context.Context, id string) error {
	res, err := s.w.NewDelete().Model((*runnerRow)(nil)).Where("id = ?", id).Exec(ctx)
	return deleted(res, err, "runner", id)
}

// SetRunnerSecretHash stores the hash of the runner's secret, hex-encoded in runners.secret_hash (the
// runner rows the other methods read do not include it); an empty hash clears it.
func (s *Store) SetRunnerSecretHash(ctx context.Context, id string, hash []byte) error {
	if strings.IndexByte(id, 0) >= 0 {
		return notFound("runner", id) // no id holds a NUL byte, and neither dialect takes one in a literal
	}
	res, err := s.w.NewUpdate().Model((*runnerRow)(nil)).
		Set("secret_hash = ?", hex.EncodeToString(hash)).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return wrap(err, "runner", id)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(err, "runner", id)
	}
	if n == 0 {
		return notFound("runner", id)
	}
	return nil
}

// GetRunnerSecretHash returns the hash SetRunnerSecretHash stored, empty when there is none.
func (s *Store) GetRunnerSecretHash(ctx context.Context, id string) ([]byte, error) {
	if strings.IndexByte(id, 0) >= 0 {
		return nil, notFound("runner", id)
	}
	var enc string
	err := s.r.NewSelect().Model((*runnerRow)(nil)).Column("secret_hash").Where("id = ?", id).Scan(ctx, &enc)
	if err != nil {
		return nil, wrap(err, "runner", id)
	}
	hash, err := hex.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("runner %q: secret hash: %w", id, err)
	}
	return hash, nil
}

// deleted maps a DELETE's outcome: no row is ErrNotFound.
func deleted(res sql.Result, err error, what, id string) error {
	if err != nil {
		return wrap(err, what, id)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(err, what, id)
	}
	if n == 0 {
		return notFound(what, id)
	}
	return nil
}
