// Package ui is the coordinator's dashboard: a few pages, served at /ui/, that show a person what the
// API holds — agents (with a form that starts a run from each one's parameters schema), sessions (live,
// with their events, stderr log, result and callback tree), runners and schedules — and let them start, stop and
// resume sessions and pause and resume schedules.
//
// The pages are plain HTML, one stylesheet and JavaScript modules, embedded in the binary: nothing to
// build or install. They call the JSON API of the same origin, so they need the API served at the root
// of the path the dashboard sits under (/ui/ beside /sessions, /agents, …), and act with the token the
// person gives them, with exactly its rights: the API decides, the pages only reflect what it answers
// (a client token sees no runners and no admin actions). Mount it with httpapi.Config.UI:
//
//	api := httpapi.NewHandler(coord, httpapi.Config{Tokens: tokens, UI: ui.NewHandler()})
//
// or beside the API on a mux of your own (mux.Handle("/ui/", ui.NewHandler()); mux.Handle("/", api)).
// Behind a reverse proxy the pair may live under any prefix: the pages find their assets and the API
// relative to their own address.
//
// # Security
//
// The pages themselves hold no data and need no token; every response carries a Content-Security-Policy
// that allows scripts, styles and connections to this origin only — no inline script or style, no
// framing — with X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer. Everything the API
// returns is rendered as text, never as HTML, so an agent's output cannot script the page. A token the
// person enters is kept in the tab's sessionStorage (gone when the tab closes) and sent as a bearer
// token; with an open API (no tokens) the pages never ask for one.
package ui
