//go:build linux

// Package proctest holds the test helpers the executors' tests share to check that what a run started is
// gone: process groups and processes read from /proc, and a condition wait with a deadline.
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HelperEnvironment is the environment a test binary re-executed as a child program needs: want (the
// variable that selects the helper, e.g. GO_WANT_HELPER_PROCESS) set to 1, and a GORACE that, in a -race
// build, spares each child the race runtime's 1s sleep at exit.
func HelperEnvironment(want string) map[string]string {
	return map[string]string{want: "1", "GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")}
}

// GroupAlive reports whether any live process is in process group pgid. Members that are zombies count as
// dead: they are, and in a container whose PID 1 does not reap orphans they stay zombies forever.
func GroupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f := stat(e.Name())
		if len(f) < 3 {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg == pgid && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// ProcessAlive reports whether pid is a live (non-zombie) process.
func ProcessAlive(pid int) bool {
	f := stat(strconv.Itoa(pid))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// stat returns the fields of /proc/<pid>/stat after the command name: state ppid pgrp …
func stat(pid string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil
	}
	// pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// WaitFor waits until cond holds, failing t at the deadline.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		<-tick.C
	}
}

// RequireGroupGone fails t unless process group pgid is empty (shortly: SIGKILL is not instantaneous), and
// kills it in any case so a failing test leaves nothing behind.
func RequireGroupGone(t testing.TB, pgid int) {
	t.Helper()
	if pgid <= 0 {
		t.Fatalf("bad pgid %d", pgid)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	WaitFor(t, 2*time.Second, fmt.Sprintf("process group %d empty", pgid), func() bool { return !GroupAlive(pgid) })
}

// SleepForever blocks a helper process until it is killed.
func SleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
