package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/ui"
)

// answer is one request the coordinator answered, as it saw it.
type answer struct {
	method, path, host string
	status             int
}

// recorder keeps what the coordinator's handler answered.
type recorder struct {
	h  http.Handler
	mu sync.Mutex
	a  []answer
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	rc.h.ServeHTTP(sw, r)
	rc.mu.Lock()
	rc.a = append(rc.a, answer{r.Method, r.URL.Path, r.Host, sw.status})
	rc.mu.Unlock()
}

func (rc *recorder) answers() []answer {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]answer(nil), rc.a...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// attackPage is what a page of another origin does to a coordinator at target: everything a browser
// lets it send without the coordinator's consent — text/plain and form-encoded bodies through fetch and
// through forms, JSON (which needs a preflight) — to create an AI agent whose MCP server is a shell, start
// a run and create a schedule, and a read of the sessions. It records what each attempt saw in
// window.results and sets window.done.
func attackPage(target string) string {
	shell, _ := json.Marshal(map[string]any{"name": "shell", "type": "agent", "description": "pwned",
		"mcp_servers": map[string]any{"sh": map[string]any{"command": "/bin/sh", "args": []string{"-c", "id"}}}})
	run := `{"agent_name":"helper","prompt":"run me"}`
	sched := `{"agent_name":"helper","parameters":{"prompt":"again"},"cron":"* * * * *"}`
	// A text/plain form sends name=value: a name ending in a string that the value closes makes the body JSON.
	formName := strings.TrimSuffix(run, `"}`) + `","pad":"`
	return `<!doctype html><meta charset="utf-8"><title>attack</title>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="plain" target="sink1" method="post" enctype="text/plain" action="` + target + `/runs"><input name='` + formName + `' value='"}'></form>
<form id="urlencoded" target="sink2" method="post" action="` + target + `/runs"><input name="agent_name" value="helper"><input name="prompt" value="x"></form>
<form id="multipart" target="sink3" method="post" enctype="multipart/form-data" action="` + target + `/schedules"><input name="agent_name" value="helper"></form>
<script>
const target = ` + js(target) + `;
const shell = ` + js(string(shell)) + `, run = ` + js(run) + `, sched = ` + js(sched) + `;
window.results = {};
async function attempt(name, p) {
  try {
    const r = await p;
    window.results[name] = r.type === 'opaque' ? 'opaque' : r.status + ' ' + (await r.text());
  } catch (e) {
    window.results[name] = 'failed: ' + e.message;
  }
}
const post = (path, init) => fetch(target + path, { method: 'POST', ...init });
Promise.all([
  attempt('agent as text/plain', post('/agents', { mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: shell })),
  attempt('run as text/plain', post('/runs', { mode: 'no-cors', body: run })),
  attempt('schedule as text/plain', post('/schedules', { mode: 'no-cors', body: sched })),
  attempt('run as a form', post('/runs', { mode: 'no-cors', body: new URLSearchParams({ agent_name: 'helper', prompt: 'x' }) })),
  attempt('run as a blob', post('/runs', { mode: 'no-cors', body: new Blob([run]) })),
  attempt('agent as JSON', post('/agents', { headers: { 'Content-Type': 'application/json' }, body: shell })),
  attempt('schedule as JSON', post('/schedules', { headers: { 'Content-Type': 'application/json' }, body: sched })),
  attempt('sessions read', fetch(target + '/sessions')),
]).then(() => {
  for (const id of ['plain', 'urlencoded', 'multipart']) document.getElementById(id).submit();
  window.done = true;
});
</script>`
}

// reboundPage is what a page does once its own name resolves to the coordinator's address: to the
// browser its requests are same-origin, so it could read the answers and send JSON.
const reboundPage = `<!doctype html><meta charset="utf-8"><title>rebound</title><script>
window.results = {};
async function attempt(name, p) {
  try {
    const r = await p;
    window.results[name] = r.status + ' ' + (await r.text());
  } catch (e) {
    window.results[name] = 'failed: ' + e.message;
  }
}
Promise.all([
  attempt('sessions read', fetch('/sessions')),
  attempt('agents read', fetch('/agents')),
  attempt('run as JSON', fetch('/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"agent_name":"helper","prompt":"run me"}' })),
  attempt('schedule as JSON', fetch('/schedules', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"agent_name":"helper","parameters":{"prompt":"x"},"cron":"* * * * *"}' })),
]).then(() => { window.done = true; });
</script>`

// TestBrowserOtherOriginsChangeNothing: in a real Chromium, pages of other origins attack an open API
// (no tokens, on loopback, as the quickstart serves it): a page served on another port (the same site,
// another origin), one on another host name, and one whose name is made to resolve to the coordinator's
// address (DNS rebinding, played by a listener that serves the page and then the coordinator). The
// coordinator sees their requests — the test checks that it does, so it cannot pass because a browser sent
// nothing — and refuses every one: no agent, run or schedule is created, and no session is read.
func TestBrowserOtherOriginsChangeNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	store, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatalf("sqlstore.New: %v", err)
	}
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{h: httpapi.NewHandler(coord, httpapi.Config{UI: ui.NewHandler()})}
	api := httptest.NewServer(rec)
	t.Cleanup(func() {
		api.Close()
		cancel()
		coord.Stop()
		store.Close()
	})
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "helper", Type: orchestrator.AgentTypeAgent, Description: "helps"}); err != nil {
		t.Fatal(err)
	}
	existing, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "the one session"})
	if err != nil {
		t.Fatal(err)
	}

	// The other origins: a server on another port of 127.0.0.1, reached also as attacker.test (a host
	// name the browser resolves to 127.0.0.1), and the rebinding listener, reached as rebound.test.
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, attackPage(api.URL))
	}))
	t.Cleanup(attacker.Close)
	rebinding := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/attack":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, reboundPage)
			return
		case "/favicon.ico":
			http.NotFound(w, r)
			return
		}
		rec.ServeHTTP(w, r) // the name now resolves to the coordinator
	}))
	t.Cleanup(rebinding.Close)
	b := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP attacker.test 127.0.0.1, MAP rebound.test 127.0.0.1"))

	port := func(u string) string { return u[strings.LastIndex(u, ":")+1:] }
	for _, page := range []struct{ name, url string }{
		{"another port", attacker.URL + "/"},
		{"another host", "http://attacker.test:" + port(attacker.URL) + "/"},
		{"rebinding", "http://rebound.test:" + port(rebinding.URL) + "/attack"},
	} {
		seen := len(rec.answers())
		b.do("open the page on "+page.name, chromedp.Navigate(page.url))
		b.until("the attempts on "+page.name, `window.done === true`)
		var results map[string]string
		if err := json.Unmarshal([]byte(eval[string](b, `JSON.stringify(window.results)`)), &results); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v", page.name, results)
		for what, got := range results {
			// Opaque (no-cors): the page cannot tell; failed: the browser stopped it (a refused preflight,
			// or an answer without CORS headers); a status: only the rebinding page can read one.
			if strings.HasPrefix(got, "2") || strings.Contains(got, existing.SessionID) {
				t.Errorf("%s: %s got %q", page.name, what, got)
			}
			if page.name == "rebinding" && !strings.HasPrefix(got, "421 ") {
				t.Errorf("%s: %s got %q, want 421 host_not_allowed", page.name, what, got)
			}
		}
		// What reached the coordinator: each of the page's requests (the preflights of its JSON requests
		// in their stead), every one refused. The forms go last; all of it is waited for here, so that the
		// next page's requests are told apart.
		want := map[string]int{"POST /agents": 1, "POST /runs": 5, "POST /schedules": 2, "GET /sessions": 1, "OPTIONS /agents": 1, "OPTIONS /schedules": 1}
		if page.name == "rebinding" {
			want = map[string]int{"GET /sessions": 1, "GET /agents": 1, "POST /runs": 1, "POST /schedules": 1}
		}
		deadline := time.Now().Add(stepTimeout)
		for {
			got := map[string]int{}
			for _, a := range rec.answers()[seen:] {
				got[a.method+" "+a.path]++
			}
			var missing []string
			for k, n := range want {
				if got[k] < n {
					missing = append(missing, fmt.Sprintf("%s (%d of %d)", k, got[k], n))
				}
			}
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the coordinator never saw %v; it saw %v", page.name, missing, rec.answers()[seen:])
			}
			b.until("a frame", `new Promise(r => requestAnimationFrame(() => r(true)))`)
		}
		for _, a := range rec.answers()[seen:] {
			switch {
			case a.method == "OPTIONS" && a.status == http.StatusMethodNotAllowed: // a preflight, refused
			case a.status == http.StatusForbidden || a.status == http.StatusUnsupportedMediaType || a.status == http.StatusMisdirectedRequest:
			default:
				t.Errorf("%s: the coordinator answered %s %s (Host %s) with %d", page.name, a.method, a.path, a.host, a.status)
			}
		}
	}

	agents, err := coord.ListAgents(ctx, orchestrator.ListAgentsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 {
		t.Errorf("agents after the attacks: %d, want only helper", len(agents))
	}
	page, err := coord.ListSessions(ctx, orchestrator.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 {
		t.Errorf("sessions after the attacks: %d, want the one the test started", len(page.Sessions))
	}
	scheds, err := coord.ListSchedules(ctx, orchestrator.ScheduleFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(scheds) != 0 {
		t.Errorf("schedules after the attacks: %d, want none", len(scheds))
	}

	// The same browser, on the coordinator's own origin, is served: the dashboard lists the session.
	b.do("open the dashboard", chromedp.Navigate(api.URL+"/ui/sessions"))
	b.until("the session listed", `document.querySelector('#sessions tr[data-session=`+js(existing.SessionID)+`]')`)
}
