package gateway

import (
	"context"

	"github.com/agentorchestrator/orchestrator"
)

// Schedules are read-only through the gateway: an agent may see what recurs, not change it.

var _ orchestrator.Scheduler = (*scoped)(nil)

// scheduler is the runner's Coordinator as a Scheduler, when it is one.
func (s *scoped) scheduler(ctx context.Context) (orchestrator.Scheduler, error) {
	if _, err := grantFrom(ctx); err != nil {
		return nil, err
	}
	sc, ok := s.inner.(orchestrator.Scheduler)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "schedules_unavailable", "this coordinator keeps no schedules")
	}
	return sc, nil
}

func (s *scoped) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	sc, err := s.scheduler(ctx)
	if err != nil {
		return nil, err
	}
	return up(sc.GetSchedule(ctx, id))
}

func (s *scoped) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	sc, err := s.scheduler(ctx)
	if err != nil {
		return nil, err
	}
	return up(sc.ListSchedules(ctx, f))
}

func (s *scoped) CreateSchedule(context.Context, orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	return nil, unavailable("creating schedules")
}

func (s *scoped) UpdateSchedule(context.Context, string, orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	return nil, unavailable("changing schedules")
}

func (s *scoped) DeleteSchedule(context.Context, string) error {
	return unavailable("deleting schedules")
}
