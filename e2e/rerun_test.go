//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// TestRerun: on the real binaries, a failed session re-run with ao and a changed parameter completes as
// a new session that names the original; a live session cannot be re-run (409); the bulk re-run lists
// the failed sessions on a dry run, changing nothing, and then re-runs exactly those.
func TestRerun(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	api := a.co.api(a.client).with(t)

	_, stderr, code := a.ao("run", "slow", "-p", "exit=3", "-p", "tag=one")
	if code != 3 {
		t.Fatalf("ao run exit=3: exit %d; stderr:\n%s", code, stderr)
	}
	first := sessionIDIn(t, stderr)
	_, stderr, _ = a.ao("run", "slow", "-p", "exit=4", "-p", "tag=two")
	second := sessionIDIn(t, stderr)
	if _, stderr, code = a.ao("run", "slow", "-p", "tag=fine"); code != 0 {
		t.Fatalf("ao run: exit %d; stderr:\n%s", code, stderr)
	}

	// One session, a parameter changed: it follows the new session like ao run, and exits 0.
	stdout, stderr, code := a.ao("rerun", first, "-p", "exit=0")
	if code != 0 {
		t.Fatalf("ao rerun %s -p exit=0: exit %d; stderr:\n%s", first, code, stderr)
	}
	var out agentOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.SessionID == first {
		t.Fatalf("ao rerun stdout is not the new session's result (%v):\n%s", err, stdout)
	}
	re := api.session(out.SessionID)
	var params map[string]any
	_ = json.Unmarshal(re.Parameters, &params)
	if re.RerunOf != first || re.Status != orchestrator.SessionCompleted || params["exit"] != float64(0) || params["tag"] != "one" {
		t.Errorf("the re-run = rerun_of %q status %s parameters %s; want rerun_of %s, completed, exit 0 and the original's tag", re.RerunOf, re.Status, re.Parameters, first)
	}

	// A live session: 409 session_active, nothing started.
	release := a.path("release")
	live := api.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"release": release}})
	status, body, _ := api.do("POST", "/sessions/"+live.SessionID+"/rerun", nil)
	if status != http.StatusConflict || !strings.Contains(string(body), `"session_active"`) {
		t.Errorf("POST /sessions/{live}/rerun = %d %s, want 409 session_active", status, body)
	}
	touch(t, release)
	api.result(live.SessionID)

	// Bulk, dry run first: the two failed sessions, newest first; nothing starts.
	before := len(a.co.admin().sessionsList())
	stdout, stderr, code = a.ao("rerun", "--failed", "--agent", "slow", "--since", "1h", "--dry-run")
	if code != 0 || stdout != second+"\n"+first+"\n" || !strings.Contains(stderr, "2 sessions would be re-run") {
		t.Fatalf("ao rerun --dry-run: exit %d, stdout %q, stderr %q; want %s then %s", code, stdout, stderr, second, first)
	}
	if after := len(a.co.admin().sessionsList()); after != before {
		t.Fatalf("a dry run changed the sessions: %d before, %d after", before, after)
	}
	var batch orchestrator.RerunBatch
	api.json("POST", "/sessions/rerun", map[string]any{"status": []string{"failed"}, "agent_name": "slow", "dry_run": true}, http.StatusOK, &batch)
	if batch.Count != 2 || len(batch.SessionIDs) != 2 || batch.SessionIDs[0] != second {
		t.Errorf("POST /sessions/rerun dry_run = %+v, want the 2 failed sessions", batch)
	}

	// Then for real: each re-run names its original, and runs (and fails again, as its parameters say).
	stdout, stderr, code = a.ao("rerun", "--failed", "--agent", "slow", "--since", "1h", "--json")
	if code != 0 {
		t.Fatalf("ao rerun --failed: exit %d; stderr:\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &batch); err != nil || batch.Count != 2 || len(batch.Reruns) != 2 {
		t.Fatalf("ao rerun --failed --json = %s (%v), want 2 re-runs", stdout, err)
	}
	wantExit := []int{4, 3} // second's, first's
	for i, want := range []string{second, first} {
		r := batch.Reruns[i]
		if r.RerunOf != want || batch.SessionIDs[i] != want {
			t.Errorf("re-run %d = %+v, want one of %s", i, r, want)
		}
		if res := api.result(r.SessionID); res.Status != "failed" || res.Result == nil || res.Result.ExitCode == nil || *res.Result.ExitCode != wantExit[i] {
			t.Errorf("re-run of %s ended %+v, want failed as the original did", want, res)
		}
		if s := api.session(r.SessionID); s.RerunOf != want {
			t.Errorf("session %s has rerun_of %q, want %s", r.SessionID, s.RerunOf, want)
		}
	}
	if after := len(a.co.admin().sessionsList()); after != before+2 {
		t.Errorf("the bulk re-run made %d sessions, want 2", after-before)
	}

	// Bad input: exit 2, and a 400 that names the field.
	if _, stderr, code = a.ao("rerun", "--status", "running"); code != 2 {
		t.Errorf("ao rerun --status running: exit %d, want 2; stderr %q", code, stderr)
	}
	status, body, _ = api.do("POST", "/sessions/rerun", map[string]any{"limit": 5000})
	if status != http.StatusBadRequest || !strings.Contains(string(body), `"limit"`) {
		t.Errorf("POST /sessions/rerun limit 5000 = %d %s, want 400 naming limit", status, body)
	}
}
