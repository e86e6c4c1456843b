package ui_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/ui"
)

func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func checkSecurityHeaders(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": ui.ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got, want)
		}
	}
}

// TestPages: every page address serves the one document, with a <base> that leads back to /ui/ from
// where it was loaded, and the security headers.
func TestPages(t *testing.T) {
	t.Parallel()
	h := ui.NewHandler()
	for _, tc := range []struct{ target, base string }{
		{"/ui/", "./"},
		{"/ui/sessions", "./"},
		{"/ui/sessions?status=running", "./"},
		{"/ui/sessions/ses_01abc", "../"},
		{"/ui/agents/web%2Fcrawler", "../"}, // one escaped segment, as the browser sees it
		{"/ui/agents/a/b", "../../"},
		{"/ui/no/such/page/", "../../../"},
	} {
		rec := get(t, h, tc.target)
		if rec.Code != 200 {
			t.Fatalf("GET %s = %d, want 200", tc.target, rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type = %q", tc.target, ct)
		}
		checkSecurityHeaders(t, "GET "+tc.target, rec)
		if want := `<base href="` + tc.base + `">`; !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: page lacks %s", tc.target, want)
		}
	}
}

// TestAssets: the files are served with their types, revalidated by ETag; an unknown one is 404; only
// GET and HEAD are answered.
func TestAssets(t *testing.T) {
	t.Parallel()
	h := ui.NewHandler()
	for name, ct := range map[string]string{
		"app.js":      "text/javascript; charset=utf-8",
		"style.css":   "text/css; charset=utf-8",
		"favicon.svg": "image/svg+xml",
	} {
		rec := get(t, h, "/ui/assets/"+name)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ct || rec.Body.Len() == 0 {
			t.Fatalf("GET %s = %d %q (%d bytes), want 200 %q", name, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), ct)
		}
		checkSecurityHeaders(t, "GET "+name, rec)
		etag := rec.Header().Get("ETag")
		if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("GET %s: ETag %q, Cache-Control %q", name, etag, rec.Header().Get("Cache-Control"))
		}
		if rec := get(t, h, "/ui/assets/"+name, "If-None-Match", etag); rec.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag = %d, want 304", name, rec.Code)
		}
	}
	for _, target := range []string{"/ui/assets/nope.js", "/ui/assets/", "/ui/assets/index.html", "/elsewhere"} {
		if rec := get(t, h, target); rec.Code != 404 {
			t.Errorf("GET %s = %d, want 404", target, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/ui/", strings.NewReader("x")))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/ = %d (Allow %q), want 405", rec.Code, rec.Header().Get("Allow"))
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("HEAD", "/ui/agents", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD /ui/agents = %d with %d bytes, want 200 and none", rec.Code, rec.Body.Len())
	}
}

// TestMountedByAPI: httpapi serves the dashboard when Config.UI is set, without a token (the pages hold
// no data), and says so when it is not.
func TestMountedByAPI(t *testing.T) {
	t.Parallel()
	w := newWorld(t, map[string]httpapi.Role{adminToken: httpapi.RoleAdmin})
	res, err := http.Get(w.URL + "/ui/sessions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy {
		t.Fatalf("GET /ui/sessions without a token = %d (CSP %q), want 200 with the policy", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	res, err = http.Get(w.URL + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("GET /sessions without a token = %d, want 401: the API itself stays closed", res.StatusCode)
	}
	// /ui redirects to /ui/.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = client.Get(w.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 3 || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui = %d → %q, want a redirect to /ui/", res.StatusCode, res.Header.Get("Location"))
	}

	plain := httptest.NewServer(httpapi.NewHandler(nil, httpapi.Config{}))
	defer plain.Close()
	res, err = http.Get(plain.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("GET /ui/ without Config.UI = %d, want 404", res.StatusCode)
	}
}

// TestAssetsAreSafe reads the embedded files: the page loads only files that exist, every module import
// resolves, and nothing puts text into the page as HTML or runs inline code — the rules the
// Content-Security-Policy and the XSS test rely on.
func TestAssetsAreSafe(t *testing.T) {
	t.Parallel()
	files := os.DirFS("assets")
	exists := func(name string) bool { _, err := fs.Stat(files, name); return err == nil }
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="assets/([^"]+)"`).FindAllSubmatch(index, -1)
	if len(refs) < 3 {
		t.Fatalf("index.html references %d assets, want the icon, the stylesheet and the script", len(refs))
	}
	for _, m := range refs {
		if !exists(string(m[1])) {
			t.Errorf("index.html references assets/%s, which does not exist", m[1])
		}
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]*\S[^<]*</script>|<script(?:\s(?:[^s>]|s[^r]|sr[^c])*)?>|\sstyle=|\son[a-z]+=|<style`).Match(index) {
		t.Errorf("index.html has inline script, style or event handlers")
	}
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|\.style\.|setAttribute\('style'`)
	imports := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';|^\} from '\./([^']+)';|import\('\./([^']+)'\)`)
	js, _ := fs.Glob(files, "*.js")
	if len(js) < 5 {
		t.Fatalf("found %d modules", len(js))
	}
	for _, name := range js {
		src, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatal(err)
		}
		if loc := banned.FindIndex(src); loc != nil {
			t.Errorf("%s uses %q: render data with text nodes instead", name, src[loc[0]:loc[1]])
		}
		for _, m := range imports.FindAllSubmatch(src, -1) {
			dep := string(m[1]) + string(m[2]) + string(m[3])
			if !exists(path.Clean(dep)) {
				t.Errorf("%s imports ./%s, which does not exist", name, dep)
			}
		}
	}
}
