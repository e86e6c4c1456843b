//go:build linux

package watchdog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
)

// envOwnerHelper makes this test binary, run again, a runner of the watchdog tests (TestOwnerHelper): as an
// executor does, it starts one program in a process group of its own, with its mark; the program starts a
// grandchild, writes "<its pid> <the grandchild's pid>" to the file the variable names, and waits.
const envOwnerHelper = "WATCHDOG_TEST_OWNER_PIDS"

func TestOwnerHelper(t *testing.T) {
	pids := os.Getenv(envOwnerHelper)
	if pids == "" {
		t.Skip("the runner of the watchdog tests, run by them")
	}
	Watch(nil)
	script := `sleep 300 & echo $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`
	cmd := exec.Command("/bin/sh", "-c", script, pids)
	cmd.Env = append(os.Environ(), Env())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	_ = cmd.Run()
	os.Exit(0)
}

// proc is a process the test watches, known by its pid and start time, so that a reused pid is not taken
// for it.
type process struct {
	pid   int
	start uint64
}

func (p process) alive() bool {
	s, ok := readStat(p.pid)
	return ok && s.start == p.start && s.state != 'Z' && s.state != 'X'
}

func (p process) kill() {
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// owner is a runner of these tests, with its watchdog, its program and the program's grandchild.
type owner struct {
	cmd                           *exec.Cmd
	watchdog, program, grandchild process
}

// startOwner starts a runner (TestOwnerHelper) and waits until its program and grandchild run and its
// watchdog is found. Whatever is left of them is killed when the test ends.
func startOwner(t *testing.T) *owner {
	t.Helper()
	pidsFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerHelper$")
	cmd.Env = append(os.Environ(), envOwnerHelper+"="+pidsFile, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &owner{cmd: cmd}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		o.watchdog.kill()
		o.program.kill()
		o.grandchild.kill()
	})
	var pids []int
	proctest.WaitFor(t, 30*time.Second, "the runner's program and grandchild to start", func() bool {
		b, err := os.ReadFile(pidsFile)
		if err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		return len(pids) == 2
	})
	o.program = process{pids[0], startTime(pids[0])}
	o.grandchild = process{pids[1], startTime(pids[1])}
	proctest.WaitFor(t, 30*time.Second, "the runner's watchdog", func() bool {
		o.watchdog = findWatchdog(cmd.Process.Pid)
		return o.watchdog.pid != 0
	})
	if !o.program.alive() || !o.grandchild.alive() {
		t.Fatalf("the program (%d) or its grandchild (%d) is not running", o.program.pid, o.grandchild.pid)
	}
	return o
}

// findWatchdog returns the watchdog whose parent is pid, if it runs.
func findWatchdog(parent int) process {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.HasPrefix(cmdline, []byte("orchestrator-watchdog\x00")) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); i >= 0 && len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return process{pid, startTime(pid)}
		}
	}
	return process{}
}

// A runner SIGKILLed: its watchdog ends its program and the program's grandchild, then exits.
func TestWatchdogEndsWhatAKilledRunnerStarted(t *testing.T) {
	t.Parallel()
	o := startOwner(t)
	if err := o.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = o.cmd.Wait()
	proctest.WaitFor(t, 2*Grace, "the program and its grandchild to be gone", func() bool {
		return !o.program.alive() && !o.grandchild.alive()
	})
	proctest.WaitFor(t, 2*Grace, "the watchdog to exit", func() bool { return !o.watchdog.alive() })
}

// A runner killed with its watchdog leaves its program behind; the watchdog of the next runner to start
// ends it.
func TestWatchdogEndsLeftoversAtStart(t *testing.T) {
	t.Parallel()
	o := startOwner(t)
	_ = syscall.Kill(o.watchdog.pid, syscall.SIGKILL)
	proctest.WaitFor(t, 10*time.Second, "the watchdog to die", func() bool { return !o.watchdog.alive() })
	if err := o.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = o.cmd.Wait()

	startOwner(t) // the runner started again
	proctest.WaitFor(t, 10*time.Second, "the previous runner's program and grandchild to be gone", func() bool {
		return !o.program.alive() && !o.grandchild.alive()
	})
}

// sleeper starts /bin/sleep with mark as its EnvOwner ("" for none), killed when the test ends.
func sleeper(t *testing.T, mark string) process {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "300")
	if mark != "" {
		cmd.Env = []string{EnvOwner + "=" + mark}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return process{cmd.Process.Pid, startTime(cmd.Process.Pid)}
}

// The rule of what is a leftover, and reap applying it: only a process whose own environment names a dead
// owner of this pid namespace, whose watchdog does not run, is ended. A process without a mark, one whose
// owner lives, one whose owner's pid now belongs to another process (a dead owner), one of another
// namespace, and one whose dead owner's watchdog runs are told apart.
func TestReapEndsOnlyLeftovers(t *testing.T) {
	t.Parallel()
	ns := pidNamespace()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	self := ownerMark()
	deadMark := fmt.Sprintf("%s:%d:%d", ns, dead.Process.Pid, 1)
	reusedMark := fmt.Sprintf("%s:%d:%d", ns, os.Getpid(), startTime(os.Getpid())+1) // this pid, but not this process
	otherNS := fmt.Sprintf("%s9:%d:%d", ns, dead.Process.Pid, 1)

	watchedMark := fmt.Sprintf("%s:%d:%d", ns, dead.Process.Pid, 2) // dead, but its watchdog runs

	rule := leftover("", map[string]bool{watchedMark: true})
	for mark, want := range map[string]bool{self: false, deadMark: true, reusedMark: true, otherNS: false, watchedMark: false, "garbage": false, "": false} {
		if got := rule(mark); got != want {
			t.Errorf("leftover(%q) = %v, want %v", mark, got, want)
		}
	}
	if leftover(deadMark, nil)(deadMark) {
		t.Error("a watchdog took its own owner's processes for leftovers")
	}
	// A watchdog is known by its environment.
	wd := exec.Command("/bin/sleep", "300")
	wd.Env = []string{envWatchdog + "=" + watchedMark}
	if err := wd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wd.Process.Kill(); _ = wd.Wait() })
	if !liveWatchdogs()[watchedMark] {
		t.Errorf("liveWatchdogs does not list the watchdog of %s", watchedMark)
	}

	unmarked, ours, orphan, reused, foreign := sleeper(t, ""), sleeper(t, self), sleeper(t, deadMark), sleeper(t, reusedMark), sleeper(t, otherNS)
	mine := map[string]bool{"": true, self: true, deadMark: true, reusedMark: true, otherNS: true}
	// Only this test's processes: others on the machine are not this test's to end.
	n := reap(func(mark string) bool { return mine[mark] && rule(mark) }, 0)
	if n != 2 {
		t.Errorf("reap found %d processes, want 2", n)
	}
	proctest.WaitFor(t, 10*time.Second, "the leftovers to be gone", func() bool { return !orphan.alive() && !reused.alive() })
	for name, p := range map[string]process{"unmarked": unmarked, "live owner's": ours, "other namespace's": foreign} {
		if !p.alive() {
			t.Errorf("the %s process was ended", name)
		}
	}
}
