package sqlstore

import (
	"context"

	"github.com/agentorchestrator/orchestrator/store"
)

// CreateAgent inserts the agent; a taken name is ErrConflict.
func (s *Store) CreateAgent(ctx context.Context, a *store.Agent) error {
	row, err := agentToRow(a)
	if err != nil {
		return err
	}
	return wrap(s.insert(ctx, row), "agent", a.Name)
}

// GetAgent returns the agent registered under name.
func (s *Store) GetAgent(ctx context.Context, name string) (*store.Agent, error) {
	var row agentRow
	if err := s.getRow(ctx, &row, "name", name); err != nil {
		return nil, wrap(err, "agent", name)
	}
	return row.domain()
}

// ListAgents returns the agents f selects, ordered by name.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter) ([]*store.Agent, error) {
	var rows []agentRow
	q := s.r.NewSelect().Model(&rows).OrderExpr("name")
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if f.RunnerID != "" {
		q = q.Where("runner_id = ?", f.RunnerID)
	}
	for _, t := range f.Tags {
		if s.pg {
			q = q.Where("strpos(tags, ?) > 0", ","+t+",")
		} else {
			q = q.Where("instr(tags, ?) > 0", ","+t+",")
		}
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "agents", "")
	}
	return domains(rows, (*agentRow).domain)
}

// UpdateAgent replaces the blueprint (with the type and tags derived from it) and UpdatedAt.
func (s *Store) UpdateAgent(ctx context.Context, a *store.Agent) error {
	row, err := agentToRow(a)
	if err != nil {
		return err
	}
	res, err := s.w.NewUpdate().Model(row).Column("type", "tags", "blueprint", "updated_at").WherePK().Exec(ctx)
	if err != nil {
		return wrap(err, "agent", a.Name)
	}
	if n, err := res.RowsAffected(); err != nil {
		return wrap(err, "agent", a.Name)
	} else if n == 0 {
		return notFound("agent", a.Name)
	}
	return nil
}

// DeleteAgent deletes the agent registered under name.
func (s *Store) DeleteAgent(ctx context.Context, name string) error {
	res, err := s.w.NewDelete().Model((*agentRow)(nil)).Where("name = ?", name).Exec(ctx)
	return deleted(res, err, "agent", name)
}

// DeleteRunnerAgents deletes the runner's agents and returns how many there were.
func (s *Store) DeleteRunnerAgents(ctx context.Context, runnerID string) (int, error) {
	if runnerID == "" {
		return 0, nil // registry agents have no owner; never delete them through this call
	}
	res, err := s.w.NewDelete().Model((*agentRow)(nil)).Where("runner_id = ?", runnerID).Exec(ctx)
	if err != nil {
		return 0, wrap(err, "runner agents", runnerID)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
