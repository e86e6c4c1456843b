//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// watchedProcess is a process a test expects to end, known by its pid and start time.
type watchedProcess struct {
	name  string
	pid   int
	start uint64
}

func (p watchedProcess) alive() bool { return alive(p.pid, p.start) }

// agentProcesses waits for a testagent's pids file and returns the agent and its grandchildren, each
// checked running.
func agentProcesses(t *testing.T, pidsPath string) []watchedProcess {
	t.Helper()
	waitFile(t, pidsPath, runTimeout)
	pids, err := readPids(pidsPath)
	if err != nil || len(pids) < 2 {
		t.Fatalf("pids file: %v %v, want the agent and a grandchild", pids, err)
	}
	var out []watchedProcess
	for i, pid := range pids {
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' {
			t.Fatalf("process %d is not running: %+v %v", pid, st, err)
		}
		name := "the agent"
		if i > 0 {
			name = "its grandchild"
		}
		out = append(out, watchedProcess{name, pid, st.start})
	}
	return out
}

// watchdogOf returns the runner's watchdog: the process whose parent is the runner and whose argv[0] says
// it is one.
func watchdogOf(t *testing.T, runnerPid int) watchedProcess {
	t.Helper()
	var w watchedProcess
	waitFor(t, startTimeout, "the runner's watchdog", func() (bool, string) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if st, err := readStat(pid); err == nil && st.ppid == runnerPid && bytes.HasPrefix(cmdline, []byte("orchestrator-watchdog\x00")) {
				w = watchedProcess{"the runner's watchdog", pid, st.start}
				return true, ""
			}
		}
		return false, "no child of the runner is its watchdog"
	})
	t.Cleanup(func() {
		if w.alive() {
			_ = syscall.Kill(w.pid, syscall.SIGKILL)
		}
	})
	return w
}

// waitGone waits until none of procs lives.
func waitGone(t *testing.T, timeout time.Duration, what string, procs ...watchedProcess) {
	t.Helper()
	waitFor(t, timeout, what, func() (bool, string) {
		var live []string
		for _, p := range procs {
			if p.alive() {
				live = append(live, fmt.Sprintf("%s (pid %d)", p.name, p.pid))
			}
		}
		return len(live) == 0, "alive: " + strings.Join(live, ", ")
	})
}

// A runner SIGKILLed mid-run: its agent and the agent's grandchild, which both ignore SIGTERM, are killed
// by the runner's watchdog (SIGTERM, then SIGKILL after its grace), and the watchdog exits.
func TestRunnerSIGKILLEndsItsAgentsProcesses(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	r := c.startRunner(co, runnerOpts{name: "doomed", blueprints: []string{testAgent("blocker")}})
	watchdog := watchdogOf(t, r.pid())
	pidsPath := c.path("blocker.pids")
	t.Cleanup(func() { killAgentGroup(t, pidsPath) }) // should the test fail
	s := co.admin().startRun(map[string]any{"agent_name": "blocker",
		"parameters": map[string]any{"pids": pidsPath, "children": 1, "ignore_term": true, "release": c.path("never")}})
	procs := agentProcesses(t, pidsPath)
	co.admin().waitStatus(s.SessionID, runTimeout, "running")

	killedAt := time.Now()
	r.signal(t, syscall.SIGKILL) // the runner alone, not its process group
	if !r.waitExit(10 * time.Second) {
		t.Fatal("the runner did not die")
	}
	waitGone(t, 30*time.Second, "the killed runner's agent processes to be gone", procs...)
	t.Logf("the agent and its grandchild were gone %s after the kill (they ignore SIGTERM: the watchdog's grace is 5s)",
		time.Since(killedAt).Round(time.Millisecond))
	waitGone(t, 30*time.Second, "the watchdog to exit", watchdog)
	// The runner's own watchdog did it, and said so on the runner's stderr before it exited.
	if out := r.output(); !strings.Contains(out, "the runner that started them is gone: ended 2 processes") {
		t.Errorf("the runner's output does not say its watchdog ended the agent and its grandchild:\n%s", out)
	}
}

// A runner killed together with its watchdog leaves its agent's processes behind; when the runner starts
// again, it ends them.
func TestRunnerRestartEndsWhatItsPreviousIncarnationLeft(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{stale: time.Second, offline: 2 * time.Second})
	opts := runnerOpts{name: "restarted", blueprints: []string{testAgent("blocker")}}
	r := c.startRunner(co, opts)
	watchdog := watchdogOf(t, r.pid())
	pidsPath := c.path("blocker.pids")
	t.Cleanup(func() { killAgentGroup(t, pidsPath) })
	co.admin().startRun(map[string]any{"agent_name": "blocker",
		"parameters": map[string]any{"pids": pidsPath, "children": 1, "release": c.path("never")}})
	procs := agentProcesses(t, pidsPath)

	_ = syscall.Kill(watchdog.pid, syscall.SIGKILL)
	waitGone(t, 10*time.Second, "the watchdog to die", watchdog)
	r.signal(t, syscall.SIGKILL)
	if !r.waitExit(10 * time.Second) {
		t.Fatal("the runner did not die")
	}
	for _, p := range procs {
		if !p.alive() {
			t.Logf("%s (pid %d) ended before the runner started again", p.name, p.pid) // another runner's watchdog, starting meanwhile, may end it
		}
	}

	c.startRunner(co, opts)
	waitGone(t, 30*time.Second, "the previous incarnation's agent processes to be gone", procs...)
}

// A program that floods stderr with lines longer than the line limit (16 KiB), 8 MB in all, through a
// real runner and coordinator: every line is either kept — cut, and marked truncated — or counted in a
// stderr_dropped event; none is lost in silence, though a batch of them is far over the HTTP API's body
// limit.
func TestRunnerKeepsOrCountsEveryStderrLine(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	const lines, width = 400, 20000
	script := c.path("flood.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf("head -c %d /dev/zero | tr '\\000' x | fold -w %d >&2\n", lines*width, width)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.startRunner(co, runnerOpts{name: "flood", blueprints: []string{fmt.Sprintf(`{"name": "flood", "command": %q}`, "/bin/sh "+script)}})
	a := co.admin()
	s := a.startRun(map[string]any{"agent_name": "flood"})
	if res := a.result(s.SessionID); res.Status != "completed" {
		t.Fatalf("flood run: %s", mustJSON(t, res))
	}
	kept, dropped := 0, 0
	for _, ev := range a.events(s.SessionID) {
		switch ev.Type {
		case orchestrator.EventStderr:
			var d struct {
				Line      string `json:"line"`
				Truncated bool   `json:"truncated"`
			}
			if err := ev.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			if !d.Truncated || !strings.HasPrefix(d.Line, strings.Repeat("x", 16<<10)+" … [line truncated: ") {
				t.Fatalf("stderr event %d: truncated %v, %d bytes; want a line cut at 16 KiB and marked", ev.Seq, d.Truncated, len(d.Line))
			}
			kept++
		case orchestrator.EventStderrDropped:
			var d struct {
				N int `json:"dropped_lines"`
			}
			if err := ev.DecodeData(&d); err != nil || d.N <= 0 {
				t.Fatalf("stderr_dropped event %s: %v", ev.Data, err)
			}
			dropped += d.N
		}
	}
	if kept+dropped != lines || kept == 0 {
		t.Errorf("%d lines kept and %d counted dropped; want %d in all, some kept", kept, dropped, lines)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.pid()))
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			t.Logf("%d lines kept, %d counted dropped; the runner's peak resident memory: %s", kept, dropped, strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")))
		}
	}
}
