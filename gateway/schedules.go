package gateway

import (
	"context"

	"github.com/agentorchestrator/orchestrator"
)

// Schedules are read-only through the gateway, and an agent sees only the schedule that started its own
// tree of runs (the one its tree's root session names): the others are the clients', parameters
// included, and none of the agent's business. Listing selects that schedule, if any (TreeOf, forced to the
// run's session, which the coordinator scopes a second time for the runner's credential); reading another
// schedule's id is 403 schedule_out_of_scope, the same answer as for an id that does not exist.

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

func scheduleOutOfScope(id string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "schedule_out_of_scope",
		"schedule %q is not the one that started this run's tree", id).With("schedule_id", id)
}

func (s *scoped) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	sc, err := s.scheduler(ctx)
	if err != nil {
		return nil, err
	}
	gr, _ := grantFrom(ctx)
	list, err := up(sc.ListSchedules(ctx, orchestrator.ScheduleFilter{TreeOf: gr.sessionID}))
	if err != nil {
		return nil, err
	}
	for _, x := range list {
		if x.ID == id {
			return x, nil
		}
	}
	return nil, scheduleOutOfScope(id)
}

func (s *scoped) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	sc, err := s.scheduler(ctx)
	if err != nil {
		return nil, err
	}
	gr, _ := grantFrom(ctx)
	f.TreeOf = gr.sessionID
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
