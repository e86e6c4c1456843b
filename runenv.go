package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A run's metadata.env becomes environment variables of the program it runs. An environment variable can
// do much more than pass a value: LD_PRELOAD loads a library into the program, BASH_ENV makes every bash
// script run a file first, PYTHONWARNINGS imports a module, GIT_CONFIG_* sets any git option. A caller who
// may start runs must not thereby run code of its choosing on a runner's host, so a run may set only the
// variables its agent's blueprint lists in allowed_env, and no blueprint may list one of the names below.
//
// The names below are those that change which code a program (or the loader, a shell, an interpreter or a
// common tool it starts) runs. The list cannot be complete — any program may read any variable — which
// is why the allow-list, not this list, is the rule: it keeps a blueprint from handing callers a name
// that is dangerous whatever program reads it.

// envNamePattern is a portable variable name: what shells can export and what allowed_env may list.
// Names outside it (BASH_FUNC_ls%%, which bash imports as a function) cannot be listed, hence never set.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// forbiddenEnvNames are refused whatever their case, with the reason given.
var forbiddenEnvNames = map[string]string{}

// forbiddenEnvPrefixes are refused whatever their case, with the reason given.
var forbiddenEnvPrefixes = map[string]string{}

func init() {
	rules := []struct {
		why      string
		names    []string
		prefixes []string
	}{
		{
			why:      "it makes the dynamic loader load other code",
			names:    []string{"GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES"},
			prefixes: []string{"LD_", "DYLD_", "MALLOC_"},
		},
		{
			why:   "it chooses which programs run",
			names: []string{"PATH", "SHELL", "BROWSER", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "SUDO_ASKPASS", "CC", "CXX", "CPP", "LD", "AR"},
		},
		{
			why: "it makes a shell run code when it starts",
			names: []string{"ENV", "BASH_ENV", "BASHOPTS", "SHELLOPTS", "IFS", "CDPATH", "FPATH", "ZDOTDIR",
				"PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "INPUTRC"},
			prefixes: []string{"BASH_FUNC_"},
		},
		{
			why: "it makes an interpreter or a build tool load other code",
			names: []string{"CLASSPATH", "TCLLIBPATH", "TCL_LIBRARY", "TK_LIBRARY", "PHPRC", "PHP_INI_SCAN_DIR",
				"GOFLAGS", "GOENV", "GOTOOLCHAIN", "GOROOT", "GOPATH", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOSUMCHECK",
				"GOINSECURE", "GOPRIVATE", "GONOPROXY", "GOWORK", "GOBIN", "MAKEFLAGS", "MFLAGS", "MAKEFILES",
				"EMACSLOADPATH", "VIMINIT", "EXINIT", "MYVIMRC", "VIMRUNTIME"},
			prefixes: []string{"PYTHON", "PERL", "RUBY", "GEM_", "BUNDLE_", "NODE_", "NPM_CONFIG_", "JAVA_", "_JAVA_",
				"JDK_JAVA_", "LUA_", "JULIA_", "ERL_", "DOTNET_", "CORECLR_", "COMPLUS_", "CGO_", "R_PROFILE", "R_ENVIRON", "R_LIBS"},
		},
		{
			why:      "it makes programs read their configuration, and the commands it names, from elsewhere",
			names:    []string{"HOME"},
			prefixes: []string{"GIT_", "XDG_"},
		},
		{
			why:   "the runner sets it",
			names: []string{EnvSessionID, EnvRunID, EnvAPIURL, EnvAPIToken, "AGENT_RESULT_FILE"},
		},
		{
			why:      "it names the orchestrator's own credentials",
			prefixes: []string{"ORCHESTRATOR_"},
		},
	}
	for _, r := range rules {
		for _, n := range r.names {
			forbiddenEnvNames[n] = r.why
		}
		for _, p := range r.prefixes {
			forbiddenEnvPrefixes[p] = r.why
		}
	}
}

// forbiddenEnv says why no run may set name, or "" when a blueprint may allow it. Names are compared
// without regard to case: lower-case spellings are read by some programs (npm_config_*), and by every
// program on systems whose environment ignores case.
func forbiddenEnv(name string) string {
	up := strings.ToUpper(name)
	if why, ok := forbiddenEnvNames[up]; ok {
		return why
	}
	for p, why := range forbiddenEnvPrefixes {
		if strings.HasPrefix(up, p) {
			return why
		}
	}
	return ""
}

// validateAllowedEnv checks a blueprint's allowed_env: portable names, none forbidden.
func validateAllowedEnv(names []string) error {
	for _, n := range names {
		if !envNamePattern.MatchString(n) {
			return fmt.Errorf("allowed_env: %q is not a variable name (letters, digits and '_', not starting with a digit, at most 128)", n)
		}
		if why := forbiddenEnv(n); why != "" {
			return fmt.Errorf("allowed_env: %s may never be set by a run: %s", n, why)
		}
	}
	return nil
}

// CheckRunEnv checks the variables a run's metadata.env sets (env) against the blueprint: each must be
// listed in AllowedEnv, and none may be a name that changes which code programs run (LD_*, BASH_ENV,
// PATH, PYTHON*, …; see docs/safety.md), whatever AllowedEnv says. The error, an [ErrInvalid] with code
// "env_not_allowed", names every variable refused (detail "variables"). The coordinator checks every run
// it accepts, start or resume; the runner checks again before it executes one, against the blueprint it
// executes (its own copy, for a deterministic agent), and so does the deterministic executor.
func (b *Blueprint) CheckRunEnv(env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	var (
		problems []string
		refused  []string
	)
	for _, n := range names {
		switch why := forbiddenEnv(n); {
		case why != "":
			problems = append(problems, fmt.Sprintf("%s may not be set by a run: %s", n, why))
		case !slices.Contains(b.AllowedEnv, n):
			allowed := "allows none (its blueprint has no allowed_env)"
			if len(b.AllowedEnv) > 0 {
				allowed = "allows only " + strings.Join(b.AllowedEnv, ", ")
			}
			problems = append(problems, fmt.Sprintf("%s is not in agent %q's allowed_env, which %s", n, b.Name, allowed))
		default:
			continue
		}
		refused = append(refused, n)
	}
	if len(refused) == 0 {
		return nil
	}
	return Errorf(ErrInvalid, "env_not_allowed", "metadata.env: %s", strings.Join(problems, "; ")).With("variables", refused)
}

// MetadataEnv returns the environment variables a run's metadata sets (metadata.env), which
// [Blueprint.CheckRunEnv] checks: nil when metadata is empty or has no env, an [ErrInvalid] error when
// metadata is not a JSON object or env is not an object of strings.
func MetadataEnv(metadata json.RawMessage) (map[string]string, error) {
	m := bytes.TrimSpace(metadata)
	if len(m) == 0 || bytes.Equal(m, []byte("null")) {
		return nil, nil
	}
	var md struct {
		Env map[string]string `json:"env"`
	}
	if m[0] != '{' || json.Unmarshal(m, &md) != nil {
		return nil, Errorf(ErrInvalid, "invalid_request", "metadata must be a JSON object whose env, if present, maps names to strings")
	}
	for k := range md.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, Errorf(ErrInvalid, "invalid_request", "metadata.env name %q is not valid", k)
		}
	}
	return md.Env, nil
}
