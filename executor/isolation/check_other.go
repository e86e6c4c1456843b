//go:build !linux

package isolation

import (
	"fmt"
	"os"
	"runtime"
)

// Check reports whether this process can run programs as u: on Unix systems other than Linux it must run
// as root; and u must be another user than its own, since running programs as the runner's own user
// separates nothing. Other systems cannot switch users.
func (u *User) Check() error {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		return fmt.Errorf("isolation: running programs as another user is not supported on %s", runtime.GOOS)
	}
	if int(u.UID) == os.Geteuid() {
		return fmt.Errorf("isolation: %s is the runner's own user: its programs could read the runner's memory and environment", u)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("isolation: running programs as %s needs root (this process runs as uid %d)", u, os.Geteuid())
	}
	return nil
}
