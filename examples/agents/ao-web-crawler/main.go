// Command ao-web-crawler crawls a web site breadth-first and prints a JSON report of the pages it found.
// It is the example deterministic agent behind examples/blueprints/web-crawler.json.
//
// Build it under the name the blueprint runs:
//
//	go build -o ~/bin/ao-web-crawler ./examples/agents/ao-web-crawler
//
// Usage:
//
//	ao-web-crawler --url https://example.com [--depth 2] [--patterns "*.html,/docs/*"] [--max_pages 50]
//	               [--all_hosts] [--timeout_seconds 10] [--max_duration_seconds 0] [--concurrency 4]
//	               [--max_body_bytes 2097152]
//
// Every multi-word flag is accepted in snake_case — the spelling the orchestrator's deterministic executor
// uses, since it turns the blueprint's parameter names into flags as they are — and in kebab-case
// (--max-pages, --all-hosts, --timeout-seconds, ...). Flags take "--name value" or "--name=value"; a
// boolean is given as "--name" alone. --patterns is one comma-separated list, which is how the executor
// passes an array.
//
// The crawl starts at --url and follows <a href> (and <area href>) links up to --depth links away (0 =
// the start page only), fetching each level's URLs, four at a time, before the next level. It stays on
// the start URL's host and port unless --all_hosts is given (--same_host=false means the same). URLs are
// de-duplicated once their fragment is dropped and their scheme and host lower-cased; only http and https
// are followed. When --patterns are given, only pages whose URL path matches one of them are reported
// (links of other pages are still followed): a pattern with a '/' is a path.Match glob for the whole path
// ("/docs/*"), one without is matched against the path's last element ("*.html"). Each response body is
// read up to --max_body_bytes; at most --max_pages requests are made; each request has --timeout_seconds;
// with --max_duration_seconds > 0 no request is started after that long.
//
// Output: one JSON object on stdout,
//
//	{"start_url", "depth", "patterns", "pages_crawled", "pages":[{"url", "status", "title", "depth",
//	 "links_found", "bytes", "content_type", "redirected_to"?, "truncated"?}], "errors":[{"url", "error"}],
//	 "stop_reason", "duration_ms"}
//
// with pages and errors sorted by URL. pages_crawled counts every request made; pages lists the responses
// that match the patterns, whatever their status; errors lists the URLs that could not be fetched or
// answered with a status of 400 or more (whether or not they match the patterns). stop_reason is
// "complete", "max_pages", "max_duration" or "interrupted". Progress goes to stderr, one line per fetch:
//
//	fetched https://example.com/ (200, 3 links)
//
// Exit status: 0 when the crawl ran, even if some pages other than the start page failed; 3 when the
// start page itself could not be fetched (unreachable, or answered 400 or more), after printing the report
// that says why — a crawl that found nothing at its start is a failure for whoever asked for it; 2 for
// invalid flags (a bad URL, a negative depth, ...), with the reason on stderr; 1 when interrupted (SIGINT
// or SIGTERM), after printing the partial report.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageText = `Usage: ao-web-crawler --url URL [flags]

Crawls a web site breadth-first from URL and prints a JSON report on stdout;
progress goes to stderr. Multi-word flags may be spelled with '_' or '-'.

Flags:
  --url URL                        start page, http or https (required)
  --depth N                        links to follow away from the start page; 0 = start page only (default 2)
  --patterns GLOBS                 comma-separated path globs; only matching pages are reported
                                   ("*.html" matches the last path element, "/docs/*" the whole path)
  --max_pages N                    at most N requests (default 50)
  --all_hosts                      follow links to other hosts too (default: same host and port only)
  --same_host                      stay on the start host (the default); --same_host=false = --all_hosts
  --timeout_seconds S              per-request timeout, body included (default 10)
  --max_duration_seconds S         start no request after S seconds; 0 = no limit (default 0)
  --concurrency N                  requests at once (default 4)
  --max_body_bytes N               read at most N bytes of each response (default 2097152)
  --help                           show this help

Exit status: 0 crawl done (failed pages are listed in "errors"), 1 interrupted, 2 invalid flags,
3 the start page could not be fetched (the report's "errors" says why).
`

const shortUsage = "usage: ao-web-crawler --url URL [--depth N] [--patterns GLOBS] [--max_pages N] [--all_hosts] [--timeout_seconds S] (--help for all flags)\n"

// config is the parsed command line.
type config struct {
	url                string
	depth              int
	patterns           string
	maxPages           int
	allHosts           bool
	sameHost           bool
	timeoutSeconds     float64
	maxDurationSeconds float64
	concurrency        int
	maxBodyBytes       int64
}

// parseFlags parses args; the error is a usage error (flag.ErrHelp for --help).
func parseFlags(args []string) (*config, error) {
	var c config
	fs := flag.NewFlagSet("ao-web-crawler", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed by run, usage by us
	fs.StringVar(&c.url, "url", "", "")
	fs.IntVar(&c.depth, "depth", 2, "")
	fs.StringVar(&c.patterns, "patterns", "", "")
	for _, name := range []string{"max_pages", "max-pages"} {
		fs.IntVar(&c.maxPages, name, DefaultMaxPages, "")
	}
	for _, name := range []string{"all_hosts", "all-hosts"} {
		fs.BoolVar(&c.allHosts, name, false, "")
	}
	for _, name := range []string{"same_host", "same-host"} {
		fs.BoolVar(&c.sameHost, name, true, "")
	}
	for _, name := range []string{"timeout_seconds", "timeout-seconds"} {
		fs.Float64Var(&c.timeoutSeconds, name, DefaultRequestTimeout.Seconds(), "")
	}
	for _, name := range []string{"max_duration_seconds", "max-duration-seconds"} {
		fs.Float64Var(&c.maxDurationSeconds, name, 0, "")
	}
	fs.IntVar(&c.concurrency, "concurrency", DefaultConcurrency, "")
	for _, name := range []string{"max_body_bytes", "max-body-bytes"} {
		fs.Int64Var(&c.maxBodyBytes, name, DefaultMaxBodyBytes, "")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q (all input is given as --flags)", fs.Arg(0))
	case c.depth < 0:
		return nil, fmt.Errorf("--depth must be 0 or more, not %d", c.depth)
	case c.maxPages < 1:
		return nil, fmt.Errorf("--max_pages must be at least 1, not %d", c.maxPages)
	case !(c.timeoutSeconds > 0) || c.timeoutSeconds > 3600:
		return nil, fmt.Errorf("--timeout_seconds must be more than 0 and at most 3600, not %v", c.timeoutSeconds)
	case !(c.maxDurationSeconds >= 0) || c.maxDurationSeconds > 86400:
		return nil, fmt.Errorf("--max_duration_seconds must be between 0 and 86400, not %v", c.maxDurationSeconds)
	case c.concurrency < 1 || c.concurrency > 64:
		return nil, fmt.Errorf("--concurrency must be between 1 and 64, not %d", c.concurrency)
	case c.maxBodyBytes < 1:
		return nil, fmt.Errorf("--max_body_bytes must be at least 1, not %d", c.maxBodyBytes)
	}
	if _, err := ParseStartURL(c.url); err != nil {
		return nil, err
	}
	return &c, nil
}

// splitList splits a comma-separated flag value, trimming blanks and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, usageText)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ao-web-crawler: %v\n%s", err, shortUsage)
		return 2
	}
	opts := Options{
		StartURL:       c.url,
		Depth:          c.depth,
		Patterns:       splitList(c.patterns),
		MaxPages:       c.maxPages,
		AllHosts:       c.allHosts || !c.sameHost,
		RequestTimeout: time.Duration(c.timeoutSeconds * float64(time.Second)),
		MaxDuration:    time.Duration(c.maxDurationSeconds * float64(time.Second)),
		Concurrency:    c.concurrency,
		MaxBodyBytes:   c.maxBodyBytes,
		Progress:       stderr,
	}
	report, err := Crawl(ctx, opts)
	if err != nil { // invalid options (a bad pattern)
		fmt.Fprintf(stderr, "ao-web-crawler: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "done: %d requests, %d pages reported, %d errors in %d ms (%s)\n",
		report.PagesCrawled, len(report.Pages), len(report.Errors), report.DurationMS, report.StopReason)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		fmt.Fprintf(stderr, "ao-web-crawler: writing the report: %v\n", err)
		return 1
	}
	if report.StopReason == StopInterrupted {
		fmt.Fprintln(stderr, "ao-web-crawler: interrupted; the report above is partial")
		return 1
	}
	for _, e := range report.Errors {
		if e.URL == report.StartURL {
			fmt.Fprintf(stderr, "ao-web-crawler: the start page %s could not be fetched: %s\n", e.URL, e.Error)
			return 3
		}
	}
	return 0
}
