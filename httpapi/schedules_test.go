package httpapi

import (
	"errors"
	"net/http"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

func TestSchedulesAPI(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	admin, client := env.client(t, adminTok), env.client(t, clientTok)
	if _, err := admin.CreateAgent(ctxT(t), &orchestrator.Blueprint{
		Name: "crawler", Type: orchestrator.AgentTypeAgent, Description: "crawls", SystemPrompt: "crawl",
		ParametersSchema: []byte(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
	}); err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}

	s, err := client.CreateSchedule(ctxT(t), orchestrator.ScheduleParams{
		AgentName: "crawler", Parameters: []byte(`{"url":"https://example.com"}`), Cron: "0 * * * *", Timezone: "Europe/Paris",
	})
	if err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	if s.Overlap != orchestrator.OverlapSkip || s.Paused || s.NextFireAt.IsZero() || s.Timezone != "Europe/Paris" {
		t.Fatalf("created schedule = %+v, want overlap skip, active, with a next tick", s)
	}
	got, err := client.GetSchedule(ctxT(t), s.ID)
	if err != nil || got.ID != s.ID || got.Cron != "0 * * * *" {
		t.Fatalf("GetSchedule = %+v, %v", got, err)
	}
	paused, err := client.UpdateSchedule(ctxT(t), s.ID, orchestrator.ScheduleParams{Paused: new(true)})
	if err != nil || !paused.Paused {
		t.Fatalf("pause = %+v, %v", paused, err)
	}
	list, err := client.ListSchedules(ctxT(t), orchestrator.ScheduleFilter{AgentName: "crawler"})
	if err != nil || len(list) != 1 || !list[0].Paused {
		t.Fatalf("ListSchedules = %+v, %v; want the paused schedule", list, err)
	}

	// Bad input: a machine code, a 4xx, and nothing changes.
	for _, tc := range []struct {
		name   string
		body   string
		code   string
		status int
	}{
		{"no agent", `{"cron":"@hourly"}`, "invalid_request", 0},
		{"unknown agent", `{"agent_name":"nope","cron":"@hourly"}`, "agent_not_found", http.StatusNotFound},
		{"bad parameters", `{"agent_name":"crawler","cron":"@hourly","parameters":{"url":3}}`, "parameter_validation_failed", 0},
		{"bad cron", `{"agent_name":"crawler","cron":"every hour","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"never fires", `{"agent_name":"crawler","cron":"0 0 30 2 *","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"zone prefix", `{"agent_name":"crawler","cron":"CRON_TZ=UTC 0 * * * *","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"bad zone", `{"agent_name":"crawler","cron":"@hourly","timezone":"Mars/Olympus","parameters":{"url":"u"}}`, "invalid_timezone", 0},
		{"bad overlap", `{"agent_name":"crawler","cron":"@hourly","overlap":"later","parameters":{"url":"u"}}`, "invalid_overlap", 0},
		{"misspelt field", `{"agent_name":"crawler","cron":"@hourly","overlapp":"allow","parameters":{"url":"u"}}`, "invalid_body", 0},
		{"every 0s", `{"agent_name":"crawler","cron":"@every 0s","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"every -1s", `{"agent_name":"crawler","cron":"@every -1s","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"every 1ns", `{"agent_name":"crawler","cron":"@every 1ns","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"every 999ms", `{"agent_name":"crawler","cron":"@every 999ms","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"every 1500ms", `{"agent_name":"crawler","cron":"@every 1500ms","parameters":{"url":"u"}}`, "invalid_cron", 0},
		{"every nothing", `{"agent_name":"crawler","cron":"@every","parameters":{"url":"u"}}`, "invalid_cron", 0},
	} {
		if tc.status == 0 {
			tc.status = http.StatusBadRequest
		}
		rec := serve(env.handler, "POST", "/schedules", clientTok, []byte(tc.body))
		if code := errorBody(t, rec, tc.status)["error"]; code != tc.code {
			t.Errorf("%s: error %v, want %s", tc.name, code, tc.code)
		}
	}
	rec := serve(env.handler, "PATCH", "/schedules/"+s.ID, clientTok, []byte(`{"agent_name":"other"}`))
	errorBody(t, rec, http.StatusBadRequest)
	rec = serve(env.handler, "PATCH", "/schedules/"+s.ID, clientTok, []byte(`{"cron":"61 * * * *"}`))
	if code := errorBody(t, rec, http.StatusBadRequest)["error"]; code != "invalid_cron" {
		t.Errorf("PATCH bad cron: %v", code)
	}
	if list, _ := client.ListSchedules(ctxT(t), orchestrator.ScheduleFilter{}); len(list) != 1 || list[0].Cron != "0 * * * *" {
		t.Fatalf("after refused requests: %+v, want the one schedule unchanged", list)
	}

	// A registered runner's credential (agents, through the gateway) reads only the schedules of its runs'
	// trees (TestRunnerReadsOnlyItsTreesSchedule), and changes none.
	_, reg := env.runnerClient(t, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/p", ExecutorType: "deterministic"})
	if code := errorBody(t, serve(env.handler, "GET", "/schedules", credential(reg), nil), http.StatusForbidden)["error"]; code != "tree_of_required" {
		t.Errorf("runner GET /schedules without tree_of: %v, want tree_of_required", code)
	}
	if code := errorBody(t, serve(env.handler, "GET", "/schedules/"+s.ID, credential(reg), nil), http.StatusNotFound)["error"]; code != "schedule_not_found" {
		t.Errorf("runner GET /schedules/{id} of another tree's schedule: %v, want schedule_not_found", code)
	}
	errorBody(t, serve(env.handler, "DELETE", "/schedules/"+s.ID, credential(reg), nil), http.StatusForbidden)

	if err := client.DeleteSchedule(ctxT(t), s.ID); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	if _, err := client.GetSchedule(ctxT(t), s.ID); !errors.Is(err, orchestrator.ErrNotFound) || orchestrator.ErrorCode(err) != "schedule_not_found" {
		t.Fatalf("GetSchedule after delete: %v (%s), want schedule_not_found", err, orchestrator.ErrorCode(err))
	}
}
