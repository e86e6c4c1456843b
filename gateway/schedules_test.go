package gateway_test

import (
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// TestSchedulesReadOnly: an executor reads, through the gateway, the schedule that started its run's tree
// and no other schedule, and cannot change any.
func TestSchedulesReadOnly(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t)
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(coord.CreateAgent(ctx, helper()))
	sched := must[*orchestrator.Schedule](t, "CreateSchedule")(coord.CreateSchedule(ctx, orchestrator.ScheduleParams{
		AgentName: "helper", Parameters: []byte(`{"prompt":"p"}`), Cron: "@hourly", Paused: new(true),
	}))
	others := must[*orchestrator.Schedule](t, "CreateSchedule")(coord.CreateSchedule(ctx, orchestrator.ScheduleParams{
		AgentName: "helper", Parameters: []byte(`{"prompt":"another client's secret"}`), Cron: "@daily", Paused: new(true),
	}))
	// A run as the schedule's firing starts it: its metadata names the schedule.
	a := must[*orchestrator.StartRunResult](t, "StartRun")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "a",
		Metadata: []byte(`{"schedule_id":"` + sched.ID + `"}`)}))
	plain := must[*orchestrator.StartRunResult](t, "StartRun")(coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "b"}))
	gw := gateway.New(coord, gateway.Config{})
	t.Cleanup(func() { gw.Close() })
	env, closeA := gw.Open(assignment(a))
	defer closeA()
	cl := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(env[orchestrator.EnvAPIURL], httpapi.ClientConfig{Token: env[orchestrator.EnvAPIToken]}))
	envPlain, closePlain := gw.Open(assignment(plain))
	defer closePlain()
	clPlain := must[*httpapi.Client](t, "NewClient")(httpapi.NewClient(envPlain[orchestrator.EnvAPIURL], httpapi.ClientConfig{Token: envPlain[orchestrator.EnvAPIToken]}))

	list, err := cl.ListSchedules(ctx, orchestrator.ScheduleFilter{})
	if err != nil || len(list) != 1 || list[0].ID != sched.ID {
		t.Fatalf("ListSchedules through the gateway = %+v, %v; want only its tree's schedule", list, err)
	}
	// Naming another tree does not widen the scope: the run's own tree is listed.
	if list, err := cl.ListSchedules(ctx, orchestrator.ScheduleFilter{TreeOf: plain.SessionID}); err != nil || len(list) != 1 || list[0].ID != sched.ID {
		t.Fatalf("ListSchedules naming another tree = %+v, %v; want only its own tree's schedule", list, err)
	}
	if got, err := cl.GetSchedule(ctx, sched.ID); err != nil || got.Cron != "@hourly" {
		t.Fatalf("GetSchedule through the gateway = %+v, %v", got, err)
	}
	for _, id := range []string{others.ID, "sch_nope"} {
		if _, err := cl.GetSchedule(ctx, id); orchestrator.ErrorCode(err) != "schedule_out_of_scope" {
			t.Errorf("GetSchedule(%s) through the gateway: %v (%s), want schedule_out_of_scope", id, err, orchestrator.ErrorCode(err))
		}
	}
	if list, err := clPlain.ListSchedules(ctx, orchestrator.ScheduleFilter{}); err != nil || len(list) != 0 {
		t.Errorf("ListSchedules from a tree no schedule started = %+v, %v; want none", list, err)
	}
	if _, err := clPlain.GetSchedule(ctx, sched.ID); orchestrator.ErrorCode(err) != "schedule_out_of_scope" {
		t.Errorf("GetSchedule of another tree's schedule: %v, want schedule_out_of_scope", err)
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
