//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// killAgentGroup kills the process group of a testagent whose pids file is at path (its pid leads the
// group: the deterministic executor starts every command in a group of its own).
func killAgentGroup(t *testing.T, path string) {
	pids, err := readPids(path)
	if err != nil || len(pids) == 0 {
		return
	}
	_ = syscall.Kill(-pids[0], syscall.SIGKILL)
}

// Issue 4, test 8: a runner SIGKILLed mid-run. Its session fails with "Runner disconnected during
// execution" once the offline threshold has passed since the runner's last heartbeat — and within one
// second of it — the parent gets the failure as a callback, and the runner's blueprint is gone.
func TestRunnerKilledMidRun(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const (
		heartbeat = 200 * time.Millisecond
		stale     = 600 * time.Millisecond
		offline   = time.Second
	)
	co := c.startCoordinator(coordOpts{heartbeat: heartbeat, stale: stale, offline: offline})
	echo := c.startEchoRunner(co, "")
	registerOrchestrator(co)
	a := co.admin()

	// The parent: an AI session that has ended, so the child's callback resumes it at once.
	parent := a.startRun(map[string]any{"agent_name": "orchestrator", "prompt": "start a crawler and tell me how it went"})
	if res := a.result(parent.SessionID); res.Status != "completed" {
		t.Fatalf("parent: %s", mustJSON(t, res))
	}

	doomed := c.startRunner(co, runnerOpts{name: "doomed", blueprints: []string{testAgent("blocker")}})
	pids := c.path("blocker.pids")
	t.Cleanup(func() { killAgentGroup(t, pids) }) // the runner's death leaves its command orphaned
	child := a.startRun(map[string]any{
		"agent_name":        "blocker",
		"parameters":        map[string]any{"pids": pids, "release": c.path("never")},
		"mode":              "async_callback",
		"parent_session_id": parent.SessionID,
	})
	waitFile(t, pids, runTimeout)
	a.waitStatus(child.SessionID, runTimeout, "running")

	killedAt := time.Now()
	if !doomed.kill(10 * time.Second) {
		t.Fatal("the runner did not die")
	}
	s := a.waitStatus(child.SessionID, offline+10*time.Second, "failed", "completed", "stopped")
	observed := time.Since(killedAt)
	if s.Status != orchestrator.SessionFailed || s.Error != "Runner disconnected during execution" {
		t.Fatalf("child session: status %s error %q, want failed with \"Runner disconnected during execution\"", s.Status, s.Error)
	}
	if s.EndedAt == nil {
		t.Fatalf("failed session has no ended_at: %s", mustJSON(t, s))
	}
	var ri *orchestrator.RunnerInfo
	for _, r := range a.runners() {
		if r.ID == doomed.id {
			ri = r
		}
	}
	if ri == nil || ri.Status != orchestrator.RunnerOffline {
		t.Fatalf("runner %s after the threshold: %s, want offline", doomed.id, mustJSON(t, ri))
	}
	// The threshold runs from the last heartbeat the coordinator recorded; the kill came at most one
	// heartbeat interval after it (plus a little scheduling).
	sinceHeartbeat := s.EndedAt.Sub(ri.LastHeartbeatAt)
	sinceKill := s.EndedAt.Sub(killedAt)
	t.Logf("offline-after %s: session failed %s after the last heartbeat, %s after the kill (seen by the test after %s)",
		offline, sinceHeartbeat.Round(time.Millisecond), sinceKill.Round(time.Millisecond), observed.Round(time.Millisecond))
	if sinceHeartbeat < offline || sinceHeartbeat > offline+time.Second {
		t.Errorf("session failed %s after the runner's last heartbeat, want between %s and %s", sinceHeartbeat, offline, offline+time.Second)
	}
	const slack = 100 * time.Millisecond // a heartbeat in flight at the kill, clocks read in two processes
	if sinceKill < offline-heartbeat-slack || sinceKill > offline+time.Second+slack {
		t.Errorf("session failed %s after the kill, want between %s and %s", sinceKill, offline-heartbeat, offline+time.Second)
	}
	var run orchestrator.Run
	a.json("GET", "/runs/"+child.RunID, nil, http.StatusOK, &run)
	if run.Status != orchestrator.RunFailed || run.Error != "Runner disconnected during execution" {
		t.Errorf("child run: %s %q", run.Status, run.Error)
	}

	// The blueprint went with the runner.
	if ag := a.agents()["blocker"]; ag != nil {
		t.Errorf("GET /agents still lists blocker after its runner went offline: %s", mustJSON(t, ag))
	}
	status, body, _ := a.do("POST", "/runs", map[string]any{"agent_name": "blocker"})
	if status != http.StatusNotFound {
		t.Errorf("POST /runs for the gone agent: %d %s, want 404", status, body)
	}

	// The parent was resumed with the failure.
	var recs []promptRecord
	waitFor(t, runTimeout, "the parent's callback resume", func() (bool, string) {
		recs = echo.records(t, parent.SessionID)
		return len(recs) >= 2, mustJSON(t, recs)
	})
	cb := recs[1]
	if cb.Mode != "resume" || !strings.Contains(cb.Prompt, child.SessionID) || !strings.Contains(cb.Prompt, "Runner disconnected during execution") {
		t.Errorf("callback prompt (mode %s) does not carry the child's failure:\n%s", cb.Mode, cb.Prompt)
	}
	if p := a.waitStatus(parent.SessionID, runTimeout, "completed"); p.CurrentRunID != cb.RunID {
		t.Errorf("parent's current run %s, want the callback run %s", p.CurrentRunID, cb.RunID)
	}
}

// Issue 4, test 9: the coordinator is SIGKILLed with runs queued and in flight and restarted on the same
// database and port. Every acknowledged run ends, none executes twice, and the runner carries on.
func TestCoordinatorRestart(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	// A claim whose poll response died with the coordinator is handed to the runner again after
	// -redeliver-after (default 15s); shorten it so that case does not dominate the test's time.
	co := c.startCoordinator(coordOpts{heartbeat: 200 * time.Millisecond, stale: 5 * time.Second, offline: 10 * time.Second, redeliver: 3 * time.Second})
	r := c.startRunner(co, runnerOpts{name: "steady", blueprints: []string{testAgent("work")}, args: []string{"-max-concurrent", "2"}})
	a := co.admin()
	logPath := c.path("runs.log")

	const n = 8
	var runs []started
	for i := range n {
		runs = append(runs, a.startRun(map[string]any{"agent_name": "work", "parameters": map[string]any{"log": logPath, "sleep_ms": 700, "tag": fmt.Sprint(i)}}))
	}
	waitFor(t, runTimeout, "two runs in flight", func() (bool, string) {
		starts, _ := readRunLog(t, logPath)
		return len(starts) >= 2, fmt.Sprint(starts)
	})
	pending := 0
	for _, s := range runs {
		if a.session(s.SessionID).Status == orchestrator.SessionPending {
			pending++
		}
	}
	if pending == 0 {
		t.Fatalf("no run is queued at the kill; the test needs some")
	}

	co.kill(t)
	// While it is down, a run in flight finishes: its report has to wait for the restart.
	waitFor(t, runTimeout, "a run to finish while the coordinator is down", func() (bool, string) {
		_, ends := readRunLog(t, logPath)
		return len(ends) >= 1, fmt.Sprint(ends)
	})
	co.restart(t)
	restartedAt := time.Now()

	cl := co.client()
	for _, s := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		sess, err := cl.WaitSession(ctx, s.SessionID, 50*time.Second)
		cancel()
		if err != nil {
			t.Fatalf("wait for %s: %v", s.SessionID, err)
		}
		if sess.Status != orchestrator.SessionCompleted {
			t.Errorf("run %s (session %s) ended %s (%q), want completed", s.RunID, s.SessionID, sess.Status, sess.Error)
		}
	}
	took := time.Since(restartedAt)
	t.Logf("every run ended %s after the restart", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Logf("slow recovery; runner output:\n%s\ncoordinator output:\n%s", r.output(), co.proc.output())
	}
	starts, ends := readRunLog(t, logPath)
	for _, s := range runs {
		if starts[s.RunID] != 1 || ends[s.RunID] != 1 {
			t.Errorf("run %s executed %d times (finished %d times), want exactly once", s.RunID, starts[s.RunID], ends[s.RunID])
		}
	}
	if len(starts) != n {
		t.Errorf("the log has %d distinct runs, want %d: %v", len(starts), n, starts)
	}

	// The runner kept running, under the same id, and still takes work.
	if r.exited() {
		t.Fatalf("the runner exited across the restart: %s", r.status())
	}
	if ag := a.agents()["work"]; ag == nil || ag.RunnerID != r.id {
		t.Errorf("after the restart, work is %s, want owned by %s", mustJSON(t, ag), r.id)
	}
	s := a.startRun(map[string]any{"agent_name": "work", "parameters": map[string]any{"log": logPath}})
	if res := a.result(s.SessionID); res.Status != "completed" {
		t.Errorf("a run after the restart: %s", mustJSON(t, res))
	}
}

// readRunLog counts the start and end lines of each run id in a testagent log.
func readRunLog(t *testing.T, path string) (starts, ends map[string]int) {
	t.Helper()
	starts, ends = map[string]int{}, map[string]int{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, id, _ := strings.Cut(line, " ")
		switch what {
		case "start":
			starts[id]++
		case "end":
			ends[id]++
		}
	}
	return
}

// Issue 4, test 9 (the other half): a coordinator that lost its database answers the runner's heartbeat
// and poll with 404; the runner registers again — once — and takes work. Three rounds, since what goes
// wrong here is a race between the heartbeat and the poll noticing the 404.
func TestRunnerRegistersAgainWithNewCoordinator(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{heartbeat: 200 * time.Millisecond})
	r := c.startRunner(co, runnerOpts{name: "steady", blueprints: []string{testAgent("work")}})
	registered := func(what string) {
		a := co.admin()
		waitFor(t, startTimeout, what, func() (bool, string) {
			ag := a.agents()["work"]
			return ag != nil && ag.RunnerID == r.id, mustJSON(t, ag)
		})
	}
	// The runner must have its first registration's answer before that coordinator dies: one committed
	// but lost on the way back would be made again with the next coordinator, and the count below would
	// be one short.
	registered("the runner to register")
	waitFor(t, startTimeout, "the runner to log its registration", func() (bool, string) {
		n := strings.Count(r.output(), "msg=registered ")
		return n == 1, fmt.Sprintf("%d registrations logged", n)
	})
	for round := 1; round <= 3; round++ {
		co.kill(t)
		co.db = c.path(fmt.Sprintf("fresh-%d.db", round))
		co.restart(t)
		registered("the runner to register with the new coordinator")
		a := co.admin()
		s := a.startRun(map[string]any{"agent_name": "work", "parameters": map[string]any{"sleep_ms": 300}})
		if res := a.result(s.SessionID); res.Status != "completed" {
			t.Fatalf("round %d: a run on the new coordinator: %s", round, mustJSON(t, res))
		}
	}
	if r.exited() {
		t.Fatalf("the runner exited: %s", r.status())
	}
	// One registration at the start and one per new coordinator: a second one would have abandoned the
	// runs the first had been given.
	if n := strings.Count(r.output(), "msg=registered "); n != 4 {
		t.Errorf("the runner registered %d times, want 4 (once, then once per new coordinator)", n)
	}
}

// Issue 4, test 10: a stop reaches the running command and every process of its group, SIGTERM first,
// SIGKILL after the runner's -stop-grace.
func TestStopKillsProcessTree(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	const stopGrace = time.Second
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("stubborn")}, args: []string{"-stop-grace", stopGrace.String()}})
	a := co.admin()

	for _, tc := range []struct {
		name   string
		params map[string]any
		// killed: the command ignores SIGTERM, so only the SIGKILL after the grace ends it.
		killed bool
	}{
		{"ignores SIGTERM", map[string]any{"ignore_term": true, "children": 2}, true},
		{"exits on SIGTERM, grandchildren ignore it", map[string]any{"ignore_term": true, "term_exit_ms": 200, "children": 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := a.with(t)
			pidsPath := c.path(strings.ReplaceAll(tc.name, " ", "_") + ".pids")
			params := map[string]any{"pids": pidsPath, "release": c.path("never"), "stderr": "ready"}
			for k, v := range tc.params {
				params[k] = v
			}
			s := a.startRun(map[string]any{"agent_name": "stubborn", "parameters": params})
			waitFile(t, pidsPath, runTimeout)
			a.waitStatus(s.SessionID, runTimeout, "running")
			pids, err := readPids(pidsPath)
			if err != nil || len(pids) != 3 {
				t.Fatalf("pids file: %v %v, want the agent and 2 grandchildren", pids, err)
			}
			starts := map[int]uint64{}
			for _, pid := range pids {
				st, err := readStat(pid)
				if err != nil || st.state == 'Z' {
					t.Fatalf("process %d is not running before the stop: %+v %v", pid, st, err)
				}
				if st.pgid != pids[0] {
					t.Errorf("process %d is in group %d, want the agent's group %d", pid, st.pgid, pids[0])
				}
				starts[pid] = st.start
			}

			stoppedAt := time.Now()
			var sess orchestrator.Session
			a.json("POST", "/sessions/"+s.SessionID+"/stop", nil, http.StatusOK, &sess)
			if sess.ID != s.SessionID {
				t.Errorf("POST /sessions/{id}/stop answered %s", mustJSON(t, sess))
			}
			final := a.waitStatus(s.SessionID, stopGrace+runTimeout, "stopped", "failed", "completed")
			took := time.Since(stoppedAt)
			if final.Status != orchestrator.SessionStopped {
				t.Fatalf("session after the stop: %s %q, want stopped", final.Status, final.Error)
			}
			if r := final.Result; r == nil || r.ExitCode == nil || *r.ExitCode != -1 || r.Error != "stopped" {
				t.Errorf("result of the stopped session: %s, want exit_code -1 and error stopped", mustJSON(t, final.Result))
			}
			t.Logf("stopped %s after the request (stop grace %s)", took.Round(time.Millisecond), stopGrace)
			if tc.killed && took < stopGrace-50*time.Millisecond {
				t.Errorf("a command that ignores SIGTERM was stopped after %s, before the %s grace: was it SIGTERMed first?", took, stopGrace)
			}
			waitFor(t, 5*time.Second, "every process of the run to be gone", func() (bool, string) {
				var live []int
				for _, pid := range pids {
					if alive(pid, starts[pid]) {
						live = append(live, pid)
					}
				}
				return len(live) == 0, fmt.Sprint("alive: ", live)
			})
			if !tc.killed {
				var sawTerm bool
				for _, ev := range a.events(s.SessionID) {
					var d struct {
						Line string `json:"line"`
					}
					if ev.Type == orchestrator.EventStderr && ev.DecodeData(&d) == nil && strings.HasPrefix(d.Line, "got SIGTERM") {
						sawTerm = true
					}
				}
				if !sawTerm {
					t.Errorf("the command never reported SIGTERM")
				}
			}
		})
	}
}

// Issue 4, test 11: children started with async_callback that end while their parent runs reach it as
// ONE resume, whose prompt names them all — whether the parent's run completes or fails.
func TestParentCallbacks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	echo := c.startEchoRunner(co, "")
	registerOrchestrator(co)
	c.startRunner(co, runnerOpts{name: "tools", blueprints: []string{testAgent("child")}})
	a := co.admin()
	cl := co.client()

	for _, parentFails := range []bool{false, true} {
		name := "parent completes"
		if parentFails {
			name = "parent fails"
		}
		t.Run(name, func(t *testing.T) {
			a := a.with(t)
			release := c.path(strings.ReplaceAll(name, " ", "_") + ".release")
			prompt := "coordinate the children ECHO_BLOCK_UNTIL=" + release
			if parentFails {
				prompt += " ECHO_FAIL"
			}
			p := a.startRun(map[string]any{"agent_name": "orchestrator", "prompt": prompt})
			waitFor(t, runTimeout, "the parent to run", func() (bool, string) {
				recs := echo.records(t, p.SessionID)
				return len(recs) == 1, mustJSON(t, recs)
			})
			a.waitStatus(p.SessionID, runTimeout, "running")

			type kid struct {
				started
				want string
			}
			var kids []kid
			for i, params := range []map[string]any{{"tag": "one"}, {"tag": "two", "stderr": "working"}, {"tag": "three", "exit": 3}} {
				s := a.startRun(map[string]any{"agent_name": "child", "parameters": params, "mode": "async_callback", "parent_session_id": p.SessionID})
				want := "completed"
				if i == 2 {
					want = "failed"
				}
				kids = append(kids, kid{s, want})
			}
			for _, k := range kids {
				if res := a.result(k.SessionID); res.Status != k.want {
					t.Fatalf("child %s: %s, want %s", k.SessionID, mustJSON(t, res), k.want)
				}
				if sess := a.session(k.SessionID); sess.ParentSessionID != p.SessionID || !sess.Callback {
					t.Errorf("child %s: parent %q callback %v", k.SessionID, sess.ParentSessionID, sess.Callback)
				}
			}
			// The parent is still busy: nothing was delivered yet.
			if st := a.session(p.SessionID).Status; st != orchestrator.SessionRunning {
				t.Fatalf("parent is %s while it blocks, want running", st)
			}
			if recs := echo.records(t, p.SessionID); len(recs) != 1 {
				t.Fatalf("the parent was resumed while it ran: %s", mustJSON(t, recs))
			}

			touch(t, release)
			var recs []promptRecord
			waitFor(t, runTimeout, "the callback resume", func() (bool, string) {
				recs = echo.records(t, p.SessionID)
				return len(recs) >= 2, mustJSON(t, recs)
			})
			final := a.waitStatus(p.SessionID, runTimeout, "completed", "failed", "stopped")
			recs = echo.records(t, p.SessionID)
			if len(recs) != 2 {
				t.Fatalf("the parent got %d prompts, want its own and one resume: %s", len(recs), mustJSON(t, recs))
			}
			resume := recs[1]
			if resume.Mode != "resume" {
				t.Errorf("second prompt has mode %q, want resume", resume.Mode)
			}
			if !strings.Contains(resume.Prompt, "3 child sessions") {
				t.Errorf("the resume prompt does not say three children ended:\n%s", resume.Prompt)
			}
			for _, k := range kids {
				if !strings.Contains(resume.Prompt, k.SessionID) {
					t.Errorf("the resume prompt does not mention child %s:\n%s", k.SessionID, resume.Prompt)
				}
			}
			if !strings.Contains(resume.Prompt, kids[2].SessionID+" (agent child): failed") {
				t.Errorf("the resume prompt does not say child %s failed:\n%s", kids[2].SessionID, resume.Prompt)
			}
			if final.Status != orchestrator.SessionCompleted || final.CurrentRunID != resume.RunID {
				t.Errorf("parent after the resume: %s run %s, want completed by run %s", final.Status, final.CurrentRunID, resume.RunID)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			runs, err := cl.ListRuns(ctx, orchestrator.RunFilter{SessionID: p.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				got = append(got, string(r.Type)+":"+string(r.Status))
			}
			first := "start:completed"
			if parentFails {
				first = "start:failed"
			}
			if want := []string{first, "resume:completed"}; !slices.Equal(got, want) {
				t.Errorf("the parent's runs: %v, want %v", got, want)
			}
			if parentFails && len(runs) > 0 && runs[0].Error != "echo: the prompt asked to fail" {
				t.Errorf("the failed parent run's error: %q", runs[0].Error)
			}
			var callbacks []json.RawMessage
			for _, ev := range a.events(p.SessionID) {
				if ev.Type != orchestrator.EventCallback {
					continue
				}
				var d struct {
					RunID     string            `json:"run_id"`
					Callbacks []json.RawMessage `json:"callbacks"`
				}
				if err := ev.DecodeData(&d); err != nil {
					t.Fatal(err)
				}
				if d.RunID != resume.RunID || len(d.Callbacks) != 3 {
					t.Errorf("callback event for run %s with %d callbacks, want run %s with 3", d.RunID, len(d.Callbacks), resume.RunID)
				}
				callbacks = append(callbacks, ev.Data)
			}
			if len(callbacks) != 1 {
				t.Errorf("the parent has %d callback events, want 1", len(callbacks))
			}
		})
	}
}

// Issue 4, test 12: SIGTERM makes a runner stop claiming, let its run in progress finish within
// -shutdown-grace, deregister — its blueprints are gone the moment it exits — and exit 0.
func TestGracefulRunnerShutdown(t *testing.T) {
	t.Parallel()
	t.Run("run finishes within the grace", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t)
		// The run outlasts offline-after: a runner shutting down must still be alive for the coordinator.
		const offline = 2 * time.Second
		co := c.startCoordinator(coordOpts{heartbeat: 200 * time.Millisecond, stale: time.Second, offline: offline})
		r := c.startRunner(co, runnerOpts{name: "leaving", blueprints: []string{testAgent("slow")}, args: []string{"-shutdown-grace", "30s"}})
		a := co.admin()
		release := c.path("release")
		s := a.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"release": release}})
		a.waitStatus(s.SessionID, runTimeout, "running")

		termAt := time.Now()
		r.signal(t, syscall.SIGTERM)
		// Once the runner says it is shutting down, it claims nothing more: a run created now stays pending.
		waitFor(t, 10*time.Second, "the runner to start shutting down", func() (bool, string) {
			return strings.Contains(r.output(), "shutting down"), r.output()
		})
		late := a.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"tag": "late"}})

		// For longer than offline-after, the runner waits for its run and everything stays as it is.
		for time.Since(termAt) < offline+time.Second {
			if r.exited() {
				t.Fatalf("the runner exited (%s) %s after SIGTERM, while its run was in progress", r.status(), time.Since(termAt))
			}
			if sess := a.session(s.SessionID); sess.Status != orchestrator.SessionRunning {
				t.Fatalf("%s after SIGTERM the run in progress is %s (%q), want running until it finishes", time.Since(termAt).Round(time.Millisecond), sess.Status, sess.Error)
			}
			if st := a.session(late.SessionID).Status; st != orchestrator.SessionPending {
				t.Fatalf("a run created after SIGTERM is %s, want pending (a runner shutting down claims nothing)", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
		touch(t, release)
		if !r.waitExit(15 * time.Second) {
			t.Fatalf("the runner did not exit after its run finished")
		}
		if r.waitErr != nil {
			t.Errorf("runner exit: %v, want status 0", r.waitErr)
		}
		if ag := a.agents()["slow"]; ag != nil {
			t.Errorf("GET /agents right after the runner exited still lists slow: %s", mustJSON(t, ag))
		}
		if res := a.result(s.SessionID); res.Status != "completed" || res.Result == nil || len(res.Result.ResultData) == 0 {
			t.Errorf("the run in progress at SIGTERM: %s, want completed with its result", mustJSON(t, res))
		}
		if res := a.result(late.SessionID); res.Status != "failed" || !strings.Contains(res.Error, "went offline before the run started") {
			t.Errorf("the run created after SIGTERM: %s, want failed because its runner left", mustJSON(t, res))
		}
	})

	t.Run("run outlives the grace", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t)
		co := c.startCoordinator(coordOpts{})
		const grace = time.Second
		r := c.startRunner(co, runnerOpts{name: "leaving", blueprints: []string{testAgent("endless")}, args: []string{"-shutdown-grace", grace.String(), "-stop-grace", "500ms"}})
		a := co.admin()
		pidsPath := c.path("endless.pids")
		s := a.startRun(map[string]any{"agent_name": "endless", "parameters": map[string]any{"release": c.path("never"), "pids": pidsPath, "children": 1}})
		waitFile(t, pidsPath, runTimeout)
		a.waitStatus(s.SessionID, runTimeout, "running")
		pids, _ := readPids(pidsPath)

		termAt := time.Now()
		r.signal(t, syscall.SIGTERM)
		if !r.waitExit(grace + 15*time.Second) {
			t.Fatalf("the runner did not exit within its grace")
		}
		took := time.Since(termAt)
		if r.waitErr != nil {
			t.Errorf("runner exit: %v, want status 0", r.waitErr)
		}
		if ag := a.agents()["endless"]; ag != nil {
			t.Errorf("GET /agents right after the runner exited still lists endless: %s", mustJSON(t, ag))
		}
		t.Logf("runner exited %s after SIGTERM (shutdown grace %s)", took.Round(time.Millisecond), grace)
		if took < grace {
			t.Errorf("the runner exited after %s, before its %s grace", took, grace)
		}
		res := a.result(s.SessionID)
		if res.Status != "stopped" || res.Error != "runner shut down" {
			t.Errorf("the run that outlived the grace: %s, want stopped with \"runner shut down\"", mustJSON(t, res))
		}
		waitFor(t, 5*time.Second, "the stopped run's processes to be gone", func() (bool, string) {
			var live []int
			for _, pid := range pids {
				if alive(pid, 0) {
					live = append(live, pid)
				}
			}
			return len(live) == 0, fmt.Sprint("alive: ", live)
		})
	})
}
