package isolation

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// The runner's credentials never reach a program: by name (DefaultHiddenEnv) and by value (HiddenValues),
// whatever variable carries the value.
func TestEnvironHidesCredentials(t *testing.T) {
	const token = "runner-token-0123456789abcdef"
	for _, n := range DefaultHiddenEnv {
		t.Setenv(n, "secret-of-"+n)
	}
	t.Setenv("ISOLATION_TEST_COPY", token)
	t.Setenv("ISOLATION_TEST_HEADER", "Authorization: Bearer "+token)
	t.Setenv("ISOLATION_TEST_KEEP", "kept")
	t.Setenv("ISOLATION_TEST_EMPTY", "")

	got := envMap(Config{HiddenValues: []string{token, ""}}.Environ())
	for _, n := range append(slices.Clone(DefaultHiddenEnv), "ISOLATION_TEST_COPY", "ISOLATION_TEST_HEADER") {
		if v, ok := got[n]; ok {
			t.Errorf("%s=%q reached the program's environment", n, v)
		}
	}
	for k, v := range got {
		if strings.Contains(v, token) || strings.HasPrefix(v, "secret-of-") {
			t.Errorf("%s=%q carries a credential", k, v)
		}
	}
	if got["ISOLATION_TEST_KEEP"] != "kept" {
		t.Errorf("ISOLATION_TEST_KEEP = %q, want kept", got["ISOLATION_TEST_KEEP"])
	}
	if _, ok := got["ISOLATION_TEST_EMPTY"]; !ok {
		t.Error("an empty variable was hidden: the empty hidden value must match nothing")
	}
	if got["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH = %q, want the runner's", got["PATH"])
	}
}

// HiddenEnv replaces the default list; an empty one hides nothing. A short secret is matched whole only.
func TestEnvironHiddenEnvConfig(t *testing.T) {
	t.Setenv("ORCHESTRATOR_RUNNER_TOKEN", "t")
	t.Setenv("ISOLATION_TEST_SECRET", "s")
	t.Setenv("ISOLATION_TEST_SHORT", "abc-and-more")

	got := envMap(Config{HiddenEnv: append(slices.Clone(DefaultHiddenEnv), "ISOLATION_TEST_SECRET"), HiddenValues: []string{"abc"}}.Environ())
	if _, ok := got["ISOLATION_TEST_SECRET"]; ok {
		t.Error("ISOLATION_TEST_SECRET, added to HiddenEnv, reached the program")
	}
	if _, ok := got["ORCHESTRATOR_RUNNER_TOKEN"]; ok {
		t.Error("ORCHESTRATOR_RUNNER_TOKEN reached the program")
	}
	if got["ISOLATION_TEST_SHORT"] != "abc-and-more" {
		t.Error("a short hidden value hid a variable that only contains it")
	}

	got = envMap(Config{HiddenEnv: []string{}}.Environ())
	if got["ORCHESTRATOR_RUNNER_TOKEN"] != "t" {
		t.Error("an empty HiddenEnv still hid ORCHESTRATOR_RUNNER_TOKEN")
	}
}

// With a user, the program gets the user's HOME, USER and LOGNAME, once each.
func TestEnvironUser(t *testing.T) {
	t.Setenv("HOME", "/root-home")
	u := &User{Username: "agent", UID: 12345, GID: 12345, HomeDir: "/home/agent"}
	env := Config{User: u}.Environ()
	got := envMap(env)
	for k, want := range map[string]string{"HOME": "/home/agent", "USER": "agent", "LOGNAME": "agent"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	n := 0
	for _, kv := range env {
		if strings.HasPrefix(kv, "HOME=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("HOME appears %d times, want once", n)
	}
}

func TestLookupUser(t *testing.T) {
	t.Parallel()
	byName, err := LookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody on this system: %v", err)
	}
	byID, err := LookupUser(strconv.FormatUint(uint64(byName.UID), 10))
	if err != nil {
		t.Fatalf("LookupUser(%d): %v", byName.UID, err)
	}
	if byID.Username != byName.Username || byID.GID != byName.GID || byID.HomeDir != byName.HomeDir {
		t.Errorf("by id %+v, by name %+v: want the same user", byID, byName)
	}
	if !slices.Contains(byName.Groups, byName.GID) {
		t.Errorf("groups %v lack the primary group %d", byName.Groups, byName.GID)
	}
	if _, err := LookupUser("no-such-user-for-isolation-test"); err == nil || !strings.Contains(err.Error(), "no-such-user-for-isolation-test") {
		t.Errorf("LookupUser of a missing user: error %v, want one naming it", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	self := &User{Username: "me", UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	if err := self.Check(); err == nil || !strings.Contains(err.Error(), "own user") {
		t.Errorf("Check of the runner's own user: error %v, want one saying it separates nothing", err)
	}
	other := &User{Username: "other", UID: uint32(os.Geteuid()) + 4242, GID: 4242}
	err := other.Check()
	if os.Geteuid() == 0 {
		if err != nil {
			t.Errorf("Check as root: %v, want nil", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("Check without privileges: error %v, want one saying what is needed", err)
	}
}
