package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Path is where the dashboard is served, beside the API's routes.
const Path = "/ui/"

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is the policy every response of the dashboard carries: its own scripts, styles,
// images and API calls only; no inline script or style, no plugins, no framing, no form posts elsewhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'"

// basePlaceholder in index.html becomes the page's relative way back to Path (see [NewHandler]).
const basePlaceholder = "%BASE%"

type asset struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	index  string
	assets map[string]asset // by name under assets/
}

// NewHandler returns the dashboard. It serves GET and HEAD under [Path]: the files under /ui/assets/, and
// for every other path the one page, which shows what its address names (/ui/agents, /ui/agents/{name},
// /ui/sessions, /ui/sessions/{id}, /ui/runners, /ui/schedules), so a reload or a pasted link works.
func NewHandler() http.Handler {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.assets[strings.TrimPrefix(p, "assets/")] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("ui: reading the embedded assets: " + err.Error()) // the files are compiled in
	}
	h.index = string(h.assets["index.html"].body)
	delete(h.assets, "index.html") // only ever served with its base filled in
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// The escaped path: the browser resolves relative addresses against it, not against the decoded one.
	p := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(p, Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name, ok := strings.CutPrefix(rest, "assets/"); ok {
		a, found := h.assets[name]
		if !found {
			http.NotFound(w, r)
			return
		}
		// Revalidated on every load (cheap: 304 by ETag), so a new binary's assets are never mixed with
		// an old page's.
		hd.Set("Cache-Control", "no-cache")
		hd.Set("Content-Type", a.contentType)
		hd.Set("ETag", a.etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
		return
	}
	// Every other address is a page: the same document, whose <base> leads back to Path from wherever
	// it was loaded (/ui/sessions/ses_1 → "../"), so its assets, links and API calls resolve under any
	// prefix a proxy adds.
	base := "./"
	if n := strings.Count(rest, "/"); n > 0 {
		base = strings.Repeat("../", n)
	}
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", "text/html; charset=utf-8")
	page := strings.Replace(h.index, basePlaceholder, base, 1)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(page))
	}
}
