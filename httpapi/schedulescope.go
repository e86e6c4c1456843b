package httpapi

import (
	"context"
	"errors"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// runnerSchedules is what a runner's own credential reaches of the schedules: schedules are the clients'
// (their parameters included), and a runner reads them only for what its gateway forwards for the agents
// of its runs. An agent may see the schedule that started its own tree of runs, and no other:
//
//   - GET /schedules must name tree_of, a session in the runner's scope (see runnerScoped), and lists at
//     most the schedule that started that session's tree; without tree_of it is 403;
//   - GET /schedules/{id} answers a schedule whose latest session is in the runner's scope, and any other
//     id — another tree's schedule, or one that does not exist — alike, 404 schedule_not_found.
//
// Creating, changing and deleting schedules are for clients only (the route table).
type runnerSchedules struct {
	orchestrator.Scheduler
	scope  *runnerScoped
	runner string
}

func scheduleNotFound(id string) error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, "schedule_not_found", "schedule %q not found", id)
}

func (s *runnerSchedules) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	if f.TreeOf == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "tree_of_required",
			"a runner's credential lists only the schedule that started one of its runs' trees: tree_of (a session of that tree) is required")
	}
	if err := s.scope.inScope(ctx, s.runner, f.TreeOf); err != nil {
		return nil, err
	}
	return s.Scheduler.ListSchedules(ctx, f)
}

func (s *runnerSchedules) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	sc, err := s.Scheduler.GetSchedule(ctx, id)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, scheduleNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	if sc.LastSessionID == "" {
		return nil, scheduleNotFound(id)
	}
	if err := s.scope.inScope(ctx, s.runner, sc.LastSessionID); err != nil {
		if errors.Is(err, orchestrator.ErrNotFound) {
			return nil, scheduleNotFound(id)
		}
		return nil, err
	}
	return sc, nil
}
