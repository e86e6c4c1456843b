package gateway_test

import (
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// TestSchedulesReadOnly: an executor reads schedules through the gateway, and cannot change them.
func TestSchedulesReadOnly(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	sched := must[*orchestrator.Schedule](t, "CreateSchedule")(coord.CreateSchedule(ctx, orchestrator.ScheduleParams{
		AgentName: "helper", Parameters: []byte(`{"prompt":"p"}`), Cron: "@hourly", Paused: new(true),
	}))
	a := must[*orchestrator.StartRunResult](t, "StartRun")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a"}))
	gw := gateway.New(coord, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	env, closeA := gw.Open(assignment(a))
	defer closeA()
	cl := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(env[orchestrator.EnvAPIURL], httpapi.ClientConfig{Token: env[orchestrator.EnvAPIToken]}))

	list, err := cl.ListSchedules(ctx, orchestrator.ScheduleFilter{})
	if err != nil || len(list) != 1 || list[0].ID != sched.ID {
		t.Fatalf("ListSchedules through the gateway = %+v, %v; want the schedule", list, err)
	}
	if got, err := cl.GetSchedule(ctx, sched.ID); err != nil || got.Cron != "@hourly" {
		t.Fatalf("GetSchedule through the gateway = %+v, %v", got, err)
	}
	if _, err := cl.UpdateSchedule(ctx, sched.ID, orchestrator.ScheduleParams{Paused: new(false)}); orchestrator.ErrorCode(err) != "forbidden" &&
		orchestrator.ErrorCode(err) != "not_available_through_gateway" {
		t.Errorf("PATCH through the gateway: %v (%s), want it refused", err, orchestrator.ErrorCode(err))
	}
	if err := cl.DeleteSchedule(ctx, sched.ID); err == nil {
		t.Error("DELETE through the gateway succeeded")
	}
	_, err = cl.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "helper", Cron: "@daily"})
	if err == nil {
		t.Error("POST /schedules through the gateway succeeded")
	}
	if still := must[*orchestrator.Schedule](t, "GetSchedule")(coord.GetSchedule(ctx, sched.ID)); !still.Paused {
		t.Errorf("the schedule changed: %+v", still)
	}
}
