package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

func TestCheckRunEnv(t *testing.T) {
	t.Parallel()
	b := &orchestrator.Blueprint{Name: "a", AllowedEnv: []string{"GREETING", "LEVEL"}}
	for _, tc := range []struct {
		env     map[string]string
		refused []string // nil: accepted
		want    string   // in the message
	}{
		{env: nil},
		{env: map[string]string{"GREETING": "hi", "LEVEL": "2"}},
		{env: map[string]string{"OTHER": "x"}, refused: []string{"OTHER"}, want: `OTHER is not in agent "a"'s allowed_env, which allows only GREETING, LEVEL`},
		{env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}, refused: []string{"LD_PRELOAD"}, want: "LD_PRELOAD may not be set by a run: it makes the dynamic loader load other code"},
		{env: map[string]string{"ld_preload": "/tmp/x.so", "GREETING": "hi"}, refused: []string{"ld_preload"}, want: "ld_preload may not be set"},
		{env: map[string]string{"BASH_ENV": "x", "PATH": "/tmp", "PYTHONWARNINGS": "x", "GREETING": "hi"},
			refused: []string{"BASH_ENV", "PATH", "PYTHONWARNINGS"}, want: "BASH_ENV may not be set by a run: it makes a shell run code"},
	} {
		err := b.CheckRunEnv(tc.env)
		if tc.refused == nil {
			if err != nil {
				t.Errorf("CheckRunEnv(%v) = %v, want nil", tc.env, err)
			}
			continue
		}
		var oe *orchestrator.Error
		if !errors.As(err, &oe) || !errors.Is(err, orchestrator.ErrInvalid) || oe.Code != "env_not_allowed" {
			t.Errorf("CheckRunEnv(%v) = %v, want an env_not_allowed ErrInvalid", tc.env, err)
			continue
		}
		if got, _ := oe.Details["variables"].([]string); !slices.Equal(got, tc.refused) {
			t.Errorf("CheckRunEnv(%v): variables %v, want %v", tc.env, oe.Details["variables"], tc.refused)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckRunEnv(%v) = %q, want it to say %q", tc.env, err, tc.want)
		}
	}
	none := &orchestrator.Blueprint{Name: "b"}
	if err := none.CheckRunEnv(map[string]string{"X": "1"}); err == nil || !strings.Contains(err.Error(), "allows none") {
		t.Errorf("a blueprint without allowed_env: %v, want X refused, saying it allows none", err)
	}
}

// Every name the README lists as forbidden is refused in allowed_env, whatever its case.
func TestForbiddenEnvNames(t *testing.T) {
	t.Parallel()
	for _, n := range []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GCONV_PATH", "GLIBC_TUNABLES", "MALLOC_CHECK_",
		"OPENSSL_CONF", "PATH", "SHELL", "BROWSER", "EDITOR", "PAGER", "LESSOPEN", "SSH_ASKPASS",
		"ENV", "BASH_ENV", "BASHOPTS", "SHELLOPTS", "IFS", "PS4", "PROMPT_COMMAND", "ZDOTDIR", "BASH_FUNC_ls",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONHOME", "NODE_OPTIONS", "NODE_PATH", "npm_config_script_shell",
		"PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "GEM_PATH", "BUNDLE_GEMFILE", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
		"JDK_JAVA_OPTIONS", "CLASSPATH", "LUA_INIT", "LUA_PATH", "TCLLIBPATH", "PHPRC", "DOTNET_STARTUP_HOOKS",
		"CORECLR_PROFILER_PATH", "GOFLAGS", "GOTOOLCHAIN", "CGO_LDFLAGS", "MAKEFLAGS", "CC",
		"GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH", "GIT_ASKPASS", "HOME", "XDG_CONFIG_HOME",
		"AGENT_SESSION_ID", "AGENT_ORCHESTRATOR_API_URL", "AGENT_ORCHESTRATOR_TOKEN", "AGENT_RESULT_FILE",
		"ORCHESTRATOR_RUNNER_TOKEN", "path", "Ld_Preload",
	} {
		b := &orchestrator.Blueprint{Name: "a", Type: orchestrator.AgentTypeDeterministic, Command: "x", AllowedEnv: []string{n}}
		err := b.Validate()
		if err == nil || !errors.Is(err, orchestrator.ErrInvalid) || !strings.Contains(err.Error(), "allowed_env: "+n+" may never be set by a run") {
			t.Errorf("allowed_env [%s]: Validate = %v, want it refused", n, err)
		}
	}
	for _, n := range []string{"GREETING", "LOG_LEVEL", "TZ", "LANG", "_X", "DEBUG", "OUTPUT_FORMAT"} {
		b := &orchestrator.Blueprint{Name: "a", Type: orchestrator.AgentTypeDeterministic, Command: "x", AllowedEnv: []string{n}}
		if err := b.Validate(); err != nil {
			t.Errorf("allowed_env [%s]: Validate = %v, want nil", n, err)
		}
	}
	for _, n := range []string{"", "1X", "A-B", "A=B", "BASH_FUNC_ls%%", "X Y", strings.Repeat("A", 129)} {
		b := &orchestrator.Blueprint{Name: "a", Type: orchestrator.AgentTypeDeterministic, Command: "x", AllowedEnv: []string{n}}
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "is not a variable name") {
			t.Errorf("allowed_env [%q]: Validate = %v, want it refused as not a name", n, err)
		}
	}
}

// A blueprint that allows a forbidden name is refused wherever it enters: a runner's folder, a runner's
// registration, the registry.
func TestForbiddenAllowedEnvRefusedEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name":"a","command":"x","allowed_env":["GREETING","LD_PRELOAD"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrator.LoadBlueprints(dir); err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "LD_PRELOAD may never be set") {
		t.Errorf("LoadBlueprints = %v, want the file and LD_PRELOAD named", err)
	}
	c := newCoordinator(t, orchestrator.CoordinatorConfig{})
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
	c := newCoordinator(t, orchestrator.CoordinatorConfig{})
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

// envSpoofer hands the runner its work with a metadata.env the blueprint does not allow, as a coordinator
// that does not check (or was bypassed) would.
type envSpoofer struct{ *orchestrator.LocalCoordinator }

func (s envSpoofer) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	w, err := s.LocalCoordinator.PollWork(ctx, p)
	if w != nil {
		for _, a := range w.Runs {
			a.Run.Metadata = json.RawMessage(`{"env":{"LD_PRELOAD":"/tmp/evil.so"}}`)
		}
	}
	return w, err
}

// The runner checks a run's environment again against its own blueprint: the executor never sees a run
// that breaks the rule, and the run fails saying why.
func TestRunnerRefusesEnvItsBlueprintDoesNotAllow(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, orchestrator.CoordinatorConfig{})
	ex := &echoExecutor{}
	startRunner(t, envSpoofer{c}, ex, 1)
	res, err := c.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "echo", Mode: orchestrator.ModeSync,
		Parameters: json.RawMessage(`{"n":1}`), Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != orchestrator.SessionFailed || !strings.Contains(res.Error, "LD_PRELOAD may not be set") {
		t.Fatalf("run = %s %q, want failed naming LD_PRELOAD", res.Status, res.Error)
	}
	if p := ex.peak.Load(); p != 0 {
		t.Errorf("the executor ran %d time(s), want never", p)
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
