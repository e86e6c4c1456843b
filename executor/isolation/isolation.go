// Package isolation keeps the programs an executor starts — a deterministic agent's command, an external
// executor, the Claude Code CLI — away from the runner that starts them. The executors of this module
// (executor/deterministic, executor/process, executor/claudecode) take a [Config] and apply it to every
// program they start:
//
//   - The runner's credentials are not inherited: the variables named by [Config].HiddenEnv (by default
//     [DefaultHiddenEnv], the orchestrator's token variables) and any variable holding one of
//     [Config].HiddenValues (the runner's token, whatever variable carries it) are left out of a program's
//     environment. A program reaches the coordinator through the runner's gateway, with a token of its
//     own run.
//   - With [Config].User set, programs run as another user ([LookupUser]), so that they cannot read the
//     runner's memory, its environment (/proc/<pid>/environ is readable by processes of the same user)
//     or its files (a token file of mode 0600). The runner must be able to switch users ([User.Check]).
//
// Hiding variables protects against an agent that reads its own environment; only another user also
// protects against one that reads the runner's process. See docs/safety.md.
package isolation

import (
	"os"
	"slices"
	"strings"
)

// DefaultHiddenEnv are the variables programs never inherit when [Config].HiddenEnv is nil: the tokens and
// the webhook secret the reference binaries read from their environment.
var DefaultHiddenEnv = []string{
	"ORCHESTRATOR_RUNNER_TOKEN",
	"ORCHESTRATOR_ADMIN_TOKEN",
	"ORCHESTRATOR_CLIENT_TOKEN",
	"ORCHESTRATOR_WEBHOOK_SECRET",
}

// minContainedSecret is the length from which a secret is also looked for inside values (a URL or an
// "Authorization: Bearer …" line that carries it); a shorter one is matched whole only, so that it cannot
// hide unrelated variables.
const minContainedSecret = 16

// Config says how programs are kept from the runner. The zero value hides [DefaultHiddenEnv] and runs
// programs as the runner's own user.
type Config struct {
	// HiddenEnv names the runner's environment variables that programs never inherit. Nil means
	// DefaultHiddenEnv; an empty, non-nil slice hides none. To hide more, append to DefaultHiddenEnv.
	HiddenEnv []string
	// HiddenValues are secrets, typically the runner's token: a variable of the runner whose value is one of
	// them, or contains one of 16 bytes or more, is not inherited, whatever its name. Empty strings are
	// ignored.
	HiddenValues []string
	// User, when set, is the user programs run as, with its groups, and with HOME, USER and LOGNAME set to
	// its own. The runner must be root or hold CAP_SETUID, CAP_SETGID and CAP_KILL ([User.Check]); the
	// programs must be able to execute their command and enter the run's project directory. Nil: the
	// runner's own user.
	User *User
}

// Environ returns the environment programs start from: the runner's own (os.Environ) without the hidden
// variables, and with the user's HOME, USER and LOGNAME when User is set. Executors layer the run's own
// variables on top of it.
func (c Config) Environ() []string {
	hidden := c.HiddenEnv
	if hidden == nil {
		hidden = DefaultHiddenEnv
	}
	env := os.Environ() // a fresh copy: filtered in place
	out := env[:0]
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(hidden, k) || c.secret(v) {
			continue
		}
		if c.User != nil && (k == "HOME" || k == "USER" || k == "LOGNAME") {
			continue
		}
		out = append(out, kv)
	}
	if c.User != nil {
		out = append(out, "HOME="+c.User.HomeDir, "USER="+c.User.Username, "LOGNAME="+c.User.Username)
	}
	return out
}

// secret reports whether v is, or carries, one of the hidden values.
func (c Config) secret(v string) bool {
	if v == "" {
		return false
	}
	for _, s := range c.HiddenValues {
		if s != "" && (v == s || (len(s) >= minContainedSecret && strings.Contains(v, s))) {
			return true
		}
	}
	return false
}
