//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// TestStaleRunnerIdentityTakeoverRefused: a runner that falls silent (SIGSTOP) long enough to be stale still
// owns its identity — a registration under its id with the shared runner token and no secret, or a wrong
// one, is 409 and changes nothing; the runner comes back (SIGCONT) to its run and its agent. When its
// process is gone for good (SIGKILL), a successor with the same hostname, project directory and profile
// waits, refused, until an admin removes the old runner, and then registers under the same id at once.
func TestStaleRunnerIdentityTakeoverRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	// Stale after a second of silence; offline far beyond the test, so that only the secret or an admin can
	// hand the identity over.
	co := c.startCoordinator(coordOpts{adminToken: secAdmin, clientToken: secClient, runnerToken: secRunner,
		heartbeat: 200 * time.Millisecond, stale: time.Second, offline: 10 * time.Minute})
	victim := c.startRunner(co, runnerOpts{name: "victim", token: secRunner, blueprints: []string{testAgent("silent-task")}})
	admin := co.api(secAdmin)
	runnerInfo := func() *orchestrator.RunnerInfo {
		for _, ri := range admin.runners() {
			if ri.ID == victim.id {
				return ri
			}
		}
		t.Fatalf("runner %s is not listed", victim.id)
		return nil
	}
	release := c.path("release")
	s := blockingRun(t, c, co, "silent-task", release)
	before := runnerInfo()

	victim.signal(t, syscall.SIGSTOP)
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = syscall.Kill(victim.pid(), syscall.SIGCONT)
		}
	})
	waitFor(t, runTimeout, "the silent runner to be stale", func() (bool, string) {
		ri := runnerInfo()
		return ri.Status == orchestrator.RunnerStale, string(ri.Status)
	})

	hijack := map[string]any{
		"hostname": before.Hostname, "project_dir": before.ProjectDir, "executor_type": before.ExecutorType,
		"executor_profile": before.ExecutorProfile, "blueprints": []json.RawMessage{json.RawMessage(testAgent("silent-task"))},
	}
	for _, secret := range []string{"", ids.RunnerSecret + "guessed"} {
		hijack["runner_secret"] = secret
		status, body, _ := co.api(secRunner).do("POST", "/runner/register", hijack)
		if status != http.StatusConflict || errorCode(t, body) != "runner_identity_in_use" {
			t.Fatalf("registration over a stale runner (secret %q): %d %s, want 409 runner_identity_in_use", secret, status, body)
		}
		var e struct {
			RunnerID     string `json:"runner_id"`
			RunnerStatus string `json:"runner_status"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.RunnerID != victim.id || e.RunnerStatus != "stale" {
			t.Errorf("409 body %s: want runner_id %s and runner_status stale", body, victim.id)
		}
	}
	if ri := runnerInfo(); ri.Status != orchestrator.RunnerStale || !ri.RegisteredAt.Equal(before.RegisteredAt) {
		t.Fatalf("the stale runner after the refused registrations: %s, was %s", mustJSON(t, ri), mustJSON(t, before))
	}
	if ag := admin.agents()["silent-task"]; ag == nil || ag.RunnerID != victim.id {
		t.Fatalf("silent-task after the refused registrations: %s, want owned by %s", mustJSON(t, ag), victim.id)
	}
	if sess := admin.session(s.SessionID); sess.Status != orchestrator.SessionRunning {
		t.Fatalf("the stale runner's session after the refused registrations: %s (%q)", sess.Status, sess.Error)
	}

	// The runner comes back to what it holds.
	victim.signal(t, syscall.SIGCONT)
	stopped = false
	waitFor(t, runTimeout, "the runner to be online again", func() (bool, string) {
		ri := runnerInfo()
		return ri.Status == orchestrator.RunnerOnline, string(ri.Status)
	})
	touch(t, release)
	if res := co.api(secClient).result(s.SessionID); res.Status != "completed" {
		t.Fatalf("the runner's run after it came back: %s", mustJSON(t, res))
	}
	if n := strings.Count(victim.output(), "msg=registered "); n != 1 {
		t.Errorf("the runner registered %d times, want once:\n%s", n, victim.output())
	}

	// Recovery: the runner's process is gone; its successor (same host, project directory and profile, no
	// secret) is refused until an admin removes the old runner.
	if !victim.kill(10 * time.Second) {
		t.Fatalf("the runner did not die of SIGKILL")
	}
	successor := c.start("successor", "runner", []string{
		"-coordinator", co.url, "-token", secRunner,
		"-blueprints-dir", victim.blueprintsDir, "-project-dir", victim.projectDir,
		"-max-concurrent", "4", "-stop-grace", "1s", "-shutdown-grace", "10s",
	}, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "ORCHESTRATOR_RUNNER_TOKEN=")
	waitFor(t, startTimeout, "the successor to be refused the identity", func() (bool, string) {
		if successor.exited() {
			t.Fatalf("the successor exited (%s):\n%s", successor.status(), successor.output())
		}
		return strings.Contains(successor.output(), "holds this runner's identity"), successor.output()
	})
	if strings.Contains(successor.output(), "msg=registered ") {
		t.Fatalf("the successor registered over a runner that is not offline:\n%s", successor.output())
	}
	admin.json("DELETE", "/runners/"+victim.id, nil, http.StatusNoContent, nil)
	if id := c.waitRunnerOnline(co, successor, victim.projectDir); id != victim.id {
		t.Fatalf("the successor registered as %s, want the removed runner's id %s", id, victim.id)
	}
	s2 := co.api(secClient).startRun(map[string]any{"agent_name": "silent-task", "parameters": map[string]any{"release": release}})
	if res := co.api(secClient).result(s2.SessionID); res.Status != "completed" {
		t.Fatalf("a run on the successor: %s", mustJSON(t, res))
	}
}
