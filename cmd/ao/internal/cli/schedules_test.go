package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

func TestSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "reviewer", Type: orchestrator.AgentTypeAgent, Description: "Reviews code."}); err != nil {
		t.Fatal(err)
	}
	ao := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		app := &App{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv:   func(string) string { return "" },
			Connect:  func(string, string) (orchestrator.Coordinator, error) { return coord, nil },
			Terminal: func(any) bool { return false },
		}
		if code := app.Run(ctx, args); code != want {
			t.Fatalf("ao %s: exit %d, want %d; stdout %q stderr %q", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}

	_, errs := ao(0, "schedules")
	if !strings.Contains(errs, "no schedules") {
		t.Errorf("ao schedules with none: %q", errs)
	}
	ao(2, "schedule", "add", "reviewer") // no --cron: a usage error
	_, errs = ao(1, "schedule", "add", "reviewer", "--cron", "every day")
	if !strings.Contains(errs, "every day") {
		t.Errorf("bad cron: %q", errs)
	}
	out, _ := ao(0, "schedule", "add", "reviewer", "--cron", "0 9 * * 1-5", "--timezone", "Europe/Paris", "--prompt", "review", "--json")
	var s orchestrator.Schedule
	decodeJSONDoc(t, []byte(out), &s)
	var params bytes.Buffer
	_ = json.Compact(&params, s.Parameters)
	if s.ID == "" || s.Cron != "0 9 * * 1-5" || s.Timezone != "Europe/Paris" || params.String() != `{"prompt":"review"}` {
		t.Fatalf("ao schedule add --json = %+v", s)
	}
	out, _ = ao(0, "schedules")
	if !strings.Contains(out, s.ID) || !strings.Contains(out, "0 9 * * 1-5") || !strings.Contains(out, "Europe/Paris") {
		t.Errorf("ao schedules:\n%s", out)
	}
	out, _ = ao(0, "schedule", "pause", s.ID)
	if !strings.Contains(out, "paused schedule "+s.ID) {
		t.Errorf("ao schedule pause: %q", out)
	}
	if out, _ = ao(0, "schedules"); !strings.Contains(out, "paused") {
		t.Errorf("ao schedules after pause:\n%s", out)
	}
	out, _ = ao(0, "schedule", "resume", s.ID)
	if !strings.Contains(out, "resumed schedule "+s.ID) || !strings.Contains(out, "next run") {
		t.Errorf("ao schedule resume: %q", out)
	}
	ao(0, "schedule", "rm", s.ID)
	_, errs = ao(1, "schedule", "rm", s.ID)
	if !strings.Contains(errs, "not found") {
		t.Errorf("removing it again: %q", errs)
	}
}
