package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// These tests drive the dashboard in a real headless Chromium (github.com/chromedp/chromedp speaks the
// DevTools protocol to it), against a coordinator and a runner in this process. Without a browser they
// skip, except under CI, where .ci/run installs one and a missing browser fails them.

// stepTimeout bounds one step (a navigation, a wait for something to show). Nothing waits for it unless
// something is wrong.
const stepTimeout = 30 * time.Second

// findBrowser returns the Chromium to drive: $ORCHESTRATOR_TEST_BROWSER, or the first of the usual names
// on PATH.
func findBrowser(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ORCHESTRATOR_TEST_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("no Chromium found, and CI is set: the browser tests must run there (apt-get install chromium, as .ci/run does, or set ORCHESTRATOR_TEST_BROWSER)")
	}
	t.Skip("no Chromium found: the browser tests skip (apt-get install chromium, or set ORCHESTRATOR_TEST_BROWSER to a Chrome or Chromium binary)")
	return ""
}

// browser is one headless Chromium with one tab, and what the tab reported that a test must not see:
// dialogs (alert, confirm), uncaught exceptions, errors in the browser log other than failed requests
// (a Content-Security-Policy violation among them).
type browser struct {
	t   testing.TB
	ctx context.Context // the tab

	mu       sync.Mutex
	problems []string
	dialogs  int
}

// newBrowser starts a headless Chromium with the options every test needs, then extra.
func newBrowser(t testing.TB, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findBrowser(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // as root, Chromium refuses to start with its sandbox
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine may have no network: nothing but the page under test may be fetched.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints,AutofillServerCommunication"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(1200, 820),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // ends the browser and waits for it
	})
	b := &browser{t: t, ctx: ctx}
	// The first action starts the browser; it gets no timeout (that would end the browser with it).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 820)); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, b.observe); err != nil {
		t.Fatalf("listening to the tab: %v", err)
	}
	return b
}

// observe runs on the tab's reading goroutine: record and return.
func (b *browser) observe(ev any) {
	var problem string
	switch e := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		problem = fmt.Sprintf("a %s dialog opened: %q", e.Type, e.Message)
		b.mu.Lock()
		b.dialogs++
		b.mu.Unlock()
		go func() { // dismiss it, so the page goes on
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}()
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text = d.Exception.Description
		}
		problem = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, text)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			problem = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
		}
	case *log.EventEntryAdded:
		// Failed requests (the API's 401 and 403 answers, which the pages handle) are logged with source
		// "network"; anything else at error level is a problem.
		if e.Entry.Level == log.EntryLevelError && e.Entry.Source != log.EntrySourceNetwork {
			problem = fmt.Sprintf("browser log (%s): %s", e.Entry.Source, e.Entry.Text)
		}
	}
	if problem != "" {
		b.mu.Lock()
		b.problems = append(b.problems, problem)
		b.mu.Unlock()
	}
}

// takeProblems returns what the tab reported so far, and forgets it.
func (b *browser) takeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// checkClean fails the test if the tab reported anything.
func (b *browser) checkClean() {
	b.t.Helper()
	for _, p := range b.takeProblems() {
		b.t.Errorf("the page reported: %s", p)
	}
}

// do runs actions with a step's timeout; on failure it saves a screenshot and fails the test.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed")
		b.t.Fatalf("%s: %v (problems reported by the page: %v)", what, err, b.takeProblems())
	}
}

// until waits for a JavaScript condition to hold; an expression that throws (an element not there yet)
// does not hold.
func (b *browser) until(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("(() => { try { return !!("+expr+") } catch { return false } })()", chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		b.shot("failed")
		b.t.Fatalf("waiting for %s (%s): %v (problems reported by the page: %v)", what, expr, err, b.takeProblems())
	}
}

// eval returns a JavaScript expression's value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// shot saves a screenshot of the tab as a test artifact (go test -artifacts keeps them).
func (b *browser) shot(name string) string {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	// The page's content, however tall, rather than the viewport.
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("body")))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

func (b *browser) location() string {
	b.t.Helper()
	return eval[string](b, `location.href`)
}

// js quotes s as a JavaScript string.
func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

var sessionURL = regexp.MustCompile(`/ui/sessions/(ses_[0-9a-z]+)$`)

// call sends a request to the API, as another client would, a body as JSON, and returns the status and
// the body.
func call(t *testing.T, w *world, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, w.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, out
}

// startRun starts a run over the API and returns its session's id.
func startRun(t *testing.T, w *world, token, body string) string {
	t.Helper()
	status, out := call(t, w, "POST", "/runs", token, body)
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &res); err != nil || status != 201 {
		t.Fatalf("POST /runs %s = %d %s", body, status, out)
	}
	return res.SessionID
}

// TestBrowser walks the dashboard of an open API as a person would: start a run from an agent's form
// (a validation error first, shown next to its field, then corrected), watch its stderr arrive and its
// result, stop another session with the button, and find both, and the runner, on the list pages. An
// agent's stderr line that is markup shows as text and opens no dialog.
func TestBrowser(t *testing.T) {
	w := newWorld(t, nil)
	b := newBrowser(t)
	ui := w.URL + "/ui/"

	// The agents, with type, runner, tags and description.
	b.do("open the agents page", chromedp.Navigate(ui+"agents"))
	b.until("the crawl agent listed", `document.querySelector('#agents tr[data-agent="crawl"]')`)
	row := b.text(`#agents tr[data-agent="crawl"]`)
	for _, want := range []string{"crawl", "deterministic", "lnch_", "web", "Crawls a site to a depth"} {
		if !strings.Contains(row, want) {
			t.Errorf("the crawl agent's row %q lacks %q", row, want)
		}
	}
	b.shot("agents")

	// Its page: a form from the parameters schema, defaults filled in, required marked.
	b.do("open the crawl agent", chromedp.Click(chromedp.CSS(`#agents tr[data-agent="crawl"] a`)))
	b.until("the form", `document.querySelector('[data-field="url"] input')`)
	for _, c := range []struct{ what, expr, want string }{
		{"url is required", `document.querySelector('[data-field="url"] .req') ? "yes" : "no"`, "yes"},
		{"depth's default", `document.querySelector('[data-field="depth"] input').value`, "2"},
		{"mode is a select with its default", `document.querySelector('[data-field="mode"] select').selectedOptions[0].textContent`, "fast"},
		{"follow is a select", `document.querySelector('[data-field="follow"] select') ? "yes" : "no"`, "yes"},
		{"paths is a comma list", `document.querySelector('[data-field="paths"] .hint').textContent.trim()`, "comma-separated"},
		{"limits is JSON", `document.querySelector('[data-field="limits"] textarea') ? "yes" : "no"`, "yes"},
	} {
		if got := eval[string](b, c.expr); got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, got, c.want)
		}
	}

	// Wrong values: the API's 400 puts each error next to its field.
	agentPage := b.location()
	b.do("fill in wrong values",
		chromedp.SetValue(chromedp.CSS(`[data-field="url"] input`), "not a url"),
		chromedp.SetValue(chromedp.CSS(`[data-field="depth"] input`), "0"),
		chromedp.SetValue(chromedp.CSS(`[data-field="paths"] input`), "/docs, /blog"),
		chromedp.Click(chromedp.CSS(`form.run-form button[type="submit"]`)))
	b.until("the errors next to their fields", `document.querySelector('[data-field="url"] .field-error').textContent && document.querySelector('[data-field="depth"] .field-error').textContent`)
	if got := b.text(`[data-field="url"] .field-error`); !strings.Contains(got, "not a valid URI") {
		t.Errorf("url's error = %q, want the format error", got)
	}
	if got := b.text(`[data-field="depth"] .field-error`); !strings.Contains(got, "minimum") {
		t.Errorf("depth's error = %q, want the minimum error", got)
	}
	if got := b.text(`[data-field="mode"] .field-error`); got != "" {
		t.Errorf("mode has an error %q, but its value was right", got)
	}
	if got := b.location(); got != agentPage {
		t.Fatalf("after a refused run the page moved to %s", got)
	}
	b.shot("agent-form-errors")

	// Corrected: the run starts and the session's page opens.
	b.do("correct the values",
		chromedp.SetValue(chromedp.CSS(`[data-field="url"] input`), "https://example.com/docs"),
		chromedp.SetValue(chromedp.CSS(`[data-field="depth"] input`), "3"),
		chromedp.Click(chromedp.CSS(`form.run-form button[type="submit"]`)))
	b.until("the session page", `/\/ui\/sessions\/ses_[0-9a-z]+$/.test(location.pathname)`)
	m := sessionURL.FindStringSubmatch(b.location())
	if m == nil {
		t.Fatalf("location %s is not a session page", b.location())
	}
	crawlID := m[1]

	// Its stderr arrives while it runs (the agent waits for the gate), the markup line as text.
	b.until("the stderr lines", `document.querySelector('#log').textContent.includes("crawling the site") && document.querySelector('#log').textContent.includes(`+js(xssLine)+`)`)
	b.until("the running status", `document.querySelector('h1[data-status="running"]')`)
	if n := eval[int](b, `document.querySelectorAll('img').length`); n != 0 {
		t.Errorf("the page has %d img elements: the agent's stderr was rendered as HTML", n)
	}
	if got := b.text("#parameters"); !strings.Contains(got, `"url": "https://example.com/docs"`) || !strings.Contains(got, `"depth": 3`) ||
		!strings.Contains(got, `"mode": "fast"`) || !strings.Contains(got, `"/blog"`) {
		t.Errorf("parameters shown = %q, want the run's, with the default mode", got)
	}
	b.shot("session-running")

	w.openGate(t)
	b.until("the result", `document.querySelector('h1[data-status="completed"]') && document.querySelector('#result-data')`)
	if got := b.text("#result-data"); !strings.Contains(got, `"pages": 3`) {
		t.Errorf("result_data shown = %q", got)
	}
	if got := b.text("#exit-code"); got != "0" {
		t.Errorf("exit code shown = %q, want 0", got)
	}
	b.until("the run_ended event", `document.querySelector('#events li[data-type="run_ended"]')`)
	b.shot("session-completed")

	// A pasted link (a fresh load) shows the same session, its log replayed.
	b.do("load the session's address", chromedp.Navigate(ui+"sessions/"+crawlID))
	b.until("the replayed session", `document.querySelector('#result-data') && document.querySelector('#log').textContent.includes(`+js(xssLine)+`)`)

	// Stop: a session that waits to be stopped, stopped with the button.
	b.do("open the sleeper agent", chromedp.Navigate(ui+"agents/sleeper"))
	b.until("its form", `document.querySelector('form.run-form')`)
	b.do("start it", chromedp.Click(chromedp.CSS(`form.run-form button[type="submit"]`)))
	b.until("its session page", `/\/ui\/sessions\/ses_/.test(location.pathname) && document.querySelector('#log').textContent.includes("waiting to be stopped")`)
	sleeperID := sessionURL.FindStringSubmatch(b.location())[1]
	b.until("the Stop button", `document.querySelector('#stop')`)
	b.do("stop it", chromedp.Click(chromedp.CSS(`#stop`)))
	b.until("the stopped status", `document.querySelector('h1[data-status="stopped"]')`)
	if got := eval[bool](b, `!!document.querySelector('#stop')`); got {
		t.Error("a stopped session still shows Stop")
	}

	// Resume: an AI agent's session, once ended, takes a prompt to go on with. (No runner here runs AI
	// agents: the session waits, is stopped, and resumed to wait again.)
	if status, out := call(t, w, "POST", "/agents", "", `{"name": "reviewer", "type": "agent", "description": "Reviews a change"}`); status != 201 {
		t.Fatalf("POST /agents = %d %s", status, out)
	}
	b.do("open the reviewer agent", chromedp.Navigate(ui+"agents/reviewer"))
	b.until("its prompt box", `document.querySelector('[data-field="prompt"] textarea')`)
	b.do("start it", chromedp.SetValue(chromedp.CSS(`[data-field="prompt"] textarea`), "review the change"),
		chromedp.Click(chromedp.CSS(`form.run-form button[type="submit"]`)))
	b.until("its pending session", `/\/ui\/sessions\/ses_/.test(location.pathname) && document.querySelector('h1[data-status="pending"]') && document.querySelector('#stop')`)
	reviewerID := sessionURL.FindStringSubmatch(b.location())[1]
	b.do("stop it", chromedp.Click(chromedp.CSS(`#stop`)))
	b.until("the Resume box", `document.querySelector('h1[data-status="stopped"]') && document.querySelector('#resume-prompt')`)
	b.do("resume it", chromedp.SetValue(chromedp.CSS(`#resume-prompt`), "now look at the tests"),
		chromedp.Click(chromedp.CSS(`#resume`)))
	b.until("the resumed session", `document.querySelector('h1[data-status="pending"]') && document.querySelector('#stop') && !document.querySelector('#resume-prompt')`)
	b.do("stop it again", chromedp.Click(chromedp.CSS(`#stop`)))
	b.until("it stopped again", `document.querySelector('h1[data-status="stopped"]')`)
	// The status comes from the stop's answer; the second run's run_ended comes through the event stream,
	// which follows the resumed session again.
	b.until("a run_ended event for each run", `document.querySelectorAll('#events li[data-type="run_ended"]').length === 2`)

	// The sessions list: newest first, and a session started elsewhere shows up without a reload.
	b.do("open the sessions list", chromedp.Navigate(ui+"sessions"))
	b.until("both sessions listed", `document.querySelector('#sessions tr[data-session=`+js(crawlID)+`]') && document.querySelector('#sessions tr[data-session=`+js(sleeperID)+`]')`)
	if first := eval[string](b, `document.querySelector('#sessions tbody tr').dataset.session`); first != reviewerID {
		t.Errorf("first row is %s, want the newest session %s", first, reviewerID)
	}
	greetID := startRun(t, w, "", `{"agent_name": "greet", "parameters": {"name": "<b>bold</b>"}}`)
	b.until("a session started elsewhere", `document.querySelector('#sessions tbody tr[data-session=`+js(greetID)+`]')`)
	b.until("its completion", `document.querySelector('#sessions tr[data-session=`+js(greetID)+`] .badge').textContent === "completed"`)
	b.shot("sessions")
	b.do("filter by status", chromedp.SetValue(chromedp.CSS(`#filter-status`), "stopped"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#filter-status').dispatchEvent(new Event('change'))`))
	b.until("only the stopped sessions", `location.search === "?status=stopped" && document.querySelectorAll('#sessions tbody tr').length === 2 && document.querySelector('#sessions tr[data-session=`+js(sleeperID)+`]') && document.querySelector('#sessions tr[data-session=`+js(reviewerID)+`]')`)

	// A pasted link keeps its filters.
	b.do("load a filtered list", chromedp.Navigate(ui+"sessions?agent=crawl"))
	b.until("only the crawl session", `document.querySelectorAll('#sessions tbody tr').length === 1 && document.querySelector('#sessions tr[data-session=`+js(crawlID)+`]') && document.querySelector('#filter-agent').value === "crawl"`)

	// A run started with a W3C traceparent shows its trace id on its page.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", w.URL+"/runs", strings.NewReader(`{"agent_name": "greet", "parameters": {"name": "traced"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var traced struct {
		SessionID string `json:"session_id"`
	}
	json.NewDecoder(res.Body).Decode(&traced)
	res.Body.Close()
	b.do("open the traced session", chromedp.Navigate(ui+"sessions/"+traced.SessionID))
	b.until("its trace id", `document.querySelector('#trace-id')`)
	if got := b.text("#trace-id"); got != traceID {
		t.Errorf("trace id shown = %q, want %s", got, traceID)
	}

	// A session with a retry policy shows its attempts.
	res, err = http.Post(w.URL+"/runs", "application/json", strings.NewReader(`{"agent_name": "greet", "parameters": {"name": "retried"}, "retry": {"max_attempts": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	var retried struct {
		SessionID string `json:"session_id"`
	}
	json.NewDecoder(res.Body).Decode(&retried)
	res.Body.Close()
	b.do("open the session with retries", chromedp.Navigate(ui+"sessions/"+retried.SessionID))
	b.until("its attempts", `document.querySelector('#attempts')`)
	if got := b.text("#attempts"); got != "1 of 3" {
		t.Errorf("attempts shown = %q, want \"1 of 3\"", got)
	}

	// The runner, with its slots, agents and what demands match on.
	b.do("open the runners page", chromedp.Navigate(ui+"runners"))
	b.until("the runner", `document.querySelector('[data-runner] .slots')`)
	card := b.text("[data-runner]")
	for _, want := range []string{"ui-test-host", "online", "0 running, 4 free of 4", "crawl", "sleeper", "greet", "linux", "deterministic"} {
		if !strings.Contains(card, want) {
			t.Errorf("the runner's card %q lacks %q", card, want)
		}
	}
	if n := eval[int](b, `document.querySelectorAll('[data-admin]').length`); n != 1 {
		t.Errorf("an open API shows %d admin actions on the runners page, want the runner's Remove button", n)
	}
	b.shot("runners")

	// A schedule, shown as text, paused from the page.
	resp, err := http.Post(w.URL+"/schedules", "application/json", strings.NewReader(
		`{"agent_name":"greet","parameters":{"name":"<b>new year</b>"},"cron":"0 0 1 1 *","timezone":"Europe/Paris"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sched orchestrator.Schedule
	if err := json.NewDecoder(resp.Body).Decode(&sched); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /schedules: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	b.do("open the schedules page", chromedp.Navigate(ui+"schedules"))
	srow := `#schedules tr[data-schedule=` + js(sched.ID) + `]`
	b.until("the schedule listed", `document.querySelector(`+js(srow)+`)`)
	text := b.text(srow)
	for _, want := range []string{sched.ID, "greet", "0 0 1 1 *", "Europe/Paris", "active", "overlap skip", "Pause"} {
		if !strings.Contains(text, want) {
			t.Errorf("the schedule's row %q lacks %q", text, want)
		}
	}
	b.do("pause it", chromedp.Click(chromedp.CSS(srow+` button[data-toggle]`)))
	b.until("the schedule paused", `document.querySelector(`+js(srow+` .badge`)+`).textContent === "paused"`)
	if got := b.text(srow + ` button[data-toggle]`); got != "Resume" {
		t.Errorf("after a pause the button says %q, want Resume", got)
	}
	b.shot("schedules")

	b.mu.Lock()
	dialogs := b.dialogs
	b.mu.Unlock()
	if dialogs != 0 {
		t.Errorf("%d dialogs opened", dialogs)
	}
	b.checkClean()

	// The watch above can fail: an inline style (which the policy forbids) is reported, and so is a dialog.
	b.do("break the policy", chromedp.Evaluate[chromedp.Void](`document.body.setAttribute("style", "color: red")`))
	b.do("open a dialog", chromedp.Evaluate[chromedp.Void](`setTimeout(() => alert("probe"), 0)`))
	deadline := time.Now().Add(stepTimeout)
	for {
		b.mu.Lock()
		n, d := len(b.problems), b.dialogs
		b.mu.Unlock()
		if n >= 2 && d == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tab's watch saw %d problems and %d dialogs after a policy violation and an alert, want both", n, d)
		}
		b.until("a frame", `new Promise(r => requestAnimationFrame(() => r(true)))`)
	}
	joined := strings.Join(b.takeProblems(), "\n")
	if !strings.Contains(joined, "Content Security Policy") || !strings.Contains(joined, "dialog") {
		t.Errorf("the watch reported %q, want the policy violation and the dialog", joined)
	}
}

// TestBrowserTokens: with tokens the pages ask for one, refuse a wrong one, and act with the role of the
// one given — a client token sees no runners and no admin action; an admin token sees both.
func TestBrowserTokens(t *testing.T) {
	w := newWorld(t, map[string]httpapi.Role{adminToken: httpapi.RoleAdmin, clientToken: httpapi.RoleClient})
	fillSessions(t, w.Store, 75)
	b := newBrowser(t)
	ui := w.URL + "/ui/"

	b.do("open the runners page", chromedp.Navigate(ui+"runners"))
	b.until("the token prompt", `document.querySelector('form.token-form #token')`)
	b.shot("token-prompt")

	b.do("give a wrong token", chromedp.SetValue(chromedp.CSS(`#token`), "not-a-token"),
		chromedp.Click(chromedp.CSS(`form.token-form button[type="submit"]`)))
	b.until("the refusal", `(document.querySelector('form.token-form .notice.error') || {}).textContent?.includes("not accepted")`)

	b.do("give the client token", chromedp.SetValue(chromedp.CSS(`#token`), clientToken),
		chromedp.Click(chromedp.CSS(`form.token-form button[type="submit"]`)))
	b.until("the note that runners need an admin token", `document.querySelector('[data-needs-admin]')`)
	if got := b.text("[data-needs-admin]"); !strings.Contains(got, "needs an admin token") {
		t.Errorf("runners page for a client says %q", got)
	}
	b.until("the header's role", `document.querySelector('#auth [data-role="client"]')`)
	if n := eval[int](b, `document.querySelectorAll('[data-admin], [data-runner]').length`); n != 0 {
		t.Errorf("a client token sees %d admin actions or runners", n)
	}
	b.shot("runners-client")

	// The token stays for the tab: a fresh load of another page needs no prompt, and runs start and stream
	// with it (the events through fetch, which can send the token).
	b.do("open the greet agent", chromedp.Navigate(ui+"agents/greet"))
	b.until("its form", `document.querySelector('[data-field="name"] input')`)
	if got := eval[string](b, `document.querySelector('[data-field="name"] input').value`); got != "world" {
		t.Errorf("greet's name default = %q", got)
	}
	b.do("start it", chromedp.Click(chromedp.CSS(`form.run-form button[type="submit"]`)))
	b.until("its result", `document.querySelector('h1[data-status="completed"]') && (document.querySelector('#result-text') || {}).textContent?.includes("hello")`)
	b.until("its events", `document.querySelector('#events li[data-type="run_ended"]')`)
	if n := eval[int](b, `document.querySelectorAll('[data-admin]').length`); n != 0 {
		t.Errorf("a client token sees %d admin actions on a session page", n)
	}

	// Pages of sessions, newest first: 75 older ones and the greet session.
	b.do("open the sessions list", chromedp.Navigate(ui+"sessions"))
	b.until("the first page", `document.querySelectorAll('#sessions tbody tr').length === 50 && document.querySelector('#older')`)
	if first := eval[string](b, `document.querySelector('#sessions tbody tr').dataset.session`); !strings.HasPrefix(first, "ses_01") {
		t.Errorf("first row is %s, want the greet session, the newest", first)
	}
	b.do("page on", chromedp.Click(chromedp.CSS(`#older`)))
	b.until("the second page", `location.search.startsWith("?cursor=") && document.querySelectorAll('#sessions tbody tr').length === 26 && !document.querySelector('#older')`)
	if last := eval[string](b, `[...document.querySelectorAll('#sessions tbody tr')].pop().dataset.session`); last != "ses_bench000000" {
		t.Errorf("the last row is %s, want the oldest session", last)
	}
	b.do("go back", chromedp.NavigateBack())
	b.until("the first page again", `location.search === "" && document.querySelectorAll('#sessions tbody tr').length === 50`)

	// Signing out asks again; the admin token sees the runners, with their admin actions.
	b.do("sign out", chromedp.Click(chromedp.CSS(`#auth button`)))
	b.until("the token prompt", `document.querySelector('form.token-form #token')`)
	b.do("give the admin token", chromedp.SetValue(chromedp.CSS(`#token`), adminToken),
		chromedp.Click(chromedp.CSS(`form.token-form button[type="submit"]`)))
	b.do("open the runners page", chromedp.Navigate(ui+"runners"))
	b.until("the runner", `document.querySelector('[data-runner] .slots')`)
	if n := eval[int](b, `document.querySelectorAll('[data-admin]').length`); n != 1 {
		t.Errorf("an admin token sees %d admin actions, want the runner's Remove button", n)
	}
	b.until("the header's role", `document.querySelector('#auth [data-role="admin"]')`)
	b.checkClean()
}
