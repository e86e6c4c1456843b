package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// testSite is a small local web site:
//
//	/                     Home: links /about.html, /docs/, /docs/intro.html#s, /missing.html, /data.json,
//	                      /redirect, /offsite-redirect, the other host, mailto:, #top, /about.html again
//	/about.html           links / (a cycle) and /docs/intro.html
//	/docs/                links intro.html, guide.html, ../about.html (relative)
//	/docs/intro.html      links guide.html and /docs/deep/page.html
//	/docs/guide.html      links /
//	/docs/deep/page.html  no links
//	/missing.html         404
//	/data.json            application/json
//	/redirect             302 to /moved.html (linked from nowhere else)
//	/offsite-redirect     302 to the other host
//
// The other host serves one page linking back. Every request is counted.
type testSite struct {
	srv, other *httptest.Server
	mu         sync.Mutex
	hits       map[string]int // "path" on srv, "other:path" on the other host
}

func newTestSite(t *testing.T) *testSite {
	t.Helper()
	s := &testSite{hits: map[string]int{}}
	s.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count("other:" + r.URL.Path)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Other</title></head><body><a href="%s/">back</a></body></html>`, s.srv.URL)
	}))
	t.Cleanup(s.other.Close)
	page := func(title string, links ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body>\n", title)
		for _, l := range links {
			fmt.Fprintf(&b, "<p><a class=x href=\"%s\">link</a></p>\n", l)
		}
		b.WriteString("</body></html>\n")
		return b.String()
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.count(r.URL.Path)
		html := func(body string) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
		switch r.URL.Path {
		case "/":
			html(page("  Home &amp;\n  Welcome ",
				"/about.html", "/docs/", "/docs/intro.html#s", "/missing.html", "/data.json",
				"/redirect", "/offsite-redirect", s.other.URL+"/", "mailto:someone@example.com", "#top",
				"javascript:void(0)", "/about.html"))
		case "/about.html":
			html(page("About", "/", "/docs/intro.html"))
		case "/docs/":
			html(page("Docs", "intro.html", "guide.html", "../about.html"))
		case "/docs/intro.html":
			html(page("Intro", "guide.html", "/docs/deep/page.html"))
		case "/docs/guide.html":
			html(page("Guide", "/"))
		case "/docs/deep/page.html":
			html(page("Deep"))
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"links":"<a href=\"/never-followed\">"}`)
		case "/redirect":
			http.Redirect(w, r, "/moved.html", http.StatusFound)
		case "/moved.html":
			html(page("Moved", "/docs/deep/page.html"))
		case "/offsite-redirect":
			http.Redirect(w, r, s.other.URL+"/landing", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *testSite) count(p string) {
	s.mu.Lock()
	s.hits[p]++
	s.mu.Unlock()
}

func (s *testSite) hitCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

func (s *testSite) crawl(t *testing.T, opts Options) *Report {
	t.Helper()
	if opts.StartURL == "" {
		opts.StartURL = s.srv.URL
	}
	r, err := Crawl(context.Background(), opts)
	if err != nil {
		t.Fatalf("Crawl: %v", err)
	}
	return r
}

// paths returns the reported pages' paths relative to the site (other-host pages keep their full URL).
func (s *testSite) paths(r *Report) []string {
	var out []string
	for _, p := range r.Pages {
		out = append(out, strings.TrimPrefix(p.URL, s.srv.URL))
	}
	return out
}

func TestCrawlDepth(t *testing.T) {
	level1 := []string{"/", "/about.html", "/data.json", "/docs/", "/docs/intro.html", "/missing.html", "/offsite-redirect", "/redirect"}
	tests := []struct {
		depth   int
		want    []string
		crawled int
	}{
		{0, []string{"/"}, 1},
		{1, level1, 8},
		// Level 2: guide (linked from /docs/ and from intro, fetched once) and the deep page (linked from
		// intro and from the page /redirect leads to).
		{2, sorted(append(level1, "/docs/deep/page.html", "/docs/guide.html")), 10},
		{5, sorted(append(level1, "/docs/deep/page.html", "/docs/guide.html")), 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("depth=", tt.depth), func(t *testing.T) {
			s := newTestSite(t)
			r := s.crawl(t, Options{Depth: tt.depth})
			if got := s.paths(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pages = %q, want %q", got, tt.want)
			}
			if r.PagesCrawled != tt.crawled {
				t.Errorf("pages_crawled = %d, want %d", r.PagesCrawled, tt.crawled)
			}
			if r.StopReason != StopComplete {
				t.Errorf("stop_reason = %q, want complete", r.StopReason)
			}
			if r.StartURL != s.srv.URL+"/" || r.Depth != tt.depth {
				t.Errorf("start_url, depth = %q, %d", r.StartURL, r.Depth)
			}
			for _, p := range r.Pages {
				want := 1
				if p.URL == s.srv.URL+"/" {
					want = 0
				} else if strings.Contains(p.URL, "/docs/guide.html") || strings.Contains(p.URL, "/deep/") {
					want = 2
				}
				if p.Depth != want {
					t.Errorf("%s: depth = %d, want %d", p.URL, p.Depth, want)
				}
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestCrawlDedupCycleAndPageRecord(t *testing.T) {
	s := newTestSite(t)
	r := s.crawl(t, Options{Depth: 5})
	// Every page once, despite the cycle (/ ↔ /about.html ↔ guide → /), the duplicate links, the fragment
	// link and the redirect to a page also linked directly.
	for p, n := range s.hitCounts() {
		if n != 1 {
			t.Errorf("%s fetched %d times", p, n)
		}
	}
	if n := s.hitCounts()["/never-followed"]; n != 0 {
		t.Errorf("a link inside JSON was followed")
	}
	home := findPage(t, r, s.srv.URL+"/")
	// Distinct http(s) links of /: about, docs/, docs/intro (fragment dropped), missing, data.json,
	// redirect, offsite-redirect, the other host; not mailto:, javascript: or #top; about once.
	want := Page{URL: s.srv.URL + "/", Status: 200, Title: "Home & Welcome", Depth: 0, LinksFound: 8,
		Bytes: home.Bytes, ContentType: "text/html"}
	if home != want {
		t.Errorf("home page = %+v, want %+v", home, want)
	}
	if home.Bytes < 100 {
		t.Errorf("home bytes = %d", home.Bytes)
	}
	if docs := findPage(t, r, s.srv.URL+"/docs/"); docs.LinksFound != 3 || docs.Title != "Docs" {
		t.Errorf("docs page = %+v", docs)
	}
	data := findPage(t, r, s.srv.URL+"/data.json")
	if data.ContentType != "application/json" || data.LinksFound != 0 || data.Title != "" || data.Bytes == 0 {
		t.Errorf("data.json = %+v", data)
	}
	redirect := findPage(t, r, s.srv.URL+"/redirect")
	if redirect.Status != 200 || redirect.RedirectedTo != s.srv.URL+"/moved.html" || redirect.Title != "Moved" || redirect.LinksFound != 1 {
		t.Errorf("redirect = %+v", redirect)
	}
	if !sort.SliceIsSorted(r.Pages, func(i, j int) bool { return r.Pages[i].URL < r.Pages[j].URL }) {
		t.Errorf("pages are not sorted by url")
	}
}

func findPage(t *testing.T, r *Report, u string) Page {
	t.Helper()
	for _, p := range r.Pages {
		if p.URL == u {
			return p
		}
	}
	t.Fatalf("page %s not reported; pages: %+v", u, r.Pages)
	return Page{}
}

func TestCrawlErrors(t *testing.T) {
	s := newTestSite(t)
	r := s.crawl(t, Options{Depth: 1})
	want := []CrawlError{{URL: s.srv.URL + "/missing.html", Error: "HTTP 404 Not Found"}}
	if !reflect.DeepEqual(r.Errors, want) {
		t.Errorf("errors = %+v, want %+v", r.Errors, want)
	}
	if p := findPage(t, r, s.srv.URL+"/missing.html"); p.Status != 404 {
		t.Errorf("missing page = %+v", p)
	}

	// A host that refuses connections: an error, no page, still a report.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	r = s.crawl(t, Options{StartURL: deadURL + "/start", Depth: 2})
	if len(r.Pages) != 0 || len(r.Errors) != 1 || r.Errors[0].URL != deadURL+"/start" || r.PagesCrawled != 1 {
		t.Fatalf("report for a dead host = %+v", r)
	}
	if strings.HasPrefix(r.Errors[0].Error, "Get ") || r.Errors[0].Error == "" {
		t.Errorf("error text = %q", r.Errors[0].Error)
	}
}

func TestCrawlTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	began := time.Now()
	r, err := Crawl(context.Background(), Options{StartURL: slow.URL, RequestTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) != 1 || r.Errors[0].Error != "timed out" {
		t.Errorf("errors = %+v", r.Errors)
	}
	if time.Since(began) > 5*time.Second {
		t.Errorf("the timeout was not honoured")
	}
}

func TestCrawlPatterns(t *testing.T) {
	tests := []struct {
		patterns []string
		want     []string
	}{
		{[]string{"*.html"}, []string{"/about.html", "/docs/deep/page.html", "/docs/guide.html", "/docs/intro.html", "/missing.html"}},
		{[]string{"*.json", "/docs/*"}, []string{"/data.json", "/docs/", "/docs/guide.html", "/docs/intro.html"}},
		// Only the deepest page is reported, yet the crawl had to go through the others to find it.
		{[]string{"/docs/deep/*"}, []string{"/docs/deep/page.html"}},
		{[]string{"*.pdf"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.patterns, ","), func(t *testing.T) {
			s := newTestSite(t)
			r := s.crawl(t, Options{Depth: 2, Patterns: tt.patterns})
			if got := s.paths(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pages = %q, want %q", got, tt.want)
			}
			if r.PagesCrawled != 10 {
				t.Errorf("pages_crawled = %d, want 10 (patterns must not stop links being followed)", r.PagesCrawled)
			}
			if !reflect.DeepEqual(r.Patterns, tt.patterns) {
				t.Errorf("patterns = %q", r.Patterns)
			}
		})
	}
	if _, err := Crawl(context.Background(), Options{StartURL: "http://x", Patterns: []string{"[a-"}}); err == nil {
		t.Errorf("a malformed pattern was accepted")
	}
}

func TestCrawlSameHost(t *testing.T) {
	s := newTestSite(t)
	r := s.crawl(t, Options{Depth: 3})
	for p := range s.hitCounts() {
		if strings.HasPrefix(p, "other:") {
			t.Errorf("same-host crawl fetched %s on the other host", p)
		}
	}
	off := findPage(t, r, s.srv.URL+"/offsite-redirect")
	if off.Status != http.StatusFound || off.RedirectedTo != s.other.URL+"/landing" {
		t.Errorf("off-host redirect = %+v, want a 302 not followed", off)
	}

	s = newTestSite(t)
	r = s.crawl(t, Options{Depth: 1, AllHosts: true})
	hits := s.hitCounts()
	if hits["other:/"] != 1 || hits["other:/landing"] != 1 {
		t.Errorf("all-hosts crawl hits = %v", hits)
	}
	other := findPage(t, r, s.other.URL+"/")
	if other.Title != "Other" || other.Depth != 1 {
		t.Errorf("other-host page = %+v", other)
	}
}

func TestCrawlMaxPages(t *testing.T) {
	s := newTestSite(t)
	r := s.crawl(t, Options{Depth: 5, MaxPages: 3})
	// The start page, then the first two of level 1 in sorted order: deterministic whatever the timing.
	want := []string{"/", "/about.html", "/data.json"}
	if got := s.paths(r); !reflect.DeepEqual(got, want) {
		t.Errorf("pages = %q, want %q", got, want)
	}
	if r.PagesCrawled != 3 || r.StopReason != StopMaxPages {
		t.Errorf("pages_crawled, stop_reason = %d, %q", r.PagesCrawled, r.StopReason)
	}
	total := 0
	for _, n := range s.hitCounts() {
		total += n
	}
	if total != 3 {
		t.Errorf("%d requests made, want 3", total)
	}

	// A limit exactly reached at the end of the crawl is not a cut.
	s = newTestSite(t)
	if r := s.crawl(t, Options{Depth: 1, MaxPages: 8}); r.StopReason != StopComplete || r.PagesCrawled != 8 {
		t.Errorf("pages_crawled, stop_reason = %d, %q", r.PagesCrawled, r.StopReason)
	}
}

func TestCrawlBodyLimitAndConcurrency(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	full := make(chan struct{}) // closed when three requests are in flight at once
	big := strings.Repeat("x", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		if inFlight > maxInFlight {
			maxInFlight = inFlight
			if maxInFlight == 3 {
				close(full)
			}
		}
		mu.Unlock()
		if r.URL.Path != "/" {
			select { // hold the first requests until the crawler has three under way
			case <-full:
			case <-time.After(2 * time.Second):
			}
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			var b strings.Builder
			b.WriteString("<title>Index</title>")
			for i := range 12 {
				fmt.Fprintf(&b, `<a href="/p%d">p</a>`, i)
			}
			fmt.Fprint(w, b.String())
			return
		}
		fmt.Fprintf(w, "<title>%s</title>%s", r.URL.Path, big)
	}))
	defer srv.Close()
	r, err := Crawl(context.Background(), Options{StartURL: srv.URL, Depth: 1, Concurrency: 3, MaxBodyBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pages) != 13 {
		t.Fatalf("%d pages", len(r.Pages))
	}
	for _, p := range r.Pages[1:] {
		if !p.Truncated || p.Bytes != 1000 || p.Title != strings.TrimPrefix(p.URL, srv.URL) {
			t.Errorf("page = %+v, want truncated at 1000 bytes", p)
		}
	}
	if r.Pages[0].Truncated || r.Pages[0].LinksFound != 12 {
		t.Errorf("index = %+v", r.Pages[0])
	}
	if maxInFlight != 3 {
		t.Errorf("max requests in flight = %d, want 3", maxInFlight)
	}
}

func TestCrawlProgressAndCancel(t *testing.T) {
	s := newTestSite(t)
	var progress syncBuffer
	s.crawl(t, Options{Depth: 1, Progress: &progress})
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d progress lines, want 8:\n%s", len(lines), progress.String())
	}
	for _, want := range []string{
		fmt.Sprintf("fetched %s/ (200, 8 links)", s.srv.URL),
		fmt.Sprintf("fetched %s/missing.html (404, 0 links)", s.srv.URL),
		fmt.Sprintf("fetched %s/offsite-redirect (302, redirect to %s/landing not followed)", s.srv.URL, s.other.URL),
	} {
		if !contains(lines, want) {
			t.Errorf("no progress line %q in:\n%s", want, progress.String())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Crawl(ctx, Options{StartURL: s.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != StopInterrupted || r.PagesCrawled != 0 {
		t.Errorf("cancelled crawl = %+v", r)
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP://Example.COM":              "http://example.com/",
		"http://example.com:80/a#frag":    "http://example.com/a",
		"https://example.com:443/a?b=1#x": "https://example.com/a?b=1",
		"https://example.com:8443/":       "https://example.com:8443/",
		"http://user:pw@example.com/x":    "http://example.com/x",
		"http://[::1]:80/":                "http://[::1]/",
	} {
		if got, ok := NormalizeURL(in); !ok || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"ftp://example.com/", "mailto:a@b.c", "/relative", "http://"} {
		if got, ok := NormalizeURL(in); ok {
			t.Errorf("NormalizeURL(%q) = %q, want rejected", in, got)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"*.html", "/a/b/page.html", true},
		{"*.html", "/page.htm", false},
		{"*.md", "/", false},
		{"/docs/*", "/docs/intro", true},
		{"/docs/*", "/docs/a/b", false},
		{"/docs/*/*.html", "/docs/a/b.html", true},
		{"page-?.html", "/x/page-1.html", true},
		{"[ab]*", "/b-side", true},
		{"*", "/", true},
		{"/", "/", true},
	} {
		if got := MatchPattern(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestParseHTML(t *testing.T) {
	base, _ := ParseStartURL("http://h.test/dir/page.html")
	body := `<html><head><base href="/root/"><title>T &lt;1&gt;</title></head>
<body><a href="a.html">a</a><A HREF='http://other.test'>o</A><a>no href</a><area href="b.html">
<a href=" c.html#x ">c</a><a href="//proto.test/rel">p</a><svg><title>not the title</title></svg></body></html>`
	title, links := parseHTML([]byte(body), base)
	if title != "T <1>" {
		t.Errorf("title = %q", title)
	}
	want := []string{"http://h.test/root/a.html", "http://h.test/root/b.html", "http://h.test/root/c.html",
		"http://other.test/", "http://proto.test/rel"}
	if !reflect.DeepEqual(links, want) {
		t.Errorf("links = %q, want %q", links, want)
	}
}
