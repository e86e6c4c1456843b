package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

const crawlerSchema = `{"type":"object","required":["url"],"properties":{"url":{"type":"string"},"depth":{"type":"integer"},"patterns":{"type":"array","items":{"type":"string"}}}}`

func crawlerFake() *fakeCoord {
	f := newFake()
	f.agents = []*orchestrator.AgentInfo{
		{Name: "web-crawler", Type: orchestrator.AgentTypeDeterministic, RunnerID: "lnch_1", Description: "Crawls a site. More words.", ParametersSchema: json.RawMessage(crawlerSchema)},
		{Name: "reviewer", Type: orchestrator.AgentTypeAgent, Description: "Reviews code."},
	}
	return f
}

// script makes every run print lines to stderr, then end with status and result.
func (f *fakeCoord) script(lines []string, status orchestrator.SessionStatus, res *orchestrator.Result, errMsg string) {
	f.onStart = func(s *orchestrator.Session) {
		f.emit(s.ID, orchestrator.EventRunStarted, map[string]any{"run_id": s.CurrentRunID, "runner_id": "lnch_1"})
		f.mu.Lock()
		f.find(s.ID).Status = orchestrator.SessionRunning
		f.mu.Unlock()
		for _, l := range lines {
			f.emit(s.ID, orchestrator.EventStderr, map[string]any{"line": l})
		}
		f.end(s.ID, status, res, errMsg)
	}
}

func TestRunFollowsAndPrintsResult(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	f.script([]string{"fetched /", "fetched /docs/"}, orchestrator.SessionCompleted,
		&orchestrator.Result{ResultData: json.RawMessage(`{"pages":2,"ok":true}`), ExitCode: new(0)}, "")
	app, out, errb := f.app("")
	code := app.Run(context.Background(), []string{"run", "web-crawler", "-p", "url=http://x/", "-p", "depth=2", "-p", "patterns=*.html,/docs/*"})
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb)
	}
	if got, want := string(f.started[0].Parameters), `{"url":"http://x/","depth":2,"patterns":["*.html","/docs/*"]}`; got != want {
		t.Errorf("parameters sent %s, want %s", got, want)
	}
	if want := "{\n  \"pages\": 2,\n  \"ok\": true\n}\n"; out.String() != want {
		t.Errorf("stdout %q, want the indented result_data %q", out, want)
	}
	lines := strings.Split(errb.String(), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "ao: session ses_") ||
		!strings.HasPrefix(lines[1], "[run_started] run run_") || lines[2] != "fetched /" || lines[3] != "fetched /docs/" ||
		!strings.HasPrefix(lines[4], "✓ completed in ") {
		t.Errorf("stderr (plain, piped):\n%s", errb)
	}
	if strings.Contains(errb.String(), "\x1b") {
		t.Errorf("escape sequences on a pipe:\n%q", errb)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status orchestrator.SessionStatus
		res    *orchestrator.Result
		err    string
		code   int
		out    string
	}{
		{"completed", orchestrator.SessionCompleted, &orchestrator.Result{ResultText: "plain text", ExitCode: new(0)}, "", 0, "plain text\n"},
		{"failed with exit 3", orchestrator.SessionFailed, &orchestrator.Result{ResultText: "partial\n", ExitCode: new(3), Error: "exit status 3"}, "exit status 3", 3, "partial\n"},
		{"failed without exit code", orchestrator.SessionFailed, &orchestrator.Result{Error: "runner went offline"}, "runner went offline", 1, ""},
		{"killed (exit -1)", orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(-1), Error: "timed out"}, "timed out", 1, ""},
		{"stopped", orchestrator.SessionStopped, &orchestrator.Result{Error: "stopped"}, "stopped", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := crawlerFake()
			f.script(nil, tc.status, tc.res, tc.err)
			app, out, errb := f.app("")
			if code := app.Run(context.Background(), []string{"run", "web-crawler", "--params", `{"url":"http://x/"}`}); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb)
			}
			if out.String() != tc.out {
				t.Errorf("stdout %q, want %q", out, tc.out)
			}
			if tc.err != "" && tc.err != string(tc.status) && !strings.Contains(errb.String(), ": "+tc.err) {
				t.Errorf("stderr does not say why:\n%s", errb)
			}
			// --json: one document with the status and the result, the same exit code.
			app, out, errb = f.app("")
			if code := app.Run(context.Background(), []string{"run", "web-crawler", "--json", "--params", `{"url":"http://x/"}`}); code != tc.code {
				t.Fatalf("--json: exit %d, want %d; stderr:\n%s", code, tc.code, errb)
			}
			var doc orchestrator.StartRunResult
			decodeJSONDoc(t, out.Bytes(), &doc)
			if doc.Status != tc.status || doc.Result == nil || doc.Result.Error != tc.res.Error || !strings.HasPrefix(doc.SessionID, "ses_") {
				t.Errorf("--json document %+v", doc)
			}
		})
	}
}

func TestRunExitCodeMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status orchestrator.SessionStatus
		res    *orchestrator.Result
		want   int
	}{
		{orchestrator.SessionCompleted, nil, 0},
		{orchestrator.SessionCompleted, &orchestrator.Result{ExitCode: new(0)}, 0},
		{orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(3)}, 3},
		{orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(255)}, 255},
		{orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(256)}, 1},
		{orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(-1)}, 1},
		{orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(0), Error: "output invalid"}, 1},
		{orchestrator.SessionFailed, nil, 1},
		{orchestrator.SessionStopped, &orchestrator.Result{ExitCode: new(143)}, 1},
	} {
		if got := RunExitCode(tc.status, tc.res); got != tc.want {
			t.Errorf("RunExitCode(%s, %+v) = %d, want %d", tc.status, tc.res, got, tc.want)
		}
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&orchestrator.ValidationError{Errors: []orchestrator.FieldError{{Path: "$.x"}}}, 2},
		{&orchestrator.ValidationError{Output: true}, 1},
		{usageErrorf("bad"), 2},
		{&exitError{code: 7}, 7},
		{context.Canceled, 130},
		{errUnreachable, 1},
		{orchestrator.Errorf(orchestrator.ErrNotFound, "session_not_found", "no"), 1},
		{errors.New("other"), 1},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestRunValidationError(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	f.startErr = &orchestrator.ValidationError{AgentName: "web-crawler", Errors: []orchestrator.FieldError{
		{Path: "$.depth", Message: "'deep' is not of type 'integer'"},
		{Path: "$.url", Message: "'x' is not a valid URI"},
	}}
	app, out, errb := f.app("")
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "-p", "url=x", "-p", "depth=deep"}); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errb)
	}
	want := "ao: the parameters do not match web-crawler's parameters_schema:\n  $.depth: 'deep' is not of type 'integer'\n  $.url: 'x' is not a valid URI\n"
	if !strings.HasPrefix(errb.String(), want) || out.Len() != 0 {
		t.Errorf("stderr:\n%s\nwant it to start with:\n%s(stdout %q)", errb, want, out)
	}
	app, out, _ = f.app("")
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "--json", "-p", "depth=deep"}); code != 2 {
		t.Fatalf("--json: exit %d, want 2", code)
	}
	var doc struct {
		Error  string                    `json:"error"`
		Errors []orchestrator.FieldError `json:"validation_errors"`
	}
	decodeJSONDoc(t, out.Bytes(), &doc)
	if doc.Error != "parameter_validation_failed" || len(doc.Errors) != 2 || doc.Errors[0].Path != "$.depth" {
		t.Errorf("--json error document %+v", doc)
	}
}

// TestRunInterrupt: Ctrl-C while ao run follows a session that does not end.
func TestRunInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		terminal bool
		stdin    string
		stops    int
		stderr   []string
	}{
		{"piped: leaves it running", nil, false, "", 0, []string{"is still running", "ao logs -f ses_", "ao stop ses_"}},
		{"--stop-on-interrupt stops it", []string{"--stop-on-interrupt"}, false, "", 1, []string{"stopping session ses_", "stopped after"}},
		{"terminal: asks, yes", nil, true, "y\n", 1, []string{"Stop session ses_", "? [y/N] ", "stopped after"}},
		{"terminal: asks, no", nil, true, "\n", 0, []string{"Stop session ses_", "is still running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := crawlerFake()
			running := make(chan string, 1)
			f.onStart = func(s *orchestrator.Session) {
				f.emit(s.ID, orchestrator.EventStderr, map[string]any{"line": "working"})
				running <- s.ID
			}
			app, _, errb := f.app(tc.stdin)
			intr, ctrlC := interrupts()
			app.Interrupts = intr
			app.Terminal = func(any) bool { return tc.terminal }
			codec := make(chan int, 1)
			go func() {
				codec <- app.Run(context.Background(), append([]string{"run", "web-crawler", "-p", "url=x"}, tc.args...))
			}()
			id := <-running
			ctrlC <- os.Interrupt
			if code := <-codec; code != ExitInterrupted {
				t.Fatalf("exit %d, want 130; stderr:\n%q", code, errb)
			}
			if f.stopCount() != tc.stops {
				t.Errorf("StopSession called %d times, want %d", f.stopCount(), tc.stops)
			}
			s, _ := f.GetSession(context.Background(), id)
			if wantEnded := tc.stops > 0; s.Status.Ended() != wantEnded {
				t.Errorf("session is %s after the interrupt", s.Status)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stripANSI(errb.String()), want) {
					t.Errorf("stderr lacks %q:\n%q", want, errb)
				}
			}
		})
	}
}

// TestRunOnTerminal: with stderr a terminal, lines carry the elapsed time and a status line with a
// spinner is drawn (and cleared) around them.
func TestRunOnTerminal(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	f.script([]string{"fetched /", "\x1b[31mred\x1b[0m"}, orchestrator.SessionCompleted, &orchestrator.Result{ResultText: "done"}, "")
	app, out, errb := f.app("")
	app.Terminal = func(any) bool { return true }
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "-p", "url=x"}); code != 0 {
		t.Fatalf("exit %d; stderr:\n%q", code, errb)
	}
	got := errb.String()
	for _, want := range []string{
		clearLine + ansiYell + "⠋ pending" + ansiReset, // the first status line
		"  fetched /\n",  // a line, after its elapsed time
		"^[[31mred^[[0m", // an agent's escape sequences are shown, not obeyed
		ansiGreen + "✓ completed" + ansiReset,
		"web-crawler  ses_",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if out.String() != "done\n" {
		t.Errorf("stdout %q", out)
	}
	// NO_COLOR: no colours, but still the status line.
	app, _, errb = f.app("")
	app.Terminal = func(any) bool { return true }
	app.Getenv = func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "-p", "url=x"}); code != 0 {
		t.Fatalf("NO_COLOR: exit %d", code)
	}
	if s := errb.String(); strings.Contains(s, ansiReset) || !strings.Contains(s, clearLine+"⠋ pending") {
		t.Errorf("NO_COLOR output:\n%q", s)
	}
}

func TestLogs(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	s := f.addSession("web-crawler", orchestrator.SessionRunning)
	f.emit(s.ID, orchestrator.EventRunStarted, map[string]any{"run_id": "run_1"})
	f.emit(s.ID, orchestrator.EventStderr, map[string]any{"line": "one"})

	// Without -f: what is there, as one JSON document.
	app, out, _ := f.app("")
	if code := app.Run(context.Background(), []string{"logs", s.ID, "--json"}); code != 0 {
		t.Fatalf("logs --json: exit %d", code)
	}
	var page struct {
		Events  []*orchestrator.Event `json:"events"`
		LastSeq int64                 `json:"last_seq"`
	}
	decodeJSONDoc(t, out.Bytes(), &page)
	if len(page.Events) != 2 || page.LastSeq != 2 {
		t.Fatalf("logs --json = %+v", page)
	}

	// -f: follows to the end through lost connections, each event once, then exits 0.
	f.mu.Lock()
	f.failReads = 3
	f.mu.Unlock()
	app, out, errb := f.app("")
	codec := make(chan int, 1)
	go func() { codec <- app.Run(context.Background(), []string{"logs", "-f", s.ID, "--json"}) }()
	f.emit(s.ID, orchestrator.EventStderr, map[string]any{"line": "two"})
	f.end(s.ID, orchestrator.SessionFailed, &orchestrator.Result{ExitCode: new(3)}, "exit status 3")
	if code := <-codec; code != 0 {
		t.Fatalf("logs -f: exit %d; stderr:\n%s", code, errb)
	}
	sc := bufio.NewScanner(out)
	var seqs []int64
	for sc.Scan() {
		var ev orchestrator.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("JSON Lines: %q: %v", sc.Text(), err)
		}
		seqs = append(seqs, ev.Seq)
	}
	if want := []int64{1, 2, 3, 4, 5}; !slicesEqual(seqs, want) {
		t.Errorf("logs -f --json events %v, want %v", seqs, want)
	}
	if !strings.Contains(errb.String(), "lost the coordinator") || !strings.Contains(errb.String(), "reconnected") {
		t.Errorf("stderr does not tell about the lost connection:\n%s", errb)
	}

	// Plain text: a line per event, the type and the text.
	app, out, _ = f.app("")
	if code := app.Run(context.Background(), []string{"logs", s.ID}); code != 0 {
		t.Fatalf("logs: exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasSuffix(lines[1], "  stderr       one") || !strings.Contains(lines[4], "run_ended    run run_") {
		t.Errorf("logs:\n%s", out)
	}
}

// stripANSI removes colour sequences (ESC [ … m).
func stripANSI(s string) string {
	return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "")
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFollowerGivesUp(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	s := f.addSession("web-crawler", orchestrator.SessionRunning)
	f.failReads = 1 << 30
	var troubles int
	fol := &follower{coord: f, sessionID: s.ID, giveUp: time.Nanosecond,
		pause:     func(context.Context, time.Duration) error { return nil },
		onTrouble: func(err error) { troubles++ }}
	if _, err := fol.follow(context.Background()); !errors.Is(err, errUnreachable) || troubles == 0 {
		t.Errorf("follow against a dead coordinator = %v after %d retries; want the error after retrying", err, troubles)
	}
	fol = &follower{coord: newFake(), sessionID: "ses_missing"}
	if _, err := fol.follow(context.Background()); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("follow of a missing session = %v, want not found at once", err)
	}
}

func TestSessionsShowsNewest(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	for i := range 2500 {
		st := orchestrator.SessionCompleted
		if i%2 == 1 {
			st = orchestrator.SessionFailed
		}
		f.addSession("web-crawler", st)
	}
	app, out, errb := f.app("")
	if code := app.Run(context.Background(), []string{"sessions", "--limit", "3", "--status", "failed"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "SESSION") || !strings.HasPrefix(lines[1], "ses_2496 ") || !strings.HasPrefix(lines[3], "ses_2500 ") {
		t.Errorf("sessions --limit 3 --status failed:\n%s", out)
	}
	if !strings.Contains(errb.String(), "the newest 3; older ones match too") {
		t.Errorf("stderr %q", errb)
	}
	app, out, _ = f.app("")
	if code := app.Run(context.Background(), []string{"sessions", "--limit", "0", "--json", "--status", "ended"}); code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	var doc struct {
		Sessions []*orchestrator.Session `json:"sessions"`
		More     bool                    `json:"more"`
	}
	decodeJSONDoc(t, out.Bytes(), &doc)
	if len(doc.Sessions) != 2500 || doc.More || doc.Sessions[0].ID != "ses_0001" {
		t.Errorf("--limit 0 --json: %d sessions (first %s), more %v; want all 2500, oldest first", len(doc.Sessions), doc.Sessions[0].ID, doc.More)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"frobnicate"},
		{"run"},
		{"run", "a", "b"},
		{"run", "web-crawler", "--no-such-flag"},
		{"run", "web-crawler", "-p", "noequals"},
		{"sessions", "--status", "weird"},
		{"sessions", "extra"},
		{"resume", "ses_1"},
		{"agents", "--type", "robot"},
		{"rerun"},
		{"rerun", "ses_1", "--failed"},
		{"rerun", "--agent", "web-crawler"},
		{"rerun", "--failed", "-p", "depth=1"},
		{"rerun", "--failed", "--limit", "1001"},
		{"rerun", "--status", "running"},
	} {
		f := crawlerFake()
		app, out, errb := f.app("")
		if code := app.Run(context.Background(), args); code != ExitUsage {
			t.Errorf("ao %v: exit %d, want 2; stderr %q", args, code, errb)
		}
		if !strings.HasPrefix(errb.String(), "ao: ") || out.Len() != 0 {
			t.Errorf("ao %v: stdout %q, stderr %q", args, out, errb)
		}
	}
}

func TestAgentsAndShow(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	app, out, _ := f.app("")
	if code := app.Run(context.Background(), []string{"agents"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := "NAME         TYPE           RUNNER  DESCRIPTION\nweb-crawler  deterministic  lnch_1  Crawls a site.\nreviewer     AI             -       Reviews code.\n"
	if out.String() != want {
		t.Errorf("ao agents:\n%s\nwant:\n%s", out, want)
	}
	app, out, _ = f.app("")
	if code := app.Run(context.Background(), []string{"agents", "show", "web-crawler"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "  url       string, required\n") || !strings.Contains(out.String(), "  patterns  array of string\n") {
		t.Errorf("ao agents show:\n%s", out)
	}
	app, out, _ = f.app("")
	if code := app.Run(context.Background(), []string{"agent", "show", "web-crawler", "--json"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var a orchestrator.AgentInfo
	decodeJSONDoc(t, out.Bytes(), &a)
	var compact bytes.Buffer
	_ = json.Compact(&compact, a.ParametersSchema)
	if a.Name != "web-crawler" || compact.String() != crawlerSchema {
		t.Errorf("ao agent show --json = %+v", a)
	}
	app, _, errb := f.app("")
	if code := app.Run(context.Background(), []string{"agents", "show", "nope"}); code != 1 || !strings.Contains(errb.String(), `agent "nope" not found`) {
		t.Errorf("show of a missing agent: exit %d, %q", code, errb)
	}
}
