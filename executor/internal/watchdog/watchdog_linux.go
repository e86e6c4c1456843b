//go:build linux

package watchdog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func init() {
	if owner, ok := os.LookupEnv(envWatchdog); ok {
		os.Exit(watchdog(owner, os.NewFile(3, "owner"), os.Stderr))
	}
}

// ownerMark is this process's mark, "<pid namespace>:<pid>:<start time>", or "" when /proc cannot say.
// With the start time (in clock ticks since boot) a reused pid is not the same owner; with the
// namespace a process of another pid namespace, whose pids mean other processes, is nobody's here.
var ownerMark = sync.OnceValue(func() string {
	ns, start := pidNamespace(), startTime(os.Getpid())
	if ns == "" || start == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", ns, os.Getpid(), start)
})

// Env is the EnvOwner entry ("AGENT_ORCHESTRATOR_OWNER=…") for the environment of the programs this process
// starts, to be set after every other: the watchdog finds them by it. It is "" where the mark cannot be
// made (no /proc).
func Env() string { return envEntry() }

var envEntry = sync.OnceValue(func() string {
	if m := ownerMark(); m != "" {
		return EnvOwner + "=" + m
	}
	return ""
})

// pidNamespace is the inode number of this process's pid namespace.
var pidNamespace = sync.OnceValue(func() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	// "pid:[4026531836]"
	return strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]")
})

// procStat is what the watchdog needs of /proc/<pid>/stat.
type procStat struct {
	state byte
	pgid  int
	start uint64
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name may hold spaces and parentheses: the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	s := procStat{state: f[0][0]}
	s.pgid, _ = strconv.Atoi(f[2])
	s.start, _ = strconv.ParseUint(f[19], 10, 64) // field 22 of the line
	return s, true
}

func startTime(pid int) uint64 {
	s, _ := readStat(pid)
	return s.start
}

// ownerAlive reports whether the owner mark names a live process of this pid namespace. A mark of another
// namespace, or one that does not parse, counts as alive: nothing of it is ever this process's to end.
func ownerAlive(mark string) bool {
	f := strings.Split(mark, ":")
	if len(f) != 3 || f[0] != pidNamespace() {
		return true
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return true
	}
	s, ok := readStat(pid)
	if !ok {
		// Gone, or hidden from this user (hidepid): only kill(2) tells them apart, and a process one
		// cannot see is not known dead.
		return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	return s.start == start && s.state != 'Z' && s.state != 'X'
}

// leftover is the watchdog's rule at its start: a mark names a leftover when its owner, not the
// watchdog's own, is known dead and has no watchdog left (watched: the owners whose watchdogs run). An owner
// that just died is its own watchdog's to clean up after, with the grace that one gives.
func leftover(owner string, watched map[string]bool) func(mark string) bool {
	return func(mark string) bool { return mark != owner && !watched[mark] && !ownerAlive(mark) }
}

// liveWatchdogs returns the owners whose watchdogs run.
func liveWatchdogs() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if mark, ok := environValue(pid, envWatchdog); ok {
				out[mark] = true
			}
		}
	}
	return out
}

// startWatchdog starts this process's watchdog: this executable run again with envWatchdog, in a process
// group of its own (a signal to the runner's group, such as a terminal's Ctrl-C, is not for it), holding
// the read end of a pipe whose write end this process keeps, never inherited (O_CLOEXEC) and never
// written. died is called should the watchdog exit while this process runs.
func startWatchdog(died func()) error {
	mark := ownerMark()
	if mark == "" {
		return errors.New("/proc does not tell this process's pid namespace and start time")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"orchestrator-watchdog"}
	// Nothing of the runner's environment, its credentials least of all: the watchdog needs none of it.
	cmd.Env = []string{envWatchdog + "=" + mark, "GOMAXPROCS=1"}
	for _, k := range []string{"GORACE", "GOCOVERDIR", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("start the watchdog: %w", err)
	}
	go func() {
		_ = cmd.Wait()
		w.Close()
		died()
	}()
	return nil
}

// watchdog is the watchdog's whole life: it ends the leftovers of dead owners, waits for its own owner's
// end (end of file on pipe), ends what the owner started, and returns the exit status.
func watchdog(owner string, pipe *os.File, logTo io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	logf := func(format string, args ...any) {
		fmt.Fprintf(logTo, "orchestrator watchdog (pid %d): "+format+"\n", append([]any{os.Getpid()}, args...)...)
	}
	if n := reap(leftover(owner, liveWatchdogs()), 0); n > 0 {
		logf("ended %d processes left by runners that no longer run", n)
	}
	_, _ = io.Copy(io.Discard, pipe) // returns when the owner is gone: nothing writes to the pipe
	if ownerAlive(owner) {
		return 0 // the owner executed another program: its processes are that program's now
	}
	if n := reap(func(mark string) bool { return mark == owner }, Grace); n > 0 {
		logf("the runner that started them is gone: ended %d processes", n)
	}
	return 0
}

// reap ends the processes whose EnvOwner mark match accepts: SIGTERM to each (to its process group too,
// when it leads one), then after up to grace, while any is left, SIGKILL; with no grace, SIGKILL at once.
// It returns how many processes it found.
func reap(match func(mark string) bool, grace time.Duration) int {
	found := map[int]bool{}
	signalAll := func(sig syscall.Signal) bool {
		targets := marked(match)
		for _, t := range targets {
			found[t.pid] = true
			t.signal(sig)
			t.release()
		}
		return len(targets) > 0
	}
	if grace > 0 {
		if !signalAll(syscall.SIGTERM) {
			return 0
		}
		for deadline := time.Now().Add(grace); time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond) // the processes end, or the grace runs out
			if targets := marked(match); len(targets) == 0 {
				return len(found)
			} else {
				for _, t := range targets {
					t.release()
				}
			}
		}
	}
	// A killed process dies asynchronously, and may have started another meanwhile: look again until
	// nothing is left (zombies are not looked at), a bounded number of times.
	for range 50 {
		if !signalAll(syscall.SIGKILL) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return len(found)
}

// target is a process carrying a mark Reap matched, held by a pidfd.
type target struct {
	pid    int
	pgid   int // its group, to be signalled too: set only when the process leads it
	handle *os.Process
}

// signal sends sig to the target's group, if it leads one, then to the target itself through its pidfd.
func (t target) signal(sig syscall.Signal) {
	if t.pgid > 1 && t.pgid != syscall.Getpgrp() {
		// The leader is alive (checked through its pidfd just before): its group id is its own.
		if t.handle.Signal(syscall.Signal(0)) == nil {
			_ = syscall.Kill(-t.pgid, sig)
		}
	}
	_ = t.handle.Signal(sig)
}

func (t target) release() { _ = t.handle.Release() }

// marked lists the live processes whose environment carries an EnvOwner mark that match accepts. Each is
// opened (a pidfd) before its environment is read, and checked alive after: should its pid have been
// reused in between, the handle refers to the process that died, and is dropped.
func marked(match func(string) bool) []target {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []target
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		h, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		mark, ok := environValue(pid, EnvOwner)
		st, live := readStat(pid)
		if !ok || !live || st.state == 'Z' || st.state == 'X' || !match(mark) || h.Signal(syscall.Signal(0)) != nil {
			_ = h.Release()
			continue
		}
		t := target{pid: pid, handle: h}
		if st.pgid == pid {
			t.pgid = pid
		}
		out = append(out, t)
	}
	return out
}

// environValue returns the value of name in the environment of process pid, and whether it has one.
func environValue(pid int, name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return "", false
	}
	prefix := []byte(name + "=")
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):]), true
		}
	}
	return "", false
}
