package isolation

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Capabilities needed to start and stop programs as another user: set their uid, their gid and groups, and
// signal them.
const (
	capKill   = 5
	capSetgid = 6
	capSetuid = 7
)

// Check reports whether this process can run programs as u: it must hold CAP_SETUID and CAP_SETGID (to
// switch) and CAP_KILL (to stop what it started), as root does; and u must be another user than its own,
// since running programs as the runner's own user separates nothing.
func (u *User) Check() error {
	if int(u.UID) == os.Geteuid() {
		return fmt.Errorf("isolation: %s is the runner's own user: its programs could read the runner's memory and environment", u)
	}
	caps, err := effectiveCaps()
	if err != nil {
		return fmt.Errorf("isolation: cannot tell whether this process may run programs as %s: %w", u, err)
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSetuid, "CAP_SETUID"}, {capSetgid, "CAP_SETGID"}, {capKill, "CAP_KILL"}} {
		if caps&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("isolation: running programs as %s needs root, or %s (this process, uid %d, lacks %s)",
			u, "CAP_SETUID, CAP_SETGID and CAP_KILL", os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// effectiveCaps reads the process's effective capability set from /proc/self/status.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}
