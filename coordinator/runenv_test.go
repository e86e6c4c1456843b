package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// A blueprint that allows a forbidden name is refused wherever it enters: a runner's folder, a runner's
// registration, the registry.
func TestForbiddenAllowedEnvRefusedEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name":"a","command":"x","allowed_env":["GREETING","LD_PRELOAD"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrator.LoadBlueprints(dir, orchestrator.AgentTypeDeterministic); err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "LD_PRELOAD may never be set") {
		t.Errorf("LoadBlueprints = %v, want the file and LD_PRELOAD named", err)
	}
	c := newCoordinator(t, coordinator.Config{})
	bad := crawler()
	bad.AllowedEnv = []string{"BASH_ENV"}
	if _, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", Blueprints: []*orchestrator.Blueprint{bad}}); !errors.Is(err, orchestrator.ErrInvalid) || !strings.Contains(err.Error(), "BASH_ENV") {
		t.Errorf("RegisterRunner with allowed_env [BASH_ENV] = %v, want ErrInvalid naming it", err)
	}
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "ai", AllowedEnv: []string{"NODE_OPTIONS"}}); !errors.Is(err, orchestrator.ErrInvalid) || !strings.Contains(err.Error(), "NODE_OPTIONS") {
		t.Errorf("CreateAgent with allowed_env [NODE_OPTIONS] = %v, want ErrInvalid naming it", err)
	}
}

// StartRun refuses a metadata.env the agent does not allow, naming the variables, before it stores
// anything; an allowed one is stored with the run. AI agents and resumes follow the same rule.
func TestStartRunEnvAllowList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	bp := crawler()
	bp.AllowedEnv = []string{"GREETING"}
	register(t, c, "host-a", bp)
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "ai", AllowedEnv: []string{"GREETING"}}); err != nil {
		t.Fatal(err)
	}
	sessions := func() int {
		t.Helper()
		page, err := c.ListSessions(ctx, orchestrator.SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Sessions)
	}
	params := json.RawMessage(`{"url":"https://example.com"}`)
	for _, md := range []struct{ metadata, variable string }{
		{`{"env":{"LD_PRELOAD":"/tmp/x.so"}}`, "LD_PRELOAD"},
		{`{"env":{"BASH_ENV":"/tmp/x"}}`, "BASH_ENV"},
		{`{"env":{"PATH":"/tmp"}}`, "PATH"},
		{`{"env":{"PYTHONWARNINGS":"ignore::x.Y"}}`, "PYTHONWARNINGS"},
		{`{"env":{"UNLISTED":"x"}}`, "UNLISTED"},
		{`{"env":{"GREETING":"hi","BROWSER":"x"}}`, "BROWSER"},
	} {
		for _, agent := range []string{"web-crawler", "ai"} {
			p := orchestrator.StartRunParams{AgentName: agent, Metadata: json.RawMessage(md.metadata)}
			if agent == "ai" {
				p.Prompt = "x"
			} else {
				p.Parameters = params
			}
			_, err := c.StartRun(ctx, p)
			var oe *orchestrator.Error
			if !errors.As(err, &oe) || oe.Code != "env_not_allowed" || !strings.Contains(err.Error(), md.variable) {
				t.Errorf("%s with metadata %s: %v, want env_not_allowed naming %s", agent, md.metadata, err, md.variable)
			}
		}
	}
	if n := sessions(); n != 0 {
		t.Fatalf("%d sessions after refused starts, want none", n)
	}

	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: params,
		Metadata: json.RawMessage(`{"env":{"GREETING":"hi"},"owner":"me"}`)})
	run, err := c.GetRun(ctx, res.RunID)
	if err != nil || !jsonEq(run.Metadata, `{"env":{"GREETING":"hi"},"owner":"me"}`) {
		t.Fatalf("run %+v, %v: want the allowed metadata stored", run, err)
	}

	// Resumes: the request's metadata.env is checked, and so is the session's, which a resume without
	// metadata inherits, against the agent as it is now.
	ai := registerAI(t, c, "host-ai")
	s := start(t, c, orchestrator.StartRunParams{AgentName: "ai", Prompt: "x", Metadata: json.RawMessage(`{"env":{"GREETING":"hi"}}`)})
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: s.RunID, Status: orchestrator.RunCompleted,
		Result: &orchestrator.Result{ResultType: "agent", ResultText: "done"}})
	resume := orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: s.SessionID, Prompt: "more",
		Metadata: json.RawMessage(`{"env":{"NODE_OPTIONS":"--require /tmp/x.js"}}`)}
	if _, err := c.StartRun(ctx, resume); err == nil || !strings.Contains(err.Error(), "NODE_OPTIONS") {
		t.Errorf("resume with NODE_OPTIONS: %v, want it refused", err)
	}
	if _, err := c.UpdateAgent(ctx, "ai", &orchestrator.Blueprint{Name: "ai"}); err != nil {
		t.Fatal(err)
	}
	resume.Metadata = nil
	if _, err := c.StartRun(ctx, resume); err == nil || !strings.Contains(err.Error(), "GREETING") {
		t.Errorf("resume inheriting GREETING after the agent stopped allowing it: %v, want it refused", err)
	}
	if got, _ := c.GetSession(ctx, s.SessionID); got.Status != orchestrator.SessionCompleted || got.CurrentRunID != s.RunID {
		t.Errorf("session after refused resumes: %s, run %s; want it untouched", got.Status, got.CurrentRunID)
	}
}

func jsonEq(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && mustMarshal(a) == mustMarshal(b)
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
