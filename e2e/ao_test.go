//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentorchestrator/orchestrator"
)

// ---- running ao ----

// lockedBuffer is an io.Writer that a test may read while a process writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// aoProc is a running ao, its stdout and stderr collected as they come.
type aoProc struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
}

// aoEnv is the environment of ao against co with token: the test's, less whatever would change how ao
// talks or draws (ORCHESTRATOR_*, NO_COLOR, TERM, COLUMNS), plus the markers that find leftovers.
func (c *cluster) aoEnv(co *coordinator, token string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ORCHESTRATOR_") || name == "NO_COLOR" || name == "TERM" || name == "COLUMNS" {
			continue
		}
		env = append(env, kv)
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	env = append(env, runMarker, c.marker, "GORACE="+gorace, "ORCHESTRATOR_URL="+co.url, "ORCHESTRATOR_TOKEN="+token)
	return append(env, extra...)
}

// startAO starts ao with args against co, with stdout and stderr as pipes (not a terminal).
func (c *cluster) startAO(co *coordinator, token string, args ...string) *aoProc {
	c.t.Helper()
	p := &aoProc{args: args, done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(binDir, "ao"), args...)
	p.cmd.Env = c.aoEnv(co, token)
	p.cmd.Dir = c.dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("start ao %v: %v", args, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t := c.t
	t.Cleanup(func() {
		if !p.exited() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("ao %v reported a data race:\n%s", args, p.stderr.String())
		}
	})
	return p
}

func (p *aoProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for ao to exit and returns its exit code.
func (p *aoProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(runTimeout):
		t.Fatalf("ao %v did not exit within %s; stdout:\n%s\nstderr:\n%s", p.args, runTimeout, p.stdout.String(), p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitStderr waits until ao's stderr contains s.
func (p *aoProc) waitStderr(t *testing.T, s string) {
	t.Helper()
	waitFor(t, runTimeout, fmt.Sprintf("ao %v to write %q on stderr", p.args, s), func() (bool, string) {
		if p.exited() {
			t.Fatalf("ao %v exited (%s) before writing %q; stdout:\n%s\nstderr:\n%s", p.args, p.cmd.ProcessState, s, p.stdout.String(), p.stderr.String())
		}
		return strings.Contains(p.stderr.String(), s), p.stderr.String()
	})
}

// waitStdout waits until ao's stdout contains s.
func (p *aoProc) waitStdout(t *testing.T, s string) {
	t.Helper()
	waitFor(t, runTimeout, fmt.Sprintf("ao %v to write %q on stdout", p.args, s), func() (bool, string) {
		if p.exited() {
			t.Fatalf("ao %v exited (%s) before writing %q; stdout:\n%s\nstderr:\n%s", p.args, p.cmd.ProcessState, s, p.stdout.String(), p.stderr.String())
		}
		return strings.Contains(p.stdout.String(), s), p.stdout.String()
	})
}

// runAO runs ao to its end: stdout, stderr and the exit code.
func (c *cluster) runAO(co *coordinator, token string, args ...string) (string, string, int) {
	c.t.Helper()
	p := c.startAO(co, token, args...)
	code := p.wait(c.t)
	return p.stdout.String(), p.stderr.String(), code
}

// aoCluster is a coordinator with tokens and a runner of testagent blueprints named slow.
type aoCluster struct {
	*cluster
	co     *coordinator
	client string // the client token
	admin  string
}

func newAOCluster(t *testing.T) *aoCluster {
	t.Helper()
	c := newCluster(t)
	o := coordOpts{adminToken: "admin-" + strings.Repeat("a", 24), clientToken: "client-" + strings.Repeat("c", 24), runnerToken: "runner-" + strings.Repeat("r", 24)}
	co := c.startCoordinator(o)
	c.startRunner(co, runnerOpts{name: "runner", blueprints: []string{testAgent("slow")}, token: o.runnerToken})
	return &aoCluster{cluster: c, co: co, client: o.clientToken, admin: o.adminToken}
}

// ao runs ao with the client token.
func (a *aoCluster) ao(args ...string) (string, string, int) {
	a.t.Helper()
	return a.runAO(a.co, a.client, args...)
}

// sessionIDIn finds the session id ao printed.
func sessionIDIn(t *testing.T, s string) string {
	t.Helper()
	id := regexp.MustCompile(`ses_[0-9a-z]{26}`).FindString(s)
	if id == "" {
		t.Fatalf("no session id in %q", s)
	}
	return id
}

// ---- the tests ----

// TestAORunFollowsLive: ao run prints the command's stderr lines while it runs — the first one while the
// command still waits for a file only the test creates after seeing that line — then the result, and
// exits 0.
func TestAORunFollowsLive(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	release := a.path("release")
	p := a.startAO(a.co, a.client, "run", "slow", "-p", "stderr=first line", "-p", "release="+release, "-p", "tag=live")
	p.waitStderr(t, "\nfirst line\n")
	// The line is out; the run is not over until the test says so.
	sid := sessionIDIn(t, p.stderr.String())
	if st := a.co.admin().session(sid).Status; st != orchestrator.SessionRunning || p.exited() {
		t.Fatalf("after the first line: session %s, ao exited %v; want running", st, p.exited())
	}
	if out := p.stdout.String(); out != "" {
		t.Fatalf("stdout before the end: %q", out)
	}
	touch(t, release)
	if code := p.wait(t); code != 0 {
		t.Fatalf("ao run: exit %d; stderr:\n%s", code, p.stderr.String())
	}
	// stdout: result_data, indented.
	var res agentOutput
	if err := json.Unmarshal([]byte(p.stdout.String()), &res); err != nil || res.SessionID != sid || !strings.Contains(p.stdout.String(), "\n  \"session_id\": ") {
		t.Fatalf("stdout is not the indented result_data of %s (%v):\n%s", sid, err, p.stdout.String())
	}
	// stderr: plain lines (a pipe), in order, ending with the summary.
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	want := []string{"ao: session " + sid + " (slow)", "[run_started] run run_", "first line", "✓ completed in "}
	if len(lines) != len(want) {
		t.Fatalf("stderr lines:\n%s\nwant %d lines like %q", p.stderr.String(), len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("stderr line %d = %q, want %q…", i, lines[i], w)
		}
	}
	if strings.Contains(p.stderr.String(), "\x1b") {
		t.Errorf("escape sequences on a pipe: %q", p.stderr.String())
	}
}

// TestAORunExitCodes: a command that exits 3 makes ao exit 3; parameters the schema refuses make it
// exit 2 with every error and its path, before anything runs.
func TestAORunExitCodes(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)

	stdout, stderr, code := a.ao("run", "slow", "-p", "exit=3", "-p", "stderr=about to fail")
	if code != 3 {
		t.Fatalf("a command exiting 3: ao exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "\nabout to fail\n") || !regexp.MustCompile(`\n✗ failed in [0-9.]+m?s \(exit 3\): `).MatchString(stderr) {
		t.Errorf("stderr:\n%s", stderr)
	}
	_ = stdout

	sessionsBefore := len(a.co.admin().sessionsList())
	stdout, stderr, code = a.ao("run", "slow", "-p", "children=99", "-p", "sleep_ms=-1", "-p", "ignore_term=maybe", "-p", "bogus=1")
	if code != 2 {
		t.Fatalf("invalid parameters: exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"ao: the parameters do not match slow's parameters_schema:\n",
		"\n  $: ", "'bogus'",
		"\n  $.children: ",
		"\n  $.ignore_term: ",
		"\n  $.sleep_ms: ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
	if n := len(a.co.admin().sessionsList()); n != sessionsBefore {
		t.Errorf("invalid parameters created a session (%d → %d)", sessionsBefore, n)
	}
	// Usage errors are 2 too; a missing agent is 1.
	if _, stderr, code := a.ao("run"); code != 2 || !strings.Contains(stderr, "ao: ") {
		t.Errorf("ao run without an agent: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := a.ao("run", "nope"); code != 1 || !strings.Contains(stderr, `"nope"`) {
		t.Errorf("ao run of a missing agent: exit %d, stderr %q", code, stderr)
	}
}

// sessionsList is GET /sessions (first page).
func (a *api) sessionsList() []*orchestrator.Session {
	a.t.Helper()
	var page orchestrator.SessionPage
	a.json("GET", "/sessions?limit=1000", nil, 200, &page)
	return page.Sessions
}

// TestAOLogsFollow: ao logs -f on a running session prints its events as they come, follows it to the
// end and exits 0 — in text and as JSON Lines.
func TestAOLogsFollow(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	api := a.co.api(a.client)
	release := a.path("release")
	s := api.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"stderr": "waiting for the file", "release": release}})
	text := a.startAO(a.co, a.client, "logs", "-f", s.SessionID)
	jsonl := a.startAO(a.co, a.client, "logs", "-f", "--json", s.SessionID)
	text.waitStdout(t, "waiting for the file\n")
	jsonl.waitStdout(t, `"line":"waiting for the file"`)
	if text.exited() || jsonl.exited() {
		t.Fatal("ao logs -f exited while the session runs")
	}
	touch(t, release)
	for _, p := range []*aoProc{text, jsonl} {
		if code := p.wait(t); code != 0 {
			t.Fatalf("ao %v: exit %d; stderr:\n%s", p.args, code, p.stderr.String())
		}
	}
	evs := api.events(s.SessionID)
	// Text: one line per event, the last the run's end.
	lines := strings.Split(strings.TrimSpace(text.stdout.String()), "\n")
	if len(lines) != len(evs) || !strings.Contains(lines[len(lines)-1], "run_ended    run "+s.RunID+" completed") {
		t.Errorf("ao logs -f printed %d lines for %d events:\n%s", len(lines), len(evs), text.stdout.String())
	}
	if !strings.Contains(text.stderr.String(), "ao: session "+s.SessionID+" completed") {
		t.Errorf("stderr %q", text.stderr.String())
	}
	// JSON Lines: every event once, in order, as the API has them.
	sc := bufio.NewScanner(strings.NewReader(jsonl.stdout.String()))
	var n int
	for sc.Scan() {
		var ev orchestrator.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %q: %v", n+1, sc.Text(), err)
		}
		if n >= len(evs) || ev.Seq != evs[n].Seq || ev.Type != evs[n].Type {
			t.Fatalf("line %d = %s, want event %d of %d", n+1, sc.Text(), n+1, len(evs))
		}
		n++
	}
	if n != len(evs) || jsonl.stderr.String() != "" {
		t.Errorf("--json: %d lines for %d events; stderr %q", n, len(evs), jsonl.stderr.String())
	}
}

// TestAOLogsFollowAcrossRestart: the coordinator is SIGKILLed and restarted while ao logs -f follows a
// session; ao says it lost the coordinator, picks up from the last event it had when it is back, and
// prints every event exactly once.
func TestAOLogsFollowAcrossRestart(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	api := a.co.api(a.client)
	release := a.path("release")
	s := api.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"stderr": "before the restart", "release": release}})
	p := a.startAO(a.co, a.client, "logs", "-f", "--json", s.SessionID)
	p.waitStdout(t, `"line":"before the restart"`)
	a.co.kill(t)
	p.waitStderr(t, "lost the coordinator")
	touch(t, release) // the run ends while the coordinator is down; its runner reports it after the restart
	a.co.restart(t)
	if code := p.wait(t); code != 0 {
		t.Fatalf("ao logs -f: exit %d; stderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "ao: reconnected") {
		t.Errorf("stderr:\n%s", p.stderr.String())
	}
	evs := api.events(s.SessionID)
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("ao printed %d events, the session has %d:\n%s", len(lines), len(evs), p.stdout.String())
	}
	for i, line := range lines {
		var ev orchestrator.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq != evs[i].Seq {
			t.Fatalf("line %d = %s (%v), want event %d", i+1, line, err, evs[i].Seq)
		}
	}
	if last := evs[len(evs)-1]; last.Type != orchestrator.EventRunEnded {
		t.Errorf("the last event is %s, want run_ended", last.Type)
	}
}

// TestAOStop: ao stop stops a sleeping run and waits until it has stopped.
func TestAOStop(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	api := a.co.api(a.client)
	s := api.startRun(map[string]any{"agent_name": "slow", "parameters": map[string]any{"sleep_ms": 300000}})
	api.waitStatus(s.SessionID, runTimeout, "running")
	stdout, stderr, code := a.ao("stop", s.SessionID)
	if code != 0 || stdout != "session "+s.SessionID+" stopped\n" {
		t.Fatalf("ao stop: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if st := api.session(s.SessionID).Status; st != orchestrator.SessionStopped {
		t.Fatalf("after ao stop the session is %s", st)
	}
	stdout, _, code = a.ao("stop", s.SessionID)
	if code != 0 || !strings.Contains(stdout, "had already ended: stopped") {
		t.Errorf("ao stop again: exit %d, %q", code, stdout)
	}
}

// TestAORunInterruptPiped: Ctrl-C (SIGINT) while ao run follows through a pipe leaves the session running
// and says how to follow or stop it; with --stop-on-interrupt it stops the session.
func TestAORunInterruptPiped(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	api := a.co.api(a.client)

	p := a.startAO(a.co, a.client, "run", "slow", "-p", "stderr=started", "-p", "release="+a.path("never"))
	p.waitStderr(t, "\nstarted\n")
	sid := sessionIDIn(t, p.stderr.String())
	_ = p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != 130 {
		t.Fatalf("exit %d after Ctrl-C, want 130; stderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "ao logs -f "+sid) || !strings.Contains(p.stderr.String(), "ao stop "+sid) {
		t.Errorf("stderr does not say how to follow or stop it:\n%s", p.stderr.String())
	}
	if st := api.session(sid).Status; st != orchestrator.SessionRunning {
		t.Errorf("the session is %s after ao left it, want running", st)
	}
	// Stop it, as ao said: its command would otherwise outlive the test.
	if _, stderr, code := a.ao("stop", sid); code != 0 {
		t.Fatalf("ao stop: exit %d; %s", code, stderr)
	}

	p = a.startAO(a.co, a.client, "run", "slow", "--stop-on-interrupt", "-p", "stderr=started", "-p", "release="+a.path("never"))
	p.waitStderr(t, "\nstarted\n")
	sid = sessionIDIn(t, p.stderr.String())
	_ = p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != 130 {
		t.Fatalf("--stop-on-interrupt: exit %d, want 130; stderr:\n%s", code, p.stderr.String())
	}
	if st := api.session(sid).Status; st != orchestrator.SessionStopped {
		t.Errorf("--stop-on-interrupt: the session is %s, want stopped", st)
	}
	if !strings.Contains(p.stderr.String(), "■ stopped after") {
		t.Errorf("--stop-on-interrupt: stderr:\n%s", p.stderr.String())
	}
}

// TestAOJSON: --json prints one JSON document on stdout for every command (JSON Lines for logs -f), with
// the data the command is about.
func TestAOJSON(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	a.startEchoRunner(a.co, a.co.opts.runnerToken)
	registerOrchestrator(a.co)
	blueprint := a.path("reviewer.json")
	if err := os.WriteFile(blueprint, []byte(`{"name":"reviewer","type":"agent","description":"Reviews code."}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// doc runs ao --json and decodes its stdout as exactly one document.
	doc := func(token string, wantCode int, args ...string) map[string]any {
		t.Helper()
		stdout, stderr, code := a.runAO(a.co, token, append(args, "--json")...)
		if code != wantCode {
			t.Fatalf("ao %v --json: exit %d, want %d; stdout:\n%s\nstderr:\n%s", args, code, wantCode, stdout, stderr)
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("ao %v --json: stdout is not one JSON object: %v\n%s", args, err, stdout)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			t.Fatalf("ao %v --json: more than one document:\n%s", args, stdout)
		}
		return m
	}
	list := func(m map[string]any, key string) []any {
		l, _ := m[key].([]any)
		return l
	}

	if agents := list(doc(a.client, 0, "agents"), "agents"); len(agents) != 2 {
		t.Errorf("agents: %v", agents)
	}
	if m := doc(a.admin, 0, "agent", "add", blueprint); m["name"] != "reviewer" || m["type"] != "agent" {
		t.Errorf("agent add: %v", m)
	}
	if m := doc(a.client, 0, "agents", "show", "slow"); m["name"] != "slow" || m["parameters_schema"] == nil {
		t.Errorf("agents show: %v", m)
	}
	run := doc(a.client, 0, "run", "slow", "-p", "tag=json")
	sid, _ := run["session_id"].(string)
	result, _ := run["result"].(map[string]any)
	if run["status"] != "completed" || sid == "" || result == nil || result["result_data"] == nil {
		t.Errorf("run: %v", run)
	}
	if m := doc(a.client, 0, "run", "slow", "--async"); m["status"] != "pending" || m["session_id"] == nil {
		t.Errorf("run --async: %v", m)
	}
	if m := doc(a.client, 2, "run", "slow", "-p", "children=99"); m["error"] != "parameter_validation_failed" || len(list(m, "validation_errors")) != 1 {
		t.Errorf("run with invalid parameters: %v", m)
	}
	if m := doc(a.client, 0, "sessions"); len(list(m, "sessions")) < 2 {
		t.Errorf("sessions: %v", m)
	}
	if m := doc(a.client, 0, "show", sid); m["session_id"] != sid || m["status"] != "completed" {
		t.Errorf("show: %v", m)
	}
	if m := doc(a.client, 0, "logs", sid); len(list(m, "events")) < 2 || m["last_seq"] == nil {
		t.Errorf("logs: %v", m)
	}
	if m := doc(a.client, 0, "stop", sid); m["session_id"] != sid {
		t.Errorf("stop: %v", m)
	}
	if m := doc(a.admin, 0, "runners"); len(list(m, "runners")) != 2 {
		t.Errorf("runners: %v", m)
	}
	if m := doc(a.client, 1, "runners"); m["error"] != "forbidden" {
		t.Errorf("runners with a client token: %v", m)
	}
	ai := doc(a.client, 0, "run", "orchestrator", "--prompt", "hello")
	aiSession, _ := ai["session_id"].(string)
	if r, _ := ai["result"].(map[string]any); ai["status"] != "completed" || r["result_text"] != "echo: hello" {
		t.Errorf("run of an AI agent: %v", ai)
	}
	if m := doc(a.client, 0, "resume", aiSession, "--prompt", "again"); m["session_id"] != aiSession || m["status"] != "completed" {
		t.Errorf("resume: %v", m)
	} else if r, _ := m["result"].(map[string]any); r["result_text"] != "echo: again" {
		t.Errorf("resume result: %v", m)
	}
	if m := doc(a.admin, 0, "agent", "rm", "reviewer"); m["deleted"] != true {
		t.Errorf("agent rm: %v", m)
	}
	// logs -f --json is JSON Lines: see TestAOLogsFollow.
}

// ---- a pseudo-terminal ----

// TestAORunTerminal runs ao run on a pseudo-terminal, as a person would: the status line with its
// spinner and the elapsed time while the command runs, each stderr line as it comes (with its elapsed
// time), then the summary and the result. The raw capture, made readable, and the screen it renders
// to are logged and saved in the test's temporary directory.
func TestAORunTerminal(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	release := a.path("release")
	term := a.startAOTerminal(t, "run", "slow", "-p", "stderr=first line", "-p", "release="+release)
	term.waitFor(t, "first line")
	// The spinner turns while the command waits: two different frames after the line.
	term.waitFor(t, "running")
	waitFor(t, runTimeout, "the spinner to turn", func() (bool, string) {
		out := term.output()
		after := out[strings.Index(out, "first line"):]
		frames := 0
		for _, f := range []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"} {
			if strings.Contains(after, f+" running") {
				frames++
			}
		}
		return frames >= 2, readable(after)
	})
	if term.exited() {
		t.Fatal("ao exited before the release")
	}
	touch(t, release)
	code := term.wait(t)
	raw := term.output()
	screen := render(raw)
	dir := t.TempDir()
	for name, content := range map[string]string{"ao-run.raw": raw, "ao-run.txt": readable(raw), "ao-run.screen": screen} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("terminal output, escape sequences made readable (saved in %s):\n%s", filepath.Join(dir, "ao-run.txt"), readable(raw))
	t.Logf("the screen it renders to (saved in %s):\n%s", filepath.Join(dir, "ao-run.screen"), screen)
	if code != 0 {
		t.Fatalf("ao run on a terminal: exit %d", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\r\x1b\[K\x1b\[33m[⠋-⠿] pending\x1b\[0m [0-9.]+m?s`),                 // the status line, coloured
		regexp.MustCompile(`\r\x1b\[K\x1b\[36m[⠋-⠿] running\x1b\[0m [0-9.]+m?s`),                 // once the run started
		regexp.MustCompile(`\x1b\[2m +[0-9.]+m?s\x1b\[0m  first line\r\n`),                       // the line with its elapsed time
		regexp.MustCompile(`\x1b\[32m✓ completed\x1b\[0m in [0-9.]+m?s  \x1b\[2m\(session ses_`), // the summary
	} {
		if !want.MatchString(raw) {
			t.Errorf("the terminal output does not match %s", want)
		}
	}
	// What stays on the screen: the lines, the summary and the result; no status line.
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if !regexp.MustCompile(`^ +[0-9.]+m?s  run run_\w+ started on lnch_`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^ +[0-9.]+m?s  first line$`).MatchString(lines[1]) ||
		!strings.HasPrefix(lines[2], "✓ completed in ") || lines[3] != "{" || lines[len(lines)-1] != "}" {
		t.Errorf("the screen:\n%s", screen)
	}
	if strings.Contains(screen, "⠋") || strings.Contains(screen, "running") {
		t.Errorf("the status line was left on the screen:\n%s", screen)
	}
}

// TestAORunTerminalCtrlC: Ctrl-C on a terminal asks whether to stop the session; "y" stops it, and ao
// shows the stopped run and exits 130.
func TestAORunTerminalCtrlC(t *testing.T) {
	t.Parallel()
	a := newAOCluster(t)
	term := a.startAOTerminal(t, "run", "slow", "-p", "stderr=first line", "-p", "release="+a.path("never"))
	term.waitFor(t, "first line")
	sid := sessionIDIn(t, term.output())
	term.write(t, "\x03") // Ctrl-C: the terminal sends SIGINT to ao
	term.waitFor(t, "Stop session "+sid+"? [y/N] ")
	if st := a.co.admin().session(sid).Status; st != orchestrator.SessionRunning {
		t.Fatalf("the session is %s while ao asks", st)
	}
	term.write(t, "y\r")
	code := term.wait(t)
	t.Logf("terminal screen:\n%s", render(term.output()))
	if code != 130 {
		t.Fatalf("exit %d, want 130", code)
	}
	if st := a.co.admin().session(sid).Status; st != orchestrator.SessionStopped {
		t.Fatalf("the session is %s after answering y, want stopped", st)
	}
	if !strings.Contains(render(term.output()), "■ stopped after ") {
		t.Errorf("no summary of the stopped run:\n%s", render(term.output()))
	}
}

// aoTerminal is ao running on a pseudo-terminal.
type aoTerminal struct {
	cmd  *exec.Cmd
	ptmx *os.File
	out  lockedBuffer
	done chan struct{} // closed when ao has exited and its output is read
}

func (c *aoCluster) startAOTerminal(t *testing.T, args ...string) *aoTerminal {
	t.Helper()
	a := &aoTerminal{done: make(chan struct{})}
	a.cmd = exec.Command(filepath.Join(binDir, "ao"), args...)
	a.cmd.Env = c.aoEnv(c.co, c.client, "TERM=xterm-256color")
	a.cmd.Dir = c.dir
	// pty.Start makes ao a session leader with the terminal as its controlling terminal (so Ctrl-C
	// reaches it); Pdeathsig kills it should the test binary die.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ptmx, err := pty.StartWithSize(a.cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("start ao on a pty: %v", err)
	}
	a.ptmx = ptmx
	readDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&a.out, ptmx) // ends with EIO once ao has exited
		close(readDone)
	}()
	go func() {
		_ = a.cmd.Wait()
		<-readDone
		close(a.done)
	}()
	t.Cleanup(func() {
		if !a.exited() {
			_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
			<-a.done
		}
		ptmx.Close()
		if strings.Contains(a.out.String(), "WARNING: DATA RACE") {
			t.Errorf("ao %v reported a data race:\n%s", args, a.out.String())
		}
	})
	return a
}

func (a *aoTerminal) output() string { return a.out.String() }

func (a *aoTerminal) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func (a *aoTerminal) waitFor(t *testing.T, s string) {
	t.Helper()
	waitFor(t, runTimeout, fmt.Sprintf("%q on the terminal", s), func() (bool, string) {
		if a.exited() && !strings.Contains(a.output(), s) {
			t.Fatalf("ao exited before writing %q:\n%s", s, readable(a.output()))
		}
		return strings.Contains(a.output(), s), readable(a.output())
	})
}

func (a *aoTerminal) write(t *testing.T, s string) {
	t.Helper()
	if _, err := a.ptmx.Write([]byte(s)); err != nil {
		t.Fatalf("typing %q: %v", s, err)
	}
}

func (a *aoTerminal) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(runTimeout):
		t.Fatalf("ao did not exit within %s:\n%s", runTimeout, readable(a.output()))
	}
	return a.cmd.ProcessState.ExitCode()
}

// readable shows terminal output with its control characters spelled out: ESC as \e, CR as \r (and
// kept lines at their LFs).
func readable(s string) string {
	return strings.NewReplacer("\x1b", `\e`, "\r", `\r`, "\x07", `\a`, "\b", `\b`).Replace(s)
}

// render plays terminal output onto a screen of lines, as a terminal would show it: CR returns to the
// start of the line, LF goes down, ESC[K clears to the end of the line, other escape sequences (colours)
// change nothing visible. Enough for what ao writes.
func render(s string) string {
	var lines [][]rune
	row, col := 0, 0
	line := func() []rune {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
		return lines[row]
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\r':
			col = 0
		case r == '\n':
			row++
			col = 0
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
				j++
			}
			if j < len(rs) && rs[j] == 'K' {
				l := line()
				if col < len(l) {
					lines[row] = l[:col]
				}
			}
			i = j
		case r < 0x20:
		default:
			l := line()
			for len(l) < col {
				l = append(l, ' ')
			}
			if col < len(l) {
				l[col] = r
			} else {
				l = append(l, r)
			}
			lines[row] = l
			col++
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimRight(string(l), " "))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
