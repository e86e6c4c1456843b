package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// benchSessions is the size of the store the dashboard benchmarks read.
const benchSessions = 10000

// fillSessions writes n sessions of five agents, one a second up to now, most of them ended with a small
// result, in one transaction.
func fillSessions(tb testing.TB, st store.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	start := time.Now().Add(-time.Duration(n) * time.Second).UTC().Truncate(time.Microsecond)
	zero := 0
	statuses := []orchestrator.SessionStatus{orchestrator.SessionCompleted, orchestrator.SessionCompleted, orchestrator.SessionCompleted,
		orchestrator.SessionFailed, orchestrator.SessionStopped, orchestrator.SessionCompleted, orchestrator.SessionCompleted}
	err := st.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		for i := range n {
			created := start.Add(time.Duration(i) * time.Second)
			ended := created.Add(1500 * time.Millisecond)
			s := &orchestrator.Session{
				ID:         fmt.Sprintf("ses_bench%06d", i),
				AgentName:  fmt.Sprintf("agent-%d", i%5),
				AgentType:  orchestrator.AgentTypeDeterministic,
				Status:     statuses[i%len(statuses)],
				Parameters: json.RawMessage(fmt.Sprintf(`{"url": "https://example.com/%d", "depth": 2}`, i)),
				CreatedAt:  created,
				UpdatedAt:  ended,
				EndedAt:    &ended,
				Result:     &orchestrator.Result{ResultType: "deterministic", ResultText: `{"pages": 3}`, ResultData: json.RawMessage(`{"pages": 3}`), ExitCode: &zero},
			}
			if i == n-1 { // the newest one still runs
				s.Status, s.EndedAt, s.Result = orchestrator.SessionRunning, nil, nil
			}
			if err := tx.CreateSession(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("filling in %d sessions: %v", n, err)
	}
}

// pageLoad is what a browser asks for when it opens /ui/sessions with an empty cache: the page, its
// stylesheet and icon, the modules the sessions page needs, the first page of sessions (newest first),
// and the role probe that labels the header (GET /runners).
var pageLoad = []string{
	"/ui/sessions", "/ui/assets/style.css", "/ui/assets/favicon.svg",
	"/ui/assets/app.js", "/ui/assets/api.js", "/ui/assets/dom.js", "/ui/assets/sessions.js",
	"/sessions?order=newest&limit=50", "/runners",
}

func fetchAll(b *testing.B, client *http.Client, base string, paths []string) {
	for _, p := range paths {
		res, err := client.Get(base + p)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("GET %s = %d (%v)", p, res.StatusCode, err)
		}
	}
}

// BenchmarkUISessionsPage serves the sessions page against a store of 10,000 sessions, over loopback
// HTTP, one request after another: "page" is everything a first load fetches (see pageLoad), the others
// one API page each.
func BenchmarkUISessionsPage(b *testing.B) {
	w := newWorld(b, nil)
	fillSessions(b, w.Store, benchSessions)
	client := &http.Client{}
	for _, bc := range []struct {
		name  string
		paths []string
	}{
		{"page", pageLoad},
		{"first_api_page", []string{"/sessions?order=newest&limit=50"}},
		{"filtered_by_status_and_agent", []string{"/sessions?order=newest&limit=50&status=failed&agent_name=agent-3"}},
		{"tenth_page", []string{"/sessions?order=newest&limit=50&cursor=" + cursorAt(b, client, w.URL, 9)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fetchAll(b, client, w.URL, bc.paths) // warm the connection
			for b.Loop() {
				fetchAll(b, client, w.URL, bc.paths)
			}
		})
	}
}

// cursorAt returns the cursor of the page after the first n pages of 50, newest first.
func cursorAt(b *testing.B, client *http.Client, base string, n int) string {
	cursor := ""
	for range n {
		res, err := client.Get(base + "/sessions?order=newest&limit=50&cursor=" + cursor)
		if err != nil {
			b.Fatal(err)
		}
		var page orchestrator.SessionPage
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || page.NextCursor == "" {
			b.Fatalf("paging: %v (cursor %q)", err, page.NextCursor)
		}
		cursor = page.NextCursor
	}
	return cursor
}

// BenchmarkUISessionsPageBrowser loads /ui/sessions in headless Chromium against a store of 10,000
// sessions, from navigation to the first page of the table on screen, with the browser's cache off (every
// load a first visit). ms_to_table is the page's own measure: performance.now(), counted from the
// navigation's start, when the 50 rows appear. ms_baseline is the same for the smallest page of the same
// shape — one stylesheet, one module that fetches one JSON document and renders a row — loaded in the same
// iteration: what the browser itself costs on the machine at the time.
func BenchmarkUISessionsPageBrowser(b *testing.B) {
	w := newWorld(b, nil)
	fillSessions(b, w.Store, benchSessions)
	base := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(rw, `<!doctype html><html><head><link rel="stylesheet" href="/s.css"><script type="module" src="/m.js"></script></head><body><table id="t"><tbody></tbody></table></body></html>`)
		case "/s.css":
			rw.Header().Set("Content-Type", "text/css")
			io.WriteString(rw, `body { font: 15px sans-serif }`)
		case "/m.js":
			rw.Header().Set("Content-Type", "text/javascript")
			io.WriteString(rw, `const d = await (await fetch('/d.json')).json(); const tr = document.createElement('tr'); tr.textContent = d.x; document.querySelector('#t tbody').append(tr);`)
		case "/d.json":
			rw.Header().Set("Content-Type", "application/json")
			io.WriteString(rw, `{"x": "row"}`)
		default:
			http.NotFound(rw, r)
		}
	}))
	defer base.Close()
	br := newBrowser(b)
	if _, err := chromedp.Call(br.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		b.Fatal(err)
	}
	pages := []struct{ metric, url, ready string }{
		{"ms_to_table", w.URL + "/ui/sessions", `document.querySelectorAll('#sessions tbody tr').length === 50`},
		{"ms_baseline", base.URL + "/", `document.querySelectorAll('#t tbody tr').length === 1`},
	}
	totals := make([]float64, len(pages))
	n := 0
	// Each iteration loads both pages, so that both see the same load on a shared machine.
	for b.Loop() {
		for i, pg := range pages {
			ctx, cancel := context.WithTimeout(br.ctx, stepTimeout)
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(pg.url)); err != nil {
				b.Fatal(err)
			}
			poll := chromedp.Poll[float64](pg.ready+` && performance.now()`,
				chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(stepTimeout))
			ms, err := chromedp.Run(ctx, poll)
			if err != nil && strings.Contains(err.Error(), "Cannot find context") {
				// The poll met the blank page's context on its way out: once more, in the new one.
				ms, err = chromedp.Run(ctx, poll)
			}
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			totals[i] += ms
		}
		n++
	}
	for i, pg := range pages {
		b.ReportMetric(totals[i]/float64(n), pg.metric)
	}
	br.checkClean()
}
