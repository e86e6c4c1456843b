package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestRunnerReadsOnlyItsTreesSchedule: with a runner's credential (what its gateway forwards for its
// agents), GET /schedules?tree_of= lists the schedule that started the tree of a run it holds, and nothing
// for a tree no schedule started or for a session outside its scope; GET /schedules/{id} answers the
// schedule whose latest session it holds, and another client's schedule as one that does not exist.
func TestRunnerReadsOnlyItsTreesSchedule(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Minute)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := newEnv(t, Config{}, coordinator.Config{Now: clock})
	client := env.client(t, clientTok)
	rc, reg := env.runnerClient(t, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/p", ExecutorType: "deterministic",
		Blueprints: []*orchestrator.Blueprint{taskBlueprint()}})
	other, err := client.CreateSchedule(ctxT(t), orchestrator.ScheduleParams{AgentName: "task", Cron: "@daily"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := client.CreateSchedule(ctxT(t), orchestrator.ScheduleParams{AgentName: "task", Cron: "@every 1m", Parameters: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if err := env.coord.FireSchedules(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	fired, err := client.GetSchedule(ctxT(t), mine.ID)
	if err != nil || fired.LastSessionID == "" {
		t.Fatalf("the schedule after its tick: %+v, %v; want a last session", fired, err)
	}
	unscheduled, err := client.StartRun(ctxT(t), orchestrator.StartRunParams{AgentName: "task"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := rc.PollWork(ctxT(t), orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 2})
	if err != nil || len(w.Runs) != 2 {
		t.Fatalf("poll = %+v, %v; want both runs", w, err)
	}

	list := func(treeOf string) []*orchestrator.Schedule {
		t.Helper()
		rec := serve(env.handler, "GET", "/schedules?tree_of="+treeOf, credential(reg), nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("runner GET /schedules?tree_of=%s: %d %s", treeOf, rec.Code, rec.Body)
		}
		var out scheduleList
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out.Schedules
	}
	if got := list(fired.LastSessionID); len(got) != 1 || got[0].ID != mine.ID {
		t.Errorf("the fired run's tree lists %+v, want only %s", got, mine.ID)
	}
	if got := list(unscheduled.SessionID); len(got) != 0 {
		t.Errorf("a tree no schedule started lists %+v, want none", got)
	}
	rec := serve(env.handler, "GET", "/schedules/"+mine.ID, credential(reg), nil)
	if rec.Code != http.StatusOK {
		t.Errorf("runner GET /schedules/{its tree's schedule}: %d %s", rec.Code, rec.Body)
	}
	for _, id := range []string{other.ID, "sch_nope"} {
		if code := errorBody(t, serve(env.handler, "GET", "/schedules/"+id, credential(reg), nil), http.StatusNotFound)["error"]; code != "schedule_not_found" {
			t.Errorf("runner GET /schedules/%s: %v, want schedule_not_found", id, code)
		}
	}

	// Another runner holds none of these trees.
	_, stranger := env.runnerClient(t, &orchestrator.RunnerRegistration{Hostname: "h2", ProjectDir: "/p", ExecutorType: "deterministic"})
	if code := errorBody(t, serve(env.handler, "GET", "/schedules?tree_of="+fired.LastSessionID, credential(stranger), nil), http.StatusNotFound)["error"]; code != "session_not_found" {
		t.Errorf("another runner listing the tree's schedule: %v, want session_not_found", code)
	}
	if code := errorBody(t, serve(env.handler, "GET", "/schedules/"+mine.ID, credential(stranger), nil), http.StatusNotFound)["error"]; code != "schedule_not_found" {
		t.Errorf("another runner reading the schedule: %v, want schedule_not_found", code)
	}
	// A client lists them all, and may ask for a tree's schedule too.
	if all, err := client.ListSchedules(ctxT(t), orchestrator.ScheduleFilter{}); err != nil || len(all) != 2 {
		t.Errorf("a client's list: %d schedules, %v; want 2", len(all), err)
	}
	if got, err := client.ListSchedules(ctxT(t), orchestrator.ScheduleFilter{TreeOf: fired.LastSessionID}); err != nil || len(got) != 1 || got[0].ID != mine.ID {
		t.Errorf("a client's tree_of list: %+v, %v", got, err)
	}
}
