package ui_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRerun: an ended session's page shows only its events (not the stream's end frame) and has a
// Re-run button; pressed as it is, it opens the new
// session, which names the original; with a parameter changed in its box, the new session runs with it.
func TestBrowserRerun(t *testing.T) {
	w := newWorld(t, nil)
	b := newBrowser(t)
	ui := w.URL + "/ui/"

	origID := startRun(t, w, "", `{"agent_name": "greet", "parameters": {"name": "first"}}`)
	b.do("open the ended session", chromedp.Navigate(ui+"sessions/"+origID))
	b.until("the Re-run button", `document.querySelector('h1[data-status="completed"]') && document.querySelector('#rerun')`)
	// The stream's closing "end" frame is not drawn as an event: every row is a real event, and the page
	// says undefined nowhere.
	b.until("the stream closed after the last event", `document.querySelector('#stream-state[data-state="closed"]') && document.querySelector('#events li[data-type="run_ended"]')`)
	if got := eval[string](b, `[...document.querySelectorAll('#events li')].map(li => li.dataset.type + ' ' + li.dataset.seq).join(', ')`); strings.Contains(got, "undefined") {
		t.Errorf("an ended session's events are %q: a row that is no event", got)
	}
	if eval[bool](b, `document.querySelector('main').textContent.includes('undefined')`) {
		t.Errorf("an ended session's page says undefined: %q", b.text("#events"))
	}
	b.do("re-run it", chromedp.Click(chromedp.CSS(`#rerun`)))
	b.until("the new session's page", `/\/ui\/sessions\/ses_/.test(location.pathname) && !location.pathname.endsWith(`+js(origID)+`) && document.querySelector('#rerun-of')`)
	if got := b.text("#rerun-of"); got != origID {
		t.Errorf("the re-run's page says it re-runs %q, want %s", got, origID)
	}
	b.until("the re-run completed with the original's parameters", `document.querySelector('h1[data-status="completed"]') && document.querySelector('#parameters').textContent.includes('"first"')`)
	b.shot("session-rerun")

	// With a changed parameter, through the box.
	b.do("open the original again", chromedp.Navigate(ui+"sessions/"+origID))
	b.until("the Re-run box", `document.querySelector('#rerun-parameters')`)
	b.do("change the name and re-run",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form.rerun details').open = true`),
		chromedp.SetValue(chromedp.CSS(`#rerun-parameters`), `{"name": "second"}`),
		chromedp.Click(chromedp.CSS(`#rerun`)))
	b.until("the second re-run", `!location.pathname.endsWith(`+js(origID)+`) && document.querySelector('#rerun-of') && document.querySelector('#parameters') && document.querySelector('#parameters').textContent.includes('"second"')`)
	secondID := sessionURL.FindStringSubmatch(b.location())[1]
	status, out := call(t, w, "GET", "/sessions/"+secondID, "", "")
	var s struct {
		RerunOf    string          `json:"rerun_of"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(out, &s); err != nil || status != 200 || s.RerunOf != origID || !strings.Contains(string(s.Parameters), `"second"`) {
		t.Errorf("GET /sessions/%s = %d %s, want rerun_of %s and name second", secondID, status, out, origID)
	}

	// Bad JSON in the box is said on the page, and nothing is sent.
	b.do("open the original once more", chromedp.Navigate(ui+"sessions/"+origID))
	b.until("the Re-run box", `document.querySelector('#rerun-parameters')`)
	b.do("break the JSON and re-run",
		chromedp.SetValue(chromedp.CSS(`#rerun-parameters`), `{"name": `),
		chromedp.Click(chromedp.CSS(`#rerun`)))
	b.until("the error", `document.querySelector('.session-actions + div').textContent.includes('Re-run')`)
	if !strings.HasSuffix(b.location(), origID) {
		t.Errorf("a refused re-run moved the page to %s", b.location())
	}
	b.checkClean()
}
