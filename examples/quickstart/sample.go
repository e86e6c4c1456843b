package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// demoSite is a tiny website for the sample crawl, so the quickstart needs no network.
var demoSite = map[string]string{
	"/":                `<html><head><title>Demo home</title></head><body><a href="/docs/">Docs</a> <a href="/about.html">About</a></body></html>`,
	"/about.html":      `<html><head><title>About the demo</title></head><body><a href="/">Home</a></body></html>`,
	"/docs/":           `<html><head><title>Docs index</title></head><body><a href="/docs/start.html">Start</a></body></html>`,
	"/docs/start.html": `<html><head><title>Getting started</title></head><body><a href="/docs/">Back</a></body></html>`,
}

// serveDemoSite serves demoSite on addr (127.0.0.1:0 when addr is taken) until the returned stop is
// called, and returns its URL.
func serveDemoSite(addr string) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", nil, err
		}
	}
	site := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := demoSite[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})}
	go site.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { site.Close() }, nil
}

// sample crawls the demo site at siteURL through the HTTP API, as any client would, and prints the
// result.
func sample(ctx context.Context, base, token, siteURL string) (string, error) {
	client, err := httpapi.NewClient(base, httpapi.ClientConfig{Token: token})
	if err != nil {
		return "", err
	}
	params, _ := json.Marshal(map[string]any{"url": siteURL, "depth": 2})
	fmt.Printf("\nPOST %s/runs {\"agent_name\":\"web-crawler\",\"mode\":\"sync\",\"parameters\":%s}\n", base, params)
	res, err := client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeSync, Parameters: params})
	if err != nil {
		return "", err
	}
	fmt.Printf("session %s %s\n", res.SessionID, res.Status)
	if res.Result == nil {
		return res.SessionID, fmt.Errorf("the sample run ended without a result: %s", res.Error)
	}
	var report struct {
		PagesCrawled int `json:"pages_crawled"`
		Pages        []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"pages"`
	}
	if err := json.Unmarshal(res.Result.ResultData, &report); err != nil {
		return res.SessionID, fmt.Errorf("the crawler's result_data: %w (error: %s)", err, res.Result.Error)
	}
	fmt.Printf("result_data: %d pages crawled\n", report.PagesCrawled)
	for _, p := range report.Pages {
		fmt.Printf("  %-45s %s\n", p.URL, p.Title)
	}
	return res.SessionID, nil
}

// printTryNext prints what to try next: the token to export, ao commands, curl commands, MCP.
func printTryNext(w io.Writer, base, session, siteURL string, tok tokens) {
	fmt.Fprintf(w, `
The coordinator is serving at %[1]s and the demo site at %[3]s; Ctrl-C stops both.
Its API takes a client token (new at each start unless $ORCHESTRATOR_CLIENT_TOKEN is set); ao and curl
read it from the environment:

  export ORCHESTRATOR_TOKEN=%[4]s

Watch it in a browser: %[1]s/ui/ (it asks for the token).
The admin token, for the agent registry and the runners (ao agent add, ao runners, the dashboard's
Runners page), is %[5]s

Try ao, the command line (go install ./cmd/ao, or go run ./cmd/ao):

  ao agents
  ao agents show web-crawler
  ao run web-crawler -p url=%[3]s -p depth=2
  ao sessions
  ao logs %[2]s

or the HTTP API (bodies go as JSON: curl --json):

  # the agents, deterministic ones with their parameters_schema inline
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/agents
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/agents/web-crawler/schema

  # start a run (201 with run_id and session_id), then wait for its result
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/runs --json '{"agent_name":"file-stats","parameters":{"path":"."}}'
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" '%[1]s/sessions/SESSION_ID/result?wait=30s'

  # the sample crawl's session, its events (stderr lines as they were streamed), live as Server-Sent Events
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/sessions/%[2]s
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" '%[1]s/sessions/%[2]s/events?after=0&limit=100'
  curl -sN -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" -H 'Accept: text/event-stream' %[1]s/sessions/%[2]s/events

  # invalid parameters: 400 with every error, its path and the schema
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/runs --json '{"agent_name":"web-crawler","parameters":{"url":"not-a-url","depth":"deep"}}'

  # deterministic agents cannot be resumed: 400
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_TOKEN" %[1]s/runs --json '{"type":"resume","session_id":"%[2]s","prompt":"again"}'

  # Prometheus metrics, for the admin token (or a -metrics-token on a coordinator of your own)
  export ORCHESTRATOR_ADMIN_TOKEN=%[5]s
  curl -s -H "Authorization: Bearer $ORCHESTRATOR_ADMIN_TOKEN" %[1]s/metrics

  # AI agents reach the same tools over MCP (Claude Code):
  claude mcp add --transport http orchestrator %[1]s/mcp --header "Authorization: Bearer $ORCHESTRATOR_TOKEN"
`, base, session, siteURL, tok.client, tok.admin)
}
