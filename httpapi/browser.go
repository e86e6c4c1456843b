package httpapi

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Requests from web pages. A browser lets any page it shows send requests to any address, a coordinator
// on loopback included: a GET, or a POST with a text/plain, form or multipart body, goes out without the
// CORS preflight that would ask the coordinator first. The page cannot read the answer, but the request
// has done its work. And a page whose own name the attacker re-points at 127.0.0.1 (DNS rebinding) is,
// to the browser, of the coordinator's origin: it can read the answers too. On an open API (no tokens) that
// would let any page a developer opens create an agent, start runs and read every session. Three checks,
// the ones the MCP SDK makes for its own endpoint, close both ways on every route:
//
//   - a request that may change something (POST, PUT, PATCH, DELETE) carries a JSON body or none: its
//     Content-Type is application/json (or another JSON type), which a page may send to another origin
//     only after a preflight, which this API does not answer. Anything else is 415
//     unsupported_media_type. A route that takes other bodies says so ([Route].RawBody).
//   - a browser request from another origin is 403 origin_not_allowed: the browser says so in
//     Sec-Fetch-Site, or, when it sends none, the Origin header names another host than the request's
//     Host. The configured [Config.AllowedOrigins] are let through.
//   - on an open API, and on every API when [Config.AllowedHosts] is set, the Host header must be
//     localhost, a name under .localhost, an IP address or an allowed host: 421 host_not_allowed
//     otherwise. A rebinding page's requests name the page's host.
//
// Requests that are not a browser's — curl, the Go client, runners — send neither Origin nor
// Sec-Fetch-Site, name the address they dial, and send JSON, so these checks never stand in their way.
// With tokens a page has no token to send (the API reads no cookies), so the Host check is left to the
// deployments that ask for it; the Origin check stays, for a proxy in front that adds credentials.

// browserPolicy says which of the browser checks a route skips. The zero value skips none.
type browserPolicy int

const (
	// policyProbe: no Host or Origin check. A liveness or readiness probe names the coordinator by
	// whatever address it has (a pod's IP, a Service's name), and the answers hold nothing.
	policyProbe browserPolicy = iota + 1
	// policyPage: the dashboard's pages, which a link on another site may open: a browser's navigation
	// to them (a GET with Sec-Fetch-Mode: navigate) is let through from any site. Their API calls are
	// checked as any other.
	policyPage
)

// browserPolicies are the routes that skip a check.
var browserPolicies = map[string]browserPolicy{
	"GET /health": policyProbe,
	"GET /ready":  policyProbe,
	"GET /ui/":    policyPage,
}

// browserGuard makes the checks; built once by NewHandler.
type browserGuard struct {
	origins []string // normalized (see normalizeOrigin)
	hosts   []string // lower case; "*.example.com" for every name under example.com
	// checkHost: the API is open, or AllowedHosts is set.
	checkHost bool
}

func newBrowserGuard(cfg Config, open bool) (*browserGuard, error) {
	g := &browserGuard{checkHost: open || len(cfg.AllowedHosts) > 0}
	for _, o := range cfg.AllowedOrigins {
		n, err := normalizeOrigin(o)
		if err != nil {
			return nil, err
		}
		g.origins = append(g.origins, n)
	}
	for _, h := range cfg.AllowedHosts {
		n, err := normalizeHost(h)
		if err != nil {
			return nil, err
		}
		g.hosts = append(g.hosts, n)
	}
	return g, nil
}

// normalizeOrigin checks an allowed origin and returns it as a browser's Origin header spells it: lower
// case, without a default port or a final slash.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, " *") {
		return "", fmt.Errorf("httpapi: allowed origin %q is not an origin: give scheme://host[:port], as \"https://orchestrator.example.com\"", o)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	} else if scheme == "https" {
		host = strings.TrimSuffix(host, ":443")
	}
	return scheme + "://" + host, nil
}

// normalizeHost checks an allowed host and returns it in lower case.
func normalizeHost(h string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(h))
	name := strings.TrimPrefix(n, "*.")
	if _, err := netip.ParseAddr(name); err == nil {
		return n, nil // never needed (addresses always pass), but not wrong
	}
	if name == "" || strings.ContainsAny(name, ":/@?#[]* ") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
		return "", fmt.Errorf("httpapi: allowed host %q is not a host name: give a name without scheme or port, as \"orchestrator.example.com\", or \"*.example.com\" for every name under it", h)
	}
	return n, nil
}

// check answers a request the checks refuse, and reports whether it did.
func (g *browserGuard) check(w http.ResponseWriter, r *http.Request, rd routeDef) bool {
	policy := browserPolicies[rd.String()]
	if policy == policyProbe {
		return false
	}
	if g.checkHost && !g.hostAllowed(r.Host) {
		writeErrorStatus(w, http.StatusMisdirectedRequest, "host_not_allowed",
			fmt.Sprintf("the Host %q does not name this coordinator: it answers requests for localhost, names under .localhost, "+
				"IP addresses and its allowed hosts (httpapi.Config.AllowedHosts, the coordinator's -allowed-hosts); "+
				"a web page that points its own name at the coordinator (DNS rebinding) is refused", r.Host), nil)
		return true
	}
	if msg := g.originRefusal(r, policy); msg != "" {
		writeErrorStatus(w, http.StatusForbidden, "origin_not_allowed", msg+
			": the API answers browsers on its own origin (the dashboard) and its allowed origins "+
			"(httpapi.Config.AllowedOrigins, the coordinator's -allowed-origins)", nil)
		return true
	}
	return false
}

// hostAllowed reports whether host, a request's Host (a name or an address, with or without a port),
// names the coordinator in a way no other web page's requests can.
func (g *browserGuard) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
	if name == "" { // HTTP/1.0 without Host: not a browser
		return true
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true // a page at an IP address has that origin: it is not another origin's rebinding
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true // browsers resolve these to loopback themselves (RFC 6761), never through DNS
	}
	for _, h := range g.hosts {
		if h == name || strings.HasPrefix(h, "*.") && strings.HasSuffix(name, h[1:]) {
			return true
		}
	}
	return false
}

// originRefusal says why a browser request from another origin is refused, or "" when it is not.
func (g *browserGuard) originRefusal(r *http.Request, policy browserPolicy) string {
	origin := r.Header.Get("Origin")
	if origin != "" && slices.Contains(g.origins, strings.ToLower(origin)) {
		return ""
	}
	// Sec-Fetch-Site is the browser's own word on where the request comes from; a page cannot set it.
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none": // the coordinator's own page, or the person (an address typed, a bookmark)
		return ""
	case "":
	default: // same-site (another port of localhost is the same site) or cross-site
		if policy == policyPage && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			return ""
		}
		if origin == "" {
			return fmt.Sprintf("a %s browser request is refused", site)
		}
		return fmt.Sprintf("a request from the web page of origin %q is refused", origin)
	}
	// No Sec-Fetch-Site (an older browser, or not a browser): Origin, when present, must be the
	// coordinator's own, the one whose host and port the request's Host names. Its scheme is known only when
	// the coordinator serves TLS itself: behind a proxy that ends TLS an https page is its own.
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) &&
		(u.Scheme == "https" || u.Scheme == "http" && r.TLS == nil) {
		return ""
	}
	return fmt.Sprintf("a request from the web page of origin %q is refused", origin)
}

// stateChanging are the methods whose requests must carry JSON or no body.
var stateChanging = map[string]bool{http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true}

// checkMediaType refuses the body of a state-changing request that is not JSON: 415
// unsupported_media_type. A request without a body needs no Content-Type; one with a body needs
// application/json or another JSON type (application/merge-patch+json, say), with no charset but UTF-8.
func checkMediaType(w http.ResponseWriter, r *http.Request, rd routeDef) bool {
	if rd.RawBody || !stateChanging[r.Method] {
		return false
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return false
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && isJSONMediaType(mt) && (params["charset"] == "" || strings.EqualFold(params["charset"], "utf-8")) {
		return false
	}
	got := "no Content-Type"
	if ct != "" {
		got = fmt.Sprintf("Content-Type %q", ct)
	}
	writeErrorStatus(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
		fmt.Sprintf("%s %s takes a JSON body, sent with Content-Type: application/json; this request has %s", rd.Method, rd.Pattern, got), nil)
	return true
}

// isJSONMediaType reports whether mt (lower case, without parameters) is JSON: application/json or a
// structured type application/…+json.
func isJSONMediaType(mt string) bool {
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}
