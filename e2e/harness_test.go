//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

// Deadlines. The machine may be small and busy (two cores, other test suites, race-instrumented
// binaries): the deadlines are generous, and no test waits for them unless something is wrong.
const (
	startTimeout = 30 * time.Second // a process up and ready
	runTimeout   = 30 * time.Second // a short run from POST /runs to its end
)

// cluster is one test's world: a temporary directory, and every process the test starts. Each process has
// the cluster's marker in its environment, which its children inherit, so whatever the test leaves behind
// can be found in /proc.
type cluster struct {
	t      *testing.T
	dir    string
	marker string
	mu     sync.Mutex
	n      int
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building the binaries failed:\n%v", buildErr)
	}
	c := &cluster{
		t:      t,
		dir:    t.TempDir(),
		marker: "E2E_TAG=" + regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_") + "-" + strconv.FormatUint(rand.Uint64(), 36),
	}
	// Registered first, so it runs last: after every process the test started was killed and reaped.
	t.Cleanup(func() {
		if left := killTagged(c.marker, 10*time.Second); len(left) > 0 {
			if t.Failed() {
				t.Logf("processes of this test were still alive after it (killed now): %v", left)
			} else {
				t.Errorf("processes of this test survived it (killed now): %v", left)
			}
		}
	})
	return c
}

// path returns a path in the cluster's directory.
func (c *cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.dir}, elem...)...)
}

// proc is a process started by a test, in its own process group, with its output in a file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// start starts binDir/bin in its own process group. A cleanup kills the group, waits for the process, logs
// its output when the test failed, and fails the test if a race-instrumented binary reported a data race.
func (c *cluster) start(name, bin string, args []string, env ...string) *proc {
	c.t.Helper()
	c.mu.Lock()
	c.n++
	logPath := c.path("logs", fmt.Sprintf("%02d-%s.log", c.n, name))
	c.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		c.t.Fatal(err)
	}
	// A file rather than a pipe: Wait must not depend on who else holds the write end.
	logFile, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	// A race-instrumented program sleeps a second before it exits unless told not to.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), runMarker, c.marker, "GORACE="+gorace), env...)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: should the test binary die without its cleanups (a -timeout panic, a signal), the
	// kernel kills the program too rather than leave it running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t := c.t
	t.Cleanup(func() {
		if !p.kill(10 * time.Second) {
			t.Errorf("%s (pid %d) did not die within 10s of SIGKILL", name, p.pid())
		}
		out := p.output()
		if strings.Contains(out, "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", name, out)
		} else if t.Failed() {
			t.Logf("===== output of %s (pid %d, %s) =====\n%s", name, p.pid(), p.status(), out)
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) output() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	return string(b)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status describes how the process ended, or says it runs.
func (p *proc) status() string {
	if !p.exited() {
		return "running"
	}
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// signal sends sig to the process itself (not its group).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil {
		t.Fatalf("signal %s with %v: %v", p.name, sig, err)
	}
}

// waitExit waits up to d for the process to exit.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// kill SIGKILLs the process group and waits up to d for the process to be reaped.
func (p *proc) kill(d time.Duration) bool {
	if !p.exited() {
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	}
	return p.waitExit(d)
}

// ---- ports ----

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// freePort picks a free port below the kernel's ephemeral range, so that no outgoing connection of any
// process on the machine can take it between a coordinator's kill and its restart. Ports are never handed
// out twice in one test binary.
func freePort(t *testing.T) int {
	t.Helper()
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				lo = v
			}
		}
	}
	base := 10000
	if lo-base < 2000 {
		base = 1024
	}
	portMu.Lock()
	defer portMu.Unlock()
	for range 1000 {
		p := base + rand.IntN(lo-base)
		if portsUsed[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		portsUsed[p] = true
		return p
	}
	t.Fatal("no free port found")
	return 0
}

// ---- coordinator ----

type coordOpts struct {
	heartbeat, stale, offline, noMatch   time.Duration
	redeliver                            time.Duration // -redeliver-after, when the binary has it (0: its default)
	adminToken, clientToken, runnerToken string
	args                                 []string // more flags (later flags win)
}

// Liveness for tests that are not about liveness: second-scale, but far enough from a busy machine's
// hiccups that no runner goes offline by accident.
func (o coordOpts) withDefaults() coordOpts {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.heartbeat, 250*time.Millisecond)
	def(&o.stale, 5*time.Second)
	def(&o.offline, 10*time.Second)
	def(&o.noMatch, 60*time.Second)
	return o
}

type coordinator struct {
	c      *cluster
	opts   coordOpts
	port   int
	url    string
	db     string
	proc   *proc
	starts int
}

var errAddrInUse = errors.New("address already in use")

// startCoordinator starts examples/coordinator on a free port with its own SQLite file and waits until it
// answers GET /health.
func (c *cluster) startCoordinator(o coordOpts) *coordinator {
	c.t.Helper()
	co := &coordinator{c: c, opts: o.withDefaults(), db: c.path("orchestrator.db")}
	// Registered before the process's own cleanups, so it runs after them: once the coordinator is killed,
	// its port must be free again.
	t := c.t
	t.Cleanup(func() {
		if co.port == 0 {
			return
		}
		if err := waitPortFree(co.port, time.Second); err != nil {
			t.Errorf("the coordinator's port %d is still taken after the test: %v", co.port, err)
		}
	})
	for attempt := 1; ; attempt++ {
		co.port = freePort(c.t)
		err := co.launch()
		if err == nil {
			return co
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 {
			c.t.Fatalf("coordinator: %v", err)
		}
	}
}

func (co *coordinator) launch() error {
	co.starts++
	co.url = "http://127.0.0.1:" + strconv.Itoa(co.port)
	o := co.opts
	args := []string{
		"-addr", "127.0.0.1:" + strconv.Itoa(co.port),
		"-db", co.db,
		"-heartbeat-interval", o.heartbeat.String(),
		"-stale-after", o.stale.String(),
		"-offline-after", o.offline.String(),
		"-no-match-timeout", o.noMatch.String(),
	}
	if o.redeliver > 0 && coordinatorFlags["redeliver-after"] {
		args = append(args, "-redeliver-after", o.redeliver.String())
	}
	if o.adminToken != "" {
		args = append(args, "-admin-token", o.adminToken, "-client-token", o.clientToken, "-runner-token", o.runnerToken)
	}
	args = append(args, o.args...)
	// The environment's tokens must not leak into an open coordinator.
	co.proc = co.c.start(fmt.Sprintf("coordinator-%d", co.starts), "coordinator", args,
		"ORCHESTRATOR_ADMIN_TOKEN=", "ORCHESTRATOR_CLIENT_TOKEN=", "ORCHESTRATOR_RUNNER_TOKEN=")
	hc := &http.Client{Timeout: time.Second}
	var err error
	if !testkit.Until(startTimeout, func() bool {
		if co.proc.exited() {
			out := co.proc.output()
			err = fmt.Errorf("exited (%s) before it was ready:\n%s", co.proc.status(), out)
			if strings.Contains(out, "address already in use") {
				err = errAddrInUse
			}
			return true
		}
		resp, herr := hc.Get(co.url + "/health")
		if herr != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		return fmt.Errorf("not healthy within %s:\n%s", startTimeout, co.proc.output())
	}
	return err
}

// kill SIGKILLs the coordinator and waits until it is gone.
func (co *coordinator) kill(t *testing.T) {
	t.Helper()
	if !co.proc.kill(10 * time.Second) {
		t.Fatalf("coordinator did not die")
	}
}

// restart starts the coordinator again on the same port and database, once the port is free.
func (co *coordinator) restart(t *testing.T) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		if err := waitPortFree(co.port, 10*time.Second); err != nil {
			t.Fatalf("coordinator restart: port %d: %v", co.port, err)
		}
		err := co.launch()
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || attempt == 20 { // another process took the port meanwhile
			t.Fatalf("coordinator restart: %v", err)
		}
	}
}

// waitPortFree waits until port can be listened on, or returns why not once timeout has passed.
func waitPortFree(port int, timeout time.Duration) error {
	var err error
	testkit.Until(timeout, func() bool {
		var l net.Listener
		if l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			err = l.Close()
			return true
		}
		return false
	})
	return err
}

// adminToken is the token with every right ("" when the API is open).
func (co *coordinator) admin() *api { return co.api(co.opts.adminToken) }

func (co *coordinator) api(token string) *api {
	return &api{t: co.c.t, co: co, token: token, hc: &http.Client{Timeout: 2 * time.Minute}}
}

// with returns a copy of a that reports to t (a subtest).
func (a *api) with(t *testing.T) *api {
	b := *a
	b.t = t
	return &b
}

// client returns the Go client (an orchestrator.Coordinator over HTTP) with the admin token.
func (co *coordinator) client() *httpapi.Client {
	co.c.t.Helper()
	cl, err := httpapi.NewClient(co.url, httpapi.ClientConfig{Token: co.opts.adminToken, RetryMax: 2, RetryWaitMin: 50 * time.Millisecond, RetryWaitMax: 200 * time.Millisecond})
	if err != nil {
		co.c.t.Fatal(err)
	}
	return cl
}

// ---- raw HTTP ----

// api makes raw HTTP calls, for the tests that check the wire: status codes, bodies, headers.
type api struct {
	t     *testing.T
	co    *coordinator
	token string
	hc    *http.Client
	// seen, when set, records the routes and statuses of the answers (see openapi_test.go).
	seen *answerLog
}

// do sends body (nil, a string/[]byte sent as is, or a value encoded as JSON) and returns the status, the
// body and the response headers.
func (a *api) do(method, path string, body any, header ...string) (int, []byte, http.Header) {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.co.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	checkAnswer(a.t, resp, data, a.seen) // every answer must be as docs/openapi.yaml describes it
	return resp.StatusCode, data, resp.Header
}

// json calls do, checks the status and decodes the body into out (unless out is nil).
func (a *api) json(method, path string, body any, want int, out any) []byte {
	a.t.Helper()
	status, data, _ := a.do(method, path, body)
	if status != want {
		a.t.Fatalf("%s %s: status %d, want %d; body: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

type started struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
}

// startRun is POST /runs, which must answer 201 with a run and a session.
func (a *api) startRun(body map[string]any) started {
	a.t.Helper()
	var s started
	a.json("POST", "/runs", body, http.StatusCreated, &s)
	if !strings.HasPrefix(s.RunID, "run_") || !strings.HasPrefix(s.SessionID, "ses_") {
		a.t.Fatalf("POST /runs %v: answer %+v lacks run_id or session_id", body, s)
	}
	return s
}

// sessionResult is GET /sessions/{id}/result.
type sessionResult struct {
	SessionID string               `json:"session_id"`
	Status    string               `json:"status"`
	Result    *orchestrator.Result `json:"result"`
	Error     string               `json:"error"`
}

// result long-polls GET /sessions/{id}/result until the session ends (within runTimeout).
func (a *api) result(sessionID string) sessionResult {
	a.t.Helper()
	deadline := time.Now().Add(runTimeout)
	for {
		var r sessionResult
		a.json("GET", "/sessions/"+sessionID+"/result?wait=5s", nil, http.StatusOK, &r)
		switch r.Status {
		case "completed", "failed", "stopped":
			return r
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("session %s did not end within %s: %+v", sessionID, runTimeout, r)
		}
	}
}

// session is GET /sessions/{id}.
func (a *api) session(id string) *orchestrator.Session {
	a.t.Helper()
	var s orchestrator.Session
	a.json("GET", "/sessions/"+id, nil, http.StatusOK, &s)
	return &s
}

// events is every event of the session so far (GET /sessions/{id}/events, paged).
func (a *api) events(sessionID string) []*orchestrator.Event {
	a.t.Helper()
	var all []*orchestrator.Event
	after := int64(0)
	for {
		var page struct {
			Events  []*orchestrator.Event `json:"events"`
			LastSeq int64                 `json:"last_seq"`
		}
		a.json("GET", fmt.Sprintf("/sessions/%s/events?after=%d&limit=100", sessionID, after), nil, http.StatusOK, &page)
		all = append(all, page.Events...)
		if len(page.Events) < 100 {
			return all
		}
		after = page.LastSeq
	}
}

type agentList struct {
	Agents []*orchestrator.AgentInfo `json:"agents"`
}

// agents is GET /agents by name.
func (a *api) agents() map[string]*orchestrator.AgentInfo {
	a.t.Helper()
	var l agentList
	a.json("GET", "/agents", nil, http.StatusOK, &l)
	m := map[string]*orchestrator.AgentInfo{}
	for _, ag := range l.Agents {
		m[ag.Name] = ag
	}
	return m
}

// runners is GET /runners (admin).
func (a *api) runners() []*orchestrator.RunnerInfo {
	a.t.Helper()
	var l struct {
		Runners []*orchestrator.RunnerInfo `json:"runners"`
	}
	a.json("GET", "/runners", nil, http.StatusOK, &l)
	return l.Runners
}

// ---- waiting ----

// waitFor polls cond until it holds or timeout passes; cond describes the state it saw, for the failure
// message.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testkit.WaitForState(t, timeout, what, cond)
}

// waitStatus waits until the session has one of the statuses.
func (a *api) waitStatus(sessionID string, timeout time.Duration, statuses ...string) *orchestrator.Session {
	a.t.Helper()
	var s *orchestrator.Session
	waitFor(a.t, timeout, fmt.Sprintf("session %s to be %v", sessionID, statuses), func() (bool, string) {
		s = a.session(sessionID)
		for _, st := range statuses {
			if string(s.Status) == st {
				return true, ""
			}
		}
		return false, fmt.Sprintf("status %s, error %q", s.Status, s.Error)
	})
	return s
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, path+" to exist", func() (bool, string) {
		_, err := os.Stat(path)
		return err == nil, fmt.Sprint(err)
	})
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- runners ----

type runnerOpts struct {
	name       string   // names the runner's folder and log
	blueprints []string // blueprint JSON documents for its folder
	projectDir string   // default: <cluster>/<name>/project
	token      string
	args       []string // more flags (later flags win)
	env        []string // more environment variables, NAME=value (later ones win)
}

type runner struct {
	*proc
	id            string
	projectDir    string
	blueprintsDir string
}

// startRunner starts examples/runner with its own blueprints folder and project directory, and waits until
// the coordinator lists it online.
func (c *cluster) startRunner(co *coordinator, o runnerOpts) *runner {
	c.t.Helper()
	r := &runner{blueprintsDir: c.path(o.name, "blueprints"), projectDir: o.projectDir}
	if r.projectDir == "" {
		r.projectDir = c.path(o.name, "project")
	}
	for _, d := range []string{r.blueprintsDir, r.projectDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.t.Fatal(err)
		}
	}
	for i, b := range o.blueprints {
		if err := os.WriteFile(filepath.Join(r.blueprintsDir, fmt.Sprintf("%02d.json", i)), []byte(b), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	args := []string{
		"-coordinator", co.url,
		"-blueprints-dir", r.blueprintsDir,
		"-project-dir", r.projectDir,
		"-max-concurrent", "4",
		"-stop-grace", "1s",
		"-shutdown-grace", "10s",
	}
	if o.token != "" {
		args = append(args, "-token", o.token)
	}
	args = append(args, o.args...)
	// ao-file-stats and ao-web-crawler are looked up on PATH; the runner's own token must come from the flag
	// (or from o.env).
	env := append([]string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"), "ORCHESTRATOR_RUNNER_TOKEN="}, o.env...)
	r.proc = c.start(o.name, "runner", args, env...)
	r.id = c.waitRunnerOnline(co, r.proc, r.projectDir)
	return r
}

// waitRunnerOnline waits until GET /runners shows an online runner registered with projectDir, and returns
// its id.
func (c *cluster) waitRunnerOnline(co *coordinator, p *proc, projectDir string) string {
	c.t.Helper()
	var id string
	waitFor(c.t, startTimeout, p.name+" to register", func() (bool, string) {
		if p.exited() {
			c.t.Fatalf("%s exited (%s) before it registered:\n%s", p.name, p.status(), p.output())
		}
		var seen []string
		for _, ri := range co.admin().runners() {
			if ri.ProjectDir == projectDir && ri.Status == orchestrator.RunnerOnline {
				id = ri.ID
				return true, ""
			}
			seen = append(seen, ri.ID+" "+ri.ProjectDir+" "+string(ri.Status))
		}
		return false, fmt.Sprint(seen)
	})
	return id
}

// echoRunner is e2e/internal/echorunner: the AI-agent runner that records every prompt.
type echoRunner struct {
	*proc
	id      string
	prompts string
}

func (c *cluster) startEchoRunner(co *coordinator, token string) *echoRunner {
	c.t.Helper()
	e := &echoRunner{prompts: c.path("prompts.jsonl")}
	dir := c.path("echo-project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	args := []string{"-coordinator", co.url, "-prompts", e.prompts, "-project-dir", dir}
	if token != "" {
		args = append(args, "-token", token)
	}
	e.proc = c.start("echorunner", "echorunner", args)
	e.id = c.waitRunnerOnline(co, e.proc, dir)
	return e
}

type promptRecord struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Mode      string `json:"mode"`
	Prompt    string `json:"prompt"`
}

// records returns the prompts the echo runner received so far, for one session ("" for all).
func (e *echoRunner) records(t *testing.T, sessionID string) []promptRecord {
	t.Helper()
	b, err := os.ReadFile(e.prompts)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// The runner may be appending a line as this reads: only lines it has finished (newline-terminated)
	// count.
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []promptRecord
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r promptRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("prompts file: %q: %v", line, err)
		}
		if sessionID == "" || r.SessionID == sessionID {
			out = append(out, r)
		}
	}
	return out
}

// registerOrchestrator adds the AI agent the echo runner executes (POST /agents, admin).
func registerOrchestrator(co *coordinator) {
	co.admin().json("POST", "/agents", map[string]any{"name": "orchestrator", "type": "agent", "description": "echo AI agent"}, http.StatusCreated, nil)
}

// ---- blueprints ----

// testAgentSchema declares testagent's flags as the parameters of its blueprints.
const testAgentSchema = `{
	"type": "object",
	"additionalProperties": false,
	"properties": {
		"log": {"type": "string"},
		"ignore_term": {"type": "boolean"},
		"children": {"type": "integer", "minimum": 0, "maximum": 10},
		"term_exit_ms": {"type": "integer", "minimum": 0},
		"pids": {"type": "string"},
		"stderr": {"type": "string"},
		"release": {"type": "string"},
		"sleep_ms": {"type": "integer", "minimum": 0},
		"exit": {"type": "integer"},
		"fail_first": {"type": "integer", "minimum": 0},
		"get": {"type": "string"},
		"tag": {"type": "string"}
	}
}`

// testAgent returns a blueprint named name that runs testagent.
func testAgent(name string) string {
	return fmt.Sprintf(`{"name": %q, "description": "e2e test agent", "tags": ["e2e"], "command": %q, "parameters_schema": %s}`,
		name, filepath.Join(binDir, "testagent"), testAgentSchema)
}

// agentOutput is what testagent prints on stdout.
type agentOutput struct {
	RunID     string          `json:"run_id"`
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	Pid       int             `json:"pid"`
	Args      []string        `json:"args"`
	Params    json.RawMessage `json:"params"`
	// Gets are the gateway's answers to --get.
	Gets []struct {
		Path   string          `json:"path"`
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"gets"`
}

func decodeAgentOutput(t *testing.T, r *orchestrator.Result) agentOutput {
	t.Helper()
	if r == nil || len(r.ResultData) == 0 {
		t.Fatalf("result has no result_data: %+v", r)
	}
	var out agentOutput
	if err := json.Unmarshal(r.ResultData, &out); err != nil {
		t.Fatalf("result_data %s: %v", r.ResultData, err)
	}
	return out
}

// ---- Server-Sent Events ----

type sseEvent struct {
	ID, Event, Data string
}

// readSSE reads GET path as text/event-stream until stop accepts an event or ctx ends, and returns the
// events read.
func readSSE(ctx context.Context, co *coordinator, token, path string, header map[string]string, stop func(sseEvent) bool) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", co.url+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return nil, fmt.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	var (
		events []sseEvent
		cur    sseEvent
		data   []string
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.ID == "" && cur.Event == "" && len(data) == 0 {
				continue // the end of a comment block
			}
			cur.Data = strings.Join(data, "\n")
			events = append(events, cur)
			if stop(cur) {
				return events, nil
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			cur.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			cur.Event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return events, err
	}
	return events, io.ErrUnexpectedEOF
}

// ---- small things ----

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
