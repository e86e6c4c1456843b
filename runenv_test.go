package orchestrator_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

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

// Every name docs/safety.md lists as forbidden is refused in allowed_env, whatever its case.
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
