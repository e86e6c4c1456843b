package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// Each binary's -h says what it is, shows an example and lists the environment variables it reads.
func TestBinariesHelp(t *testing.T) {
	t.Parallel()
	for bin, want := range map[string][]string{
		"coordinator": {"coordinator serves the orchestrator", "Examples:", "Environment:", "ORCHESTRATOR_ADMIN_TOKEN",
			"ORCHESTRATOR_CLIENT_TOKEN", "ORCHESTRATOR_RUNNER_TOKEN", "ORCHESTRATOR_WEBHOOK_SECRET", "-log-format", "-log-level", "-insecure"},
		"runner": {"runner registers with a coordinator", "Examples:", "Environment:", "ORCHESTRATOR_RUNNER_TOKEN", "PATH",
			"-log-format", "-log-level", "-project-dir", "-executor"},
	} {
		out, err := exec.Command(filepath.Join(binDir, bin), "-h").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 0 && ee.ExitCode() != 2) {
			t.Errorf("%s -h: %v", bin, err)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s -h does not mention %q:\n%s", bin, w, out)
			}
		}
	}
}

// The runner checks its settings at start: a wrong one makes it exit non-zero at once, with an error that
// names the flag and the value, instead of registering and failing every run later.
func TestRunnerStartupChecks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	blueprints := c.path("blueprints")
	empty := c.path("empty")
	broken := c.path("broken")
	project := c.path("project")
	file := c.path("a-file")
	failing := c.path("failing-claude")
	for _, d := range []string{blueprints, empty, broken, project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, content := range map[string]string{
		filepath.Join(blueprints, "probe.json"): testAgent("probe"),
		filepath.Join(broken, "bad.json"):       `{"name": "bad", "command": `,
		file:                                    "not a directory",
		failing:                                 "#!/bin/sh\necho 'claude: not logged in' >&2\nexit 3\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The checks come before any call to the coordinator: none listens here.
	base := []string{"-coordinator", "http://127.0.0.1:1", "-blueprints-dir", blueprints, "-project-dir", project}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"project dir missing", []string{"-project-dir", c.path("missing")}, []string{"-project-dir " + c.path("missing"), "no such file or directory"}},
		{"project dir is a file", []string{"-project-dir", file}, []string{"-project-dir " + file + " is not a directory"}},
		{"executor bogus", []string{"-executor", "bogus"}, []string{"-executor bogus", "deterministic", "claude-code"}},
		{"executor program missing", []string{"-executor", c.path("no-such-exec")}, []string{"-executor " + c.path("no-such-exec")}},
		{"claude missing", []string{"-executor", "claude-code", "-claude", c.path("no-claude")}, []string{"-claude " + c.path("no-claude"), "--version"}},
		{"claude fails", []string{"-executor", "claude-code", "-claude", failing}, []string{"-claude " + failing, "--version", "not logged in"}},
		{"no blueprint", []string{"-blueprints-dir", empty}, []string{"-blueprints-dir " + empty, "no blueprint", "no AI executor"}},
		{"unreadable blueprint", []string{"-blueprints-dir", broken}, []string{"-blueprints-dir " + broken, "bad.json"}},
		{"missing blueprints dir", []string{"-blueprints-dir", c.path("nowhere")}, []string{"-blueprints-dir " + c.path("nowhere")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, c, "runner", append(append([]string{}, base...), tc.args...), tc.want, "ORCHESTRATOR_RUNNER_TOKEN=")
		})
	}
}

// wantRefusal starts bin with args and env, and checks that it exits non-zero within the start-up
// deadline, its output containing every string of want.
func wantRefusal(t *testing.T, c *cluster, bin string, args, want []string, env ...string) {
	t.Helper()
	p := c.start(bin+"-"+strings.ReplaceAll(t.Name()[strings.LastIndex(t.Name(), "/")+1:], " ", "-"), bin, args, env...)
	if !p.waitExit(startTimeout) {
		t.Fatalf("%s %v still runs after %s; want it to refuse to start", bin, args, startTimeout)
	}
	out := p.output()
	if p.waitErr == nil {
		t.Errorf("%s %v exited 0; want non-zero", bin, args)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s %v: output does not contain %q:\n%s", bin, args, w, out)
		}
	}
}

// The coordinator's start-up errors name the flag and the file or address at fault.
func TestCoordinatorStartupErrors(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := freePort(t)
	db := c.path("no-such-dir", "orchestrator.db")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"db in a missing directory", []string{"-addr", "127.0.0.1:" + strconv.Itoa(port), "-db", db}, []string{"-db " + db}},
		{"port in use", []string{"-addr", taken.Addr().String(), "-db", c.path("in-use.db")},
			[]string{"-addr " + taken.Addr().String(), "in use", "choose another -addr"}},
		{"open API on a reachable address", []string{"-addr", "0.0.0.0:" + strconv.Itoa(port), "-db", c.path("open.db")},
			[]string{"-addr 0.0.0.0:" + strconv.Itoa(port), "-insecure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, c, "coordinator", tc.args, tc.want,
				"ORCHESTRATOR_ADMIN_TOKEN=", "ORCHESTRATOR_CLIENT_TOKEN=", "ORCHESTRATOR_RUNNER_TOKEN=")
		})
	}
	if _, err := os.Stat(c.path("open.db")); err == nil {
		t.Errorf("the coordinator refused an open API but created its database first")
	}
}

// Logs a person can read: one INFO line per run start and end on both sides; -log-format json gives
// JSON lines; Ctrl-C on an idle runner logs no ERROR, and the coordinator reports its clean
// deregistration as such, not as a failure.
func TestRunLogLinesAndQuietShutdown(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{args: []string{"-log-format", "json"}})
	r := c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("logged")}})
	st := co.admin().with(t).startRun(map[string]any{"agent_name": "logged", "parameters": map[string]any{}})
	co.admin().waitStatus(st.SessionID, runTimeout, "completed")

	// The coordinator's lines, all of them JSON.
	coordLine := func(msg string) map[string]any {
		for _, line := range strings.Split(strings.TrimSpace(co.proc.output()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("-log-format json: a line is not JSON (%v): %s", err, line)
			}
			if rec["msg"] == msg && rec["run_id"] == st.RunID {
				return rec
			}
		}
		return nil
	}
	runnerLine := func(msg string) string {
		for _, line := range strings.Split(r.output(), "\n") {
			if strings.Contains(line, `msg="`+msg+`"`) && strings.Contains(line, "run_id="+st.RunID) {
				return line
			}
		}
		return ""
	}
	waitFor(t, runTimeout, "the run's log lines on both sides", func() (bool, string) {
		return coordLine("run started") != nil && coordLine("run ended") != nil && runnerLine("run started") != "" && runnerLine("run ended") != "",
			"coordinator:\n" + co.proc.output() + "\nrunner:\n" + r.output()
	})
	for _, msg := range []string{"run started", "run ended"} {
		rec := coordLine(msg)
		for _, k := range []string{"agent", "session_id", "run_id", "runner_id"} {
			if rec[k] == nil || rec[k] == "" {
				t.Errorf("coordinator %q line has no %s: %v", msg, k, rec)
			}
		}
		if rec["level"] != "INFO" || rec["agent"] != "logged" || rec["session_id"] != st.SessionID || rec["runner_id"] != r.id {
			t.Errorf("coordinator %q line = %v; want INFO, agent logged, session %s, runner %s", msg, rec, st.SessionID, r.id)
		}
		line := runnerLine(msg)
		for _, w := range []string{"level=INFO", "agent=logged", "session_id=" + st.SessionID, "runner_id=" + r.id} {
			if !strings.Contains(line, w) {
				t.Errorf("runner %q line %q lacks %s", msg, line, w)
			}
		}
	}
	if rec := coordLine("run ended"); rec["outcome"] != "completed" || rec["duration"] == nil {
		t.Errorf("coordinator run ended line = %v; want outcome completed and a duration", rec)
	}
	if line := runnerLine("run ended"); !strings.Contains(line, "outcome=completed") || !strings.Contains(line, "duration=") {
		t.Errorf("runner run ended line = %q; want outcome=completed and a duration", line)
	}

	// Ctrl-C on the idle runner: exit 0, no ERROR, and the coordinator says it deregistered.
	r.signal(t, syscall.SIGINT)
	if !r.waitExit(startTimeout) {
		t.Fatalf("the runner did not exit within %s of SIGINT", startTimeout)
	}
	if r.waitErr != nil {
		t.Errorf("runner after SIGINT: %s, want exit status 0", r.status())
	}
	if out := r.output(); strings.Contains(out, "level=ERROR") {
		t.Errorf("the runner logged an ERROR on a graceful shutdown:\n%s", out)
	}
	var offline map[string]any
	waitFor(t, startTimeout, "the coordinator's runner offline line", func() (bool, string) {
		for _, line := range strings.Split(strings.TrimSpace(co.proc.output()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] != nil && strings.HasPrefix(rec["msg"].(string), "runner offline") && rec["runner_id"] == r.id {
				offline = rec
				return true, ""
			}
		}
		return false, co.proc.output()
	})
	if offline["level"] != "INFO" || offline["reason"] != "deregistered" || offline["failed_runs"] != nil {
		t.Errorf("coordinator's line on a clean deregistration = %v; want INFO, reason deregistered, no failed runs", offline)
	}
	if out := co.proc.output(); strings.Contains(out, "Runner deregistered during execution") || strings.Contains(out, `"level":"ERROR"`) {
		t.Errorf("the coordinator reported a clean deregistration as a failure, or logged an ERROR:\n%s", out)
	}
	if s := co.admin().session(st.SessionID); s.Status != orchestrator.SessionCompleted {
		t.Errorf("session %s after the runner left: %s, want completed", st.SessionID, s.Status)
	}
}

// An unreachable coordinator gives the runner one WARN when it is lost and one INFO when it is back, not
// a line per retry.
func TestCoordinatorOutageLogs(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	r := c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("patient")}})
	co.kill(t)
	waitFor(t, startTimeout, "the runner to notice the coordinator is gone", func() (bool, string) {
		return strings.Contains(r.output(), "coordinator unreachable"), r.output()
	})
	co.restart(t)
	waitFor(t, startTimeout, "the runner to notice the coordinator is back", func() (bool, string) {
		return strings.Contains(r.output(), "coordinator reachable again"), r.output()
	})
	out := r.output()
	if n := strings.Count(out, "coordinator unreachable"); n != 1 {
		t.Errorf("%d lines say the coordinator is unreachable; want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "coordinator reachable again"); n != 1 {
		t.Errorf("%d lines say the coordinator is back; want 1:\n%s", n, out)
	}
	for _, noisy := range []string{"level=ERROR", "poll failed", "heartbeat failed", "request failed"} {
		if strings.Contains(out, noisy) {
			t.Errorf("the runner logged %q during the outage:\n%s", noisy, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "coordinator unreachable") && !strings.Contains(line, "level=WARN") ||
			strings.Contains(line, "coordinator reachable again") && !strings.Contains(line, "level=INFO") {
			t.Errorf("outage line at the wrong level: %s", line)
		}
	}
}
