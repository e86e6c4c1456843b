package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html"
)

// Options configure a crawl. The zero value of every limit means its default.
type Options struct {
	// StartURL is where the crawl begins (http or https).
	StartURL string
	// Depth is how many links away from the start page the crawl goes: 0 fetches the start page only.
	Depth int
	// Patterns, when non-empty, select which pages are reported (see [MatchPattern]). Links of pages that
	// are not reported are still followed.
	Patterns []string
	// MaxPages bounds the number of requests made (default 50).
	MaxPages int
	// AllHosts lets the crawl leave the start URL's host. By default only links to the same host (and port)
	// are followed.
	AllHosts bool
	// RequestTimeout bounds each request, body included (default 10 s).
	RequestTimeout time.Duration
	// MaxDuration, when positive, stops the crawl from starting new requests once it has run this long;
	// requests under way finish and the partial report is returned.
	MaxDuration time.Duration
	// Concurrency is how many requests run at once (default 4).
	Concurrency int
	// MaxBodyBytes bounds how much of each response is read (default 2 MiB); a longer body is cut there
	// and the page marked truncated.
	MaxBodyBytes int64
	// UserAgent is sent with every request (default "ao-web-crawler/1.0").
	UserAgent string
	// Client, when set, is used instead of a client built from the options (tests). Its redirect policy
	// is replaced by the crawler's.
	Client *http.Client
	// Progress, when set, receives one line per fetch ("fetched https://… (200, 3 links)"), one Write
	// per line and never two Writes at once.
	Progress io.Writer
}

// Defaults of [Options].
const (
	DefaultMaxPages       = 50
	DefaultRequestTimeout = 10 * time.Second
	DefaultConcurrency    = 4
	DefaultMaxBodyBytes   = 2 << 20
	DefaultUserAgent      = "ao-web-crawler/1.0"
	maxRedirects          = 10
)

// Page is one fetched URL that matched the patterns.
type Page struct {
	URL          string `json:"url"`
	Status       int    `json:"status"`
	Title        string `json:"title"`
	Depth        int    `json:"depth"`
	LinksFound   int    `json:"links_found"`
	Bytes        int64  `json:"bytes"`
	ContentType  string `json:"content_type"`
	RedirectedTo string `json:"redirected_to,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
}

// CrawlError is a URL that could not be fetched, or answered with an HTTP error status.
type CrawlError struct {
	URL   string `json:"url"`
	Error string `json:"error"`
}

// Stop reasons of a [Report].
const (
	StopComplete    = "complete"     // every reachable URL within the depth was fetched
	StopMaxPages    = "max_pages"    // URLs were left because of MaxPages
	StopMaxDuration = "max_duration" // URLs were left because of MaxDuration
	StopInterrupted = "interrupted"  // the context was cancelled
)

// Report is the crawler's result, printed as JSON on stdout.
type Report struct {
	StartURL     string       `json:"start_url"`
	Depth        int          `json:"depth"`
	Patterns     []string     `json:"patterns"`
	PagesCrawled int          `json:"pages_crawled"`
	Pages        []Page       `json:"pages"`
	Errors       []CrawlError `json:"errors"`
	StopReason   string       `json:"stop_reason"`
	DurationMS   int64        `json:"duration_ms"`
}

// Crawl crawls breadth-first, one depth level at a time: every URL of a level is fetched (Concurrency at
// a time) before the next level starts, and each level's URLs are fetched in sorted order. Together with
// the de-duplication of URLs (see [NormalizeURL]) this makes the set of pages fetched — and so the report,
// apart from durations — the same on every run against the same site, even when MaxPages cuts the crawl
// short.
//
// Every response is a page whatever its status; a status of 400 or more is also listed in Errors, as is
// any URL whose fetch failed. Pages and Errors are sorted by URL. Crawl returns an error only for invalid
// options; a cancelled ctx ends the crawl early with StopReason "interrupted".
func Crawl(ctx context.Context, opts Options) (*Report, error) {
	began := time.Now()
	start, err := ParseStartURL(opts.StartURL)
	if err != nil {
		return nil, err
	}
	if opts.Depth < 0 {
		return nil, fmt.Errorf("depth must be 0 or more, not %d", opts.Depth)
	}
	for _, p := range opts.Patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("pattern %q is not a valid glob: %v", p, err)
		}
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}

	c := &crawler{opts: opts, start: start, client: newClient(opts, start)}
	report := &Report{
		StartURL: start.String(),
		Depth:    opts.Depth,
		Patterns: append([]string{}, opts.Patterns...),
		Pages:    []Page{},
		Errors:   []CrawlError{},
	}
	var deadline time.Time
	if opts.MaxDuration > 0 {
		deadline = began.Add(opts.MaxDuration)
	}

	seen := map[string]bool{start.String(): true}
	level := []string{start.String()}
	report.StopReason = StopComplete
	for depth := 0; len(level) > 0; depth++ {
		if ctx.Err() != nil {
			report.StopReason = StopInterrupted
			break
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			report.StopReason = StopMaxDuration
			break
		}
		budget := opts.MaxPages - report.PagesCrawled
		if budget <= 0 {
			report.StopReason = StopMaxPages
			break
		}
		sort.Strings(level)
		if len(level) > budget {
			level = level[:budget]
			report.StopReason = StopMaxPages
		}

		results, stopped := c.fetchLevel(ctx, level, depth, deadline)
		var next []string
		for _, r := range results {
			if r == nil { // not started: the crawl ran out of time or was interrupted
				continue
			}
			report.PagesCrawled++
			if r.err != nil {
				report.Errors = append(report.Errors, CrawlError{URL: r.url, Error: r.err.Error()})
				continue
			}
			if r.page.Status >= 400 {
				report.Errors = append(report.Errors, CrawlError{URL: r.url,
					Error: fmt.Sprintf("HTTP %d %s", r.page.Status, http.StatusText(r.page.Status))})
			}
			if c.reported(r.url) {
				report.Pages = append(report.Pages, r.page)
			}
			if depth < opts.Depth {
				for _, l := range r.follow {
					if !seen[l] {
						seen[l] = true
						next = append(next, l)
					}
				}
			}
		}
		if stopped != "" {
			report.StopReason = stopped
			break
		}
		if report.StopReason == StopMaxPages {
			break
		}
		level = next
	}

	sort.Slice(report.Pages, func(i, j int) bool { return report.Pages[i].URL < report.Pages[j].URL })
	sort.Slice(report.Errors, func(i, j int) bool { return report.Errors[i].URL < report.Errors[j].URL })
	report.DurationMS = time.Since(began).Milliseconds()
	return report, nil
}

// ParseStartURL checks and normalizes the URL a crawl starts from: it must be an absolute http or https
// URL with a host.
func ParseStartURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("url is required")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("url %q is not valid: %v", raw, err)
	}
	if !isHTTP(u) {
		return nil, fmt.Errorf("url %q must start with http:// or https://", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("url %q has no host", raw)
	}
	return normalize(u), nil
}

// NormalizeURL is the form under which URLs are de-duplicated and reported: the fragment dropped, the
// scheme and host lower-cased, a default port (:80 for http, :443 for https) removed and an empty path
// made "/". The query is kept as it is. It reports false for URLs that are not absolute http(s) URLs.
func NormalizeURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || !isHTTP(u) || u.Host == "" {
		return "", false
	}
	return normalize(u).String(), true
}

func isHTTP(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return s == "http" || s == "https"
}

func normalize(u *url.URL) *url.URL {
	n := *u
	n.Scheme = strings.ToLower(n.Scheme)
	n.Host = strings.ToLower(n.Host)
	if (n.Scheme == "http" && n.Port() == "80") || (n.Scheme == "https" && n.Port() == "443") {
		n.Host = n.Hostname()
		if strings.Contains(n.Host, ":") { // IPv6 literal
			n.Host = "[" + n.Host + "]"
		}
	}
	n.Fragment, n.RawFragment = "", ""
	n.User = nil
	if n.Path == "" && n.Opaque == "" {
		n.Path, n.RawPath = "/", ""
	}
	return &n
}

// MatchPattern reports whether a URL path matches a glob of path.Match. A pattern containing '/' is
// matched against the whole path ("/docs/*" matches "/docs/intro" but not "/docs/a/b"); a pattern without
// '/' is matched against the path's last element ("*.html" matches "/a/b/page.html"), like a .gitignore
// entry.
func MatchPattern(pattern, urlPath string) bool {
	if urlPath == "" {
		urlPath = "/"
	}
	subject := urlPath
	if !strings.Contains(pattern, "/") {
		subject = path.Base(urlPath)
		if subject == "/" || subject == "." {
			subject = ""
		}
	}
	ok, err := path.Match(pattern, subject)
	return err == nil && ok
}

type crawler struct {
	opts       Options
	start      *url.URL
	client     *http.Client
	progressMu sync.Mutex // serializes writes to opts.Progress
}

func (c *crawler) reported(rawURL string) bool {
	if len(c.opts.Patterns) == 0 {
		return true
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	for _, p := range c.opts.Patterns {
		if MatchPattern(p, u.Path) {
			return true
		}
	}
	return false
}

func (c *crawler) sameHost(u *url.URL) bool {
	return strings.EqualFold(normalize(u).Host, c.start.Host)
}

func newClient(opts Options, start *url.URL) *http.Client {
	var client http.Client
	if opts.Client != nil {
		client = *opts.Client
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = opts.Concurrency
		tr.ResponseHeaderTimeout = opts.RequestTimeout
		client.Transport = tr
	}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !isHTTP(req.URL) {
			return http.ErrUseLastResponse
		}
		if !opts.AllHosts && !strings.EqualFold(normalize(req.URL).Host, start.Host) {
			return http.ErrUseLastResponse // reported with its 3xx status and redirected_to
		}
		return nil
	}
	return &client
}

type result struct {
	url    string
	page   Page
	follow []string // normalized links to crawl next (same host unless AllHosts), sorted
	err    error
}

// fetchLevel fetches urls with at most Concurrency requests at once. results[i] belongs to urls[i] and
// is nil when the fetch was never started; stopped then says why.
func (c *crawler) fetchLevel(ctx context.Context, urls []string, depth int, deadline time.Time) ([]*result, string) {
	results := make([]*result, len(urls))
	sem := make(chan struct{}, c.opts.Concurrency)
	var wg sync.WaitGroup
	stopped := ""
	for i, u := range urls {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			stopped = StopInterrupted
			break
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			<-sem
			stopped = StopMaxDuration
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := c.fetch(ctx, u, depth)
			c.progress(r)
			results[i] = r
		}()
	}
	wg.Wait()
	return results, stopped
}

func (c *crawler) progress(r *result) {
	if c.opts.Progress == nil {
		return
	}
	var line string
	switch {
	case r.err != nil:
		line = fmt.Sprintf("failed %s: %v\n", r.url, r.err)
	case r.page.RedirectedTo != "" && r.page.Status >= 300 && r.page.Status < 400:
		line = fmt.Sprintf("fetched %s (%d, redirect to %s not followed)\n", r.url, r.page.Status, r.page.RedirectedTo)
	default:
		line = fmt.Sprintf("fetched %s (%d, %d links)\n", r.url, r.page.Status, r.page.LinksFound)
	}
	// One Write per line, one at a time: lines never interleave, whatever the writer.
	c.progressMu.Lock()
	_, _ = io.WriteString(c.opts.Progress, line)
	c.progressMu.Unlock()
}

func (c *crawler) fetch(ctx context.Context, rawURL string, depth int) *result {
	r := &result{url: rawURL}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5")
	resp, err := c.client.Do(req)
	if err != nil {
		r.err = cleanError(err, rawURL)
		return r
	}
	defer resp.Body.Close()

	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBodyBytes+1))
	if err != nil {
		r.err = fmt.Errorf("reading body: %w", cleanError(err, rawURL))
		return r
	}
	truncated := int64(len(body)) > c.opts.MaxBodyBytes
	if truncated {
		body = body[:c.opts.MaxBodyBytes]
	}

	final := normalize(resp.Request.URL)
	r.page = Page{
		URL:         rawURL,
		Status:      resp.StatusCode,
		Depth:       depth,
		Bytes:       int64(len(body)),
		ContentType: contentType(resp.Header.Get("Content-Type"), body),
		Truncated:   truncated,
	}
	if final.String() != rawURL {
		r.page.RedirectedTo = final.String()
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// A redirect the client did not follow (off-host, or not http): report where it pointed.
		if loc, err := resp.Location(); err == nil {
			r.page.RedirectedTo = normalize(loc).String()
		}
		return r
	}
	if !isHTML(r.page.ContentType) {
		return r
	}
	title, links := parseHTML(body, final)
	r.page.Title = title
	r.page.LinksFound = len(links)
	for _, l := range links {
		u, _ := url.Parse(l)
		if c.opts.AllHosts || c.sameHost(u) {
			r.follow = append(r.follow, l)
		}
	}
	return r
}

// cleanError drops the "Get \"url\": " prefix of url.Error: the URL is already beside the error.
func cleanError(err error, rawURL string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("timed out")
	}
	return err
}

func contentType(header string, body []byte) string {
	if header == "" {
		header = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(header))
	}
	return mt
}

func isHTML(mediaType string) bool {
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// parseHTML returns a page's title and its distinct http(s) links (<a href> and <area href>), resolved
// against the page's URL or its <base href> and normalized, in sorted order.
func parseHTML(body []byte, pageURL *url.URL) (string, []string) {
	z := html.NewTokenizer(bytes.NewReader(body))
	base := pageURL
	baseSet := false
	var title string
	inTitle, titleDone := false, false
	var hrefs []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return finishTitle(title), resolveLinks(hrefs, base)
		case html.TextToken:
			if inTitle {
				title += string(z.Text())
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if string(name) == "title" && inTitle {
				inTitle, titleDone = false, true
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "title":
				if !titleDone && tt == html.StartTagToken {
					inTitle = true
				}
			case "a", "area", "base":
				if !hasAttr {
					continue
				}
				href, ok := attr(z, "href")
				if !ok {
					continue
				}
				if string(name) == "base" {
					if !baseSet {
						if b, err := pageURL.Parse(strings.TrimSpace(href)); err == nil {
							base, baseSet = b, true
						}
					}
					continue
				}
				hrefs = append(hrefs, href)
			}
		}
	}
}

func attr(z *html.Tokenizer, want string) (string, bool) {
	for {
		key, val, more := z.TagAttr()
		if string(key) == want {
			return string(val), true
		}
		if !more {
			return "", false
		}
	}
}

func finishTitle(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func resolveLinks(hrefs []string, base *url.URL) []string {
	set := map[string]bool{}
	for _, h := range hrefs {
		h = strings.TrimSpace(h)
		if h == "" || strings.HasPrefix(h, "#") {
			continue // the page itself
		}
		u, err := base.Parse(h)
		if err != nil || !isHTTP(u) || u.Host == "" {
			continue // mailto:, javascript:, tel:, malformed
		}
		set[normalize(u).String()] = true
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}
