//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

// procStat is what the tests need of /proc/<pid>/stat.
type procStat struct {
	pid   int
	comm  string
	state byte   // R, S, D, Z (zombie), X (dead), ...
	ppid  int    // parent
	pgid  int    // process group
	start uint64 // start time in clock ticks since boot: with the pid, identifies the process
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// comm may contain spaces and parentheses: it runs from the first '(' to the last ')'.
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[close+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	s := procStat{pid: pid, comm: string(b[open+1 : close]), state: f[0][0]}
	s.ppid, _ = strconv.Atoi(f[1])
	s.pgid, _ = strconv.Atoi(f[2])
	s.start, _ = strconv.ParseUint(f[19], 10, 64) // field 22 of the whole line
	return s, nil
}

// alive reports whether the process that had pid and start time start (0: any) still lives. A zombie has
// exited: it is dead, only not yet reaped by its parent.
func alive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	s, err := readStat(pid)
	if err != nil {
		return false // gone between the two looks
	}
	if start != 0 && s.start != start {
		return false // the pid was reused
	}
	return s.state != 'Z' && s.state != 'X'
}

// tagged lists the live processes whose environment holds marker ("KEY=value").
func tagged(marker string) []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	want := []byte(marker)
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || len(env) == 0 {
			continue // not ours to read, gone, or a zombie (no environment left)
		}
		found := false
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		if s, err := readStat(pid); err == nil && s.state != 'Z' && s.state != 'X' {
			out = append(out, s)
		}
	}
	return out
}

// killTagged SIGKILLs every live process whose environment holds marker, until none is left or timeout
// passes, and describes each one it found.
func killTagged(marker string, timeout time.Duration) []string {
	var found []string
	seen := map[int]bool{}
	if !testkit.Until(timeout, func() bool {
		live := tagged(marker)
		for _, s := range live {
			if !seen[s.pid] {
				seen[s.pid] = true
				found = append(found, fmt.Sprintf("pid %d (%s, parent %d, group %d)", s.pid, s.comm, s.ppid, s.pgid))
			}
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
		}
		return len(live) == 0
	}) {
		return append(found, "and some could not be killed")
	}
	return found
}

// readPids reads a pids file written by testagent (its own pid first, then its grandchildren's).
func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
