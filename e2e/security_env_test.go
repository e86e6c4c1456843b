//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// envDumpBlueprint prints its environment, one NAME=value a line; runs may set GREETING.
const envDumpBlueprint = `{"name": "env-dump", "command": "/usr/bin/env", "allowed_env": ["GREETING"]}`

// syncRun is POST /runs in sync mode; it must be answered 201 with the session ended.
func (a *api) syncRun(body map[string]any) orchestrator.StartRunResult {
	a.t.Helper()
	body["mode"] = "sync"
	var res orchestrator.StartRunResult
	a.json("POST", "/runs?wait=60s", body, http.StatusCreated, &res)
	if !res.Status.Ended() {
		a.t.Fatalf("sync POST /runs %v answered %s, want the session ended", body, mustJSON(a.t, res))
	}
	return res
}

// envLines splits env output into a map.
func envLines(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// A run may set only the variables its blueprint allows, and never one that changes which code runs:
// each refusal is a 400 naming the variable, and nothing is created. An allowed variable reaches the
// command. A blueprint that allows a forbidden name is refused.
func TestSecurityEnvInjectionRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "r1", blueprints: []string{envDumpBlueprint}})
	a := co.admin()

	for _, tc := range []struct {
		variable string
		env      map[string]string
	}{
		{"LD_PRELOAD", map[string]string{"LD_PRELOAD": "/tmp/evil.so"}},
		{"BASH_ENV", map[string]string{"BASH_ENV": "/tmp/evil.sh"}},
		{"PATH", map[string]string{"PATH": "/tmp/evil"}},
		{"PYTHONWARNINGS", map[string]string{"PYTHONWARNINGS": "ignore::evil.Warning"}},
		{"UNLISTED", map[string]string{"UNLISTED": "x"}},
		{"BROWSER", map[string]string{"GREETING": "hi", "BROWSER": "/tmp/evil"}},
	} {
		status, body, _ := a.do("POST", "/runs", map[string]any{"agent_name": "env-dump", "mode": "sync", "metadata": map[string]any{"env": tc.env}})
		var e struct {
			Error     string   `json:"error"`
			Message   string   `json:"message"`
			Variables []string `json:"variables"`
		}
		_ = json.Unmarshal(body, &e)
		if status != http.StatusBadRequest || e.Error != "env_not_allowed" || !strings.Contains(e.Message, tc.variable) || !slices.Contains(e.Variables, tc.variable) {
			t.Errorf("metadata.env %v: %d %s; want 400 env_not_allowed naming %s", tc.env, status, body, tc.variable)
		}
	}
	var page struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	a.json("GET", "/sessions", nil, http.StatusOK, &page)
	if len(page.Sessions) != 0 {
		t.Fatalf("%d sessions after refused runs, want none: %s", len(page.Sessions), page.Sessions)
	}

	res := a.syncRun(map[string]any{"agent_name": "env-dump", "metadata": map[string]any{"env": map[string]string{"GREETING": "hello from the caller"}}})
	if res.Status != orchestrator.SessionCompleted || res.Result == nil {
		t.Fatalf("allowed run: %s", mustJSON(t, res))
	}
	if got := envLines(res.Result.ResultText)["GREETING"]; got != "hello from the caller" {
		t.Errorf("GREETING in the command's environment = %q, want the caller's value", got)
	}

	// The registry refuses a blueprint that would allow a forbidden name, and so does a runner's folder.
	status, body, _ := a.do("POST", "/agents", map[string]any{"name": "ai", "allowed_env": []string{"NODE_OPTIONS"}})
	if status != http.StatusBadRequest || !strings.Contains(string(body), "NODE_OPTIONS may never be set by a run") {
		t.Errorf("POST /agents with allowed_env [NODE_OPTIONS]: %d %s, want 400 naming it", status, body)
	}
	dir := c.path("bad", "blueprints")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"name": "bad", "command": "/usr/bin/env", "allowed_env": ["BASH_ENV"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := c.start("bad-runner", "runner", []string{"-coordinator", co.url, "-blueprints-dir", dir, "-project-dir", c.dir})
	if !bad.waitExit(startTimeout) {
		t.Fatal("a runner whose blueprint allows BASH_ENV kept running")
	}
	if out := bad.output(); bad.waitErr == nil || !strings.Contains(out, "bad.json") || !strings.Contains(out, "BASH_ENV may never be set by a run") {
		t.Errorf("runner with allowed_env [BASH_ENV]: %s, output:\n%s\nwant it to refuse to start, naming the file and the variable", bad.status(), out)
	}
}

// A runner that takes its token from ORCHESTRATOR_RUNNER_TOKEN does not hand it, nor the coordinator's
// tokens, to the processes it starts: neither by name nor by value, whatever variable carries it.
func TestSecurityEnvNoRunnerCredentials(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	co := c.startCoordinator(coordOpts{adminToken: "admin-" + suffix, clientToken: "client-" + suffix, runnerToken: "runner-" + suffix})
	secrets := map[string]string{
		"ORCHESTRATOR_RUNNER_TOKEN":   co.opts.runnerToken,
		"ORCHESTRATOR_ADMIN_TOKEN":    co.opts.adminToken,
		"ORCHESTRATOR_CLIENT_TOKEN":   co.opts.clientToken,
		"ORCHESTRATOR_WEBHOOK_SECRET": "webhook-secret-" + suffix,
	}
	env := []string{"RUNNER_TOKEN_COPY=" + co.opts.runnerToken} // the token's value under another name
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	// No -token: the runner authenticates with the variable, which proves it read it.
	c.startRunner(co, runnerOpts{name: "r1", blueprints: []string{`{"name": "env-dump", "command": "/usr/bin/env"}`}, env: env})

	res := co.admin().syncRun(map[string]any{"agent_name": "env-dump"})
	if res.Status != orchestrator.SessionCompleted || res.Result == nil {
		t.Fatalf("env-dump: %s", mustJSON(t, res))
	}
	got := envLines(res.Result.ResultText)
	if got["AGENT_SESSION_ID"] != res.SessionID {
		t.Fatalf("the dump lacks the run's own variables; output:\n%s", res.Result.ResultText)
	}
	for name, value := range secrets {
		if _, ok := got[name]; ok {
			t.Errorf("%s reached the command's environment", name)
		}
		for k, v := range got {
			if strings.Contains(v, value) {
				t.Errorf("%s=%s carries the value of %s", k, v, name)
			}
		}
	}
	if _, ok := got["RUNNER_TOKEN_COPY"]; ok {
		t.Error("RUNNER_TOKEN_COPY, holding the runner's token, reached the command's environment")
	}
}

// probeScript reports what a run's process can see of the runner that started it (its parent): its
// uid, whether it can read the runner's environment and token file, and the command line of the process
// PEEK_PID names (another runner's, say).
const probeScript = `echo "uid=$(id -u)"
echo "ppid=$PPID"
echo "home=$HOME"
if cat /proc/$PPID/environ >/dev/null 2>&1; then echo environ=readable; else echo environ=denied; fi
if cat "$TOKEN_FILE" >/dev/null 2>&1; then echo tokenfile=readable; else echo tokenfile=denied; fi
if [ -n "$PEEK_PID" ]; then echo "peek=$(tr '\0' ' ' </proc/$PEEK_PID/cmdline)"; fi
`

// -run-as nobody: the runs' processes run as nobody and can read neither the runner's environment nor its
// token file (mode 0600). Without it, they run as the runner's user and can read both — and the command
// line of every process, which is why -token leaks a token to any user of the host.
func TestSecurityEnvRunAsNobody(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("-run-as needs the runner to be root; CI runs the tests as root")
	}
	c := newCluster(t)
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	co := c.startCoordinator(coordOpts{adminToken: "admin-" + suffix, clientToken: "client-" + suffix, runnerToken: "runner-" + suffix})

	// The test's own directories are private (0700); nobody needs a project directory and a script it can
	// reach, next to a token file it must not read.
	base, err := os.MkdirTemp("", "e2e-run-as-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	project, tokenFile, script := filepath.Join(base, "project"), filepath.Join(base, "runner.token"), filepath.Join(base, "probe.sh")
	for _, err := range []error{
		os.Chmod(base, 0o755),
		os.Mkdir(project, 0o755),
		os.WriteFile(tokenFile, []byte(co.opts.runnerToken+"\n"), 0o600),
		os.WriteFile(script, []byte(probeScript), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	probe := func(name string) string {
		return fmt.Sprintf(`{"name": %q, "command": %q, "env": {"TOKEN_FILE": %q}, "allowed_env": ["PEEK_PID"]}`, name, "/bin/sh "+script, tokenFile)
	}
	nobodyRunner := c.startRunner(co, runnerOpts{name: "as-nobody", projectDir: project, blueprints: []string{probe("probe-nobody")},
		args: []string{"-token-file", tokenFile, "-run-as", "nobody"}})
	rootRunner := c.startRunner(co, runnerOpts{name: "as-root", projectDir: project + "-root", blueprints: []string{probe("probe-root")},
		token: co.opts.runnerToken})
	a := co.admin()
	run := func(agent string, peek int) map[string]string {
		t.Helper()
		res := a.syncRun(map[string]any{"agent_name": agent, "metadata": map[string]any{"env": map[string]string{"PEEK_PID": strconv.Itoa(peek)}}})
		if res.Status != orchestrator.SessionCompleted || res.Result == nil {
			t.Fatalf("%s: %s", agent, mustJSON(t, res))
		}
		return envLines(res.Result.ResultText)
	}

	got := run("probe-nobody", rootRunner.pid())
	want := map[string]string{"uid": "65534", "ppid": strconv.Itoa(nobodyRunner.pid()), "environ": "denied", "tokenfile": "denied"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("as nobody: %s=%q, want %q (probe output %v)", k, got[k], v, got)
		}
	}
	if got["home"] == "" || got["home"] == os.Getenv("HOME") {
		t.Errorf("as nobody: HOME=%q, want nobody's", got["home"])
	}
	// The command line of every process is world-readable: a -token flag is anyone's to read.
	if !strings.Contains(got["peek"], co.opts.runnerToken) {
		t.Errorf("as nobody, the root runner's command line reads %q: want the -token value visible (the reason for -token-file)", got["peek"])
	}

	got = run("probe-root", nobodyRunner.pid())
	want = map[string]string{"uid": "0", "ppid": strconv.Itoa(rootRunner.pid()), "environ": "readable", "tokenfile": "readable"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("as the runner's own user: %s=%q, want %q (probe output %v)", k, got[k], v, got)
		}
	}
	if strings.Contains(got["peek"], co.opts.runnerToken) {
		t.Errorf("the -token-file runner's command line %q carries its token", got["peek"])
	}
}

// Output larger than an HTTP request body but within the executor's cap ends the run, within the sync
// wait: in full when it fits the coordinator's result limit, cut to fit with an output_truncated event
// when, as JSON, it does not (3 MB of control characters are 18 MB escaped).
func TestSecurityOutputLarge(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	var blueprints []string
	for name, script := range map[string]string{
		"big-text":     "yes x | head -c 3000000\n",
		"big-controls": "head -c 3000000 /dev/zero | tr '\\000' '\\001'\n",
	} {
		path := c.path(name + ".sh")
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		blueprints = append(blueprints, fmt.Sprintf(`{"name": %q, "command": %q}`, name, "/bin/sh "+path))
	}
	c.startRunner(co, runnerOpts{name: "r1", blueprints: blueprints})
	a := co.admin()

	res := a.syncRun(map[string]any{"agent_name": "big-text"})
	if res.Status != orchestrator.SessionCompleted || res.Result == nil || len(res.Result.ResultText) != 3_000_000 || res.Result.Truncated {
		t.Errorf("3 MB of text: status %s, error %q, %d bytes of text, truncated %v; want completed with all of it",
			res.Status, res.Error, len(resultText(res)), res.Result != nil && res.Result.Truncated)
	}

	start := time.Now()
	res = a.syncRun(map[string]any{"agent_name": "big-controls"})
	if res.Status != orchestrator.SessionCompleted || res.Result == nil || !res.Result.Truncated {
		t.Fatalf("3 MB of control characters: status %s, error %q; want completed and truncated (after %s)", res.Status, res.Error, time.Since(start))
	}
	enc, _ := json.Marshal(res.Result)
	if text := res.Result.ResultText; len(enc) > (orchestrator.Limits{}).WithDefaults().MaxResultBytes || len(text) == 0 || strings.Trim(text, "\x01") != "" {
		t.Errorf("truncated result: %d bytes as JSON, %d of text; want a prefix of the output within %d bytes", len(enc), len(text), orchestrator.Limits{}.WithDefaults().MaxResultBytes)
	}
	var ev map[string]any
	for _, e := range a.events(res.SessionID) {
		if e.Type == orchestrator.EventOutputTruncated {
			_ = e.DecodeData(&ev)
		}
	}
	if ev == nil || ev["by"] != "runner" || ev["result_bytes"].(float64) <= ev["limit_bytes"].(float64) {
		t.Errorf("output_truncated event %v, want the runner's, with the sizes", ev)
	}
}

func resultText(res orchestrator.StartRunResult) string {
	if res.Result == nil {
		return ""
	}
	return res.Result.ResultText
}
