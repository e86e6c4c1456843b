package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Cancellation over stateless streamable HTTP.
//
// Under the protocol versions that have an initialize handshake (up to 2025-11-25, what most clients
// speak today) a client cancels a call by sending notifications/cancelled in a request of its own. The
// stateless server serves each HTTP request with a fresh SDK session, so that notification never reaches
// the session running the call. cancelRouter routes it: it remembers the tool calls in flight on this
// server, and cancels the one a notification names. To tell clients apart without keeping sessions, it
// answers every initialize with a random Mcp-Session-Id, which clients then send with each request; the
// server stores nothing under it and accepts requests without it (or with an unknown one, after a
// restart), so the endpoint stays stateless. Calls are told apart by that id, the request's credentials
// (its Authorization header) and calling session, and the JSON-RPC id; a notification that matches
// several calls (clients sending no Mcp-Session-Id) cancels none.
//
// Under the sessionless protocol (2026-07-28 and later) a client cancels an HTTP call by closing its
// request, which the SDK turns into the call's context being cancelled (PropagateRequestCancellation).
//
// A request that goes away under an older protocol without a notifications/cancelled (within goneGrace)
// is a lost connection, not a cancellation (the transport specification says so): the call stops
// waiting, since nobody is left to read its answer, but the session it started keeps running.

// HeaderMCPSessionID is the streamable HTTP transport's session header. The stateless server sets it on
// its answer to initialize only to tell clients apart when they cancel a call.
const HeaderMCPSessionID = "Mcp-Session-Id"

// goneGrace is how long a call whose request went away (under a protocol with notifications/cancelled)
// waits for the client's cancellation before it takes the client for lost.
const goneGrace = 2 * time.Second

// sessionlessProtocol is the first protocol version whose HTTP calls end when their request is closed.
const sessionlessProtocol = "2026-07-28"

// callCancelled is the cause of a call's context when the client cancelled the call.
type callCancelled struct{ reason string }

func (e *callCancelled) Error() string {
	if e.reason == "" {
		return "the MCP client cancelled the call"
	}
	return "the MCP client cancelled the call: " + e.reason
}

// errClientGone is the cause of a call's context when its HTTP request went away without a cancellation.
var errClientGone = errors.New("the MCP client's request went away without cancelling the call")

// errCallDone ends a call's scope once the call has been answered.
var errCallDone = errors.New("the call was answered")

// callScope is what cancelRouter hands a tool call through its request's context.
type callScope struct {
	ctx context.Context // cancelled, with a cause, when the client cancels the call or goes away
}

type callScopeKey struct{}

// callContext returns the tool call's context, also cancelled when cancelRouter cancels the call, with the
// router's cause. done releases it.
func callContext(ctx context.Context) (context.Context, func()) {
	sc, ok := ctx.Value(callScopeKey{}).(*callScope)
	if !ok {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(sc.ctx, func() { cancel(context.Cause(sc.ctx)) })
	return cctx, func() { stop(); cancel(errCallDone) }
}

// cancellation reports whether ctx ended because the client cancelled the call (rather than going away,
// or not at all), with the reason it gave, if any.
func cancellation(ctx context.Context) (bool, string) {
	cause := context.Cause(ctx)
	var cc *callCancelled
	switch {
	case errors.As(cause, &cc):
		return true, cc.reason
	case cause == context.Canceled:
		// The SDK cancelled the call: a notifications/cancelled on a connection that carries both (stdio,
		// stateful HTTP), or a sessionless HTTP call whose request was closed. A lost connection has
		// another cause (the read error).
		return true, ""
	}
	return false, ""
}

type callKey struct {
	client string // digest of the headers that tell clients apart
	id     string // JSON-RPC request id, as compact JSON
}

// cancelRouter wraps a stateless streamable HTTP handler (see above).
type cancelRouter struct {
	next    http.Handler
	maxBody int64

	mu    sync.Mutex
	calls map[callKey][]*inflight
}

func newCancelRouter(next http.Handler, maxBody int64) *cancelRouter {
	if maxBody == 0 {
		maxBody = 4 << 20 // the SDK's default, mcp.DefaultMaxRequestBodyBytes
	}
	return &cancelRouter{next: next, maxBody: maxBody, calls: map[callKey][]*inflight{}}
}

// message is what the router reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	} `json:"params"`
}

func (h *cancelRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	// Read the body to look at the message, then hand it on as it came. A body beyond the limit (the
	// SDK refuses it) or one that is not a single JSON-RPC message is passed on unread by the router.
	lr := r.Body
	if h.maxBody > 0 {
		lr = io.NopCloser(io.LimitReader(r.Body, h.maxBody+1))
	} // else the limit is off (StreamableHTTPOptions.MaxRequestBodyBytes < 0)
	body, err := io.ReadAll(lr)
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	var msg message
	if err != nil || (h.maxBody > 0 && int64(len(body)) > h.maxBody) || json.Unmarshal(body, &msg) != nil {
		h.next.ServeHTTP(w, r)
		return
	}
	switch msg.Method {
	case "initialize":
		if r.Header.Get(HeaderMCPSessionID) == "" {
			w.Header().Set(HeaderMCPSessionID, rand.Text())
		}
	case "notifications/cancelled":
		if id := compactID(msg.Params.RequestID); id != "" {
			h.cancel(callKey{clientOf(r), id}, msg.Params.Reason)
		}
	case "tools/call":
		if id := compactID(msg.ID); id != "" {
			key := callKey{clientOf(r), id}
			ctx, cancel := context.WithCancelCause(context.Background())
			call := &inflight{cancel: cancel}
			h.add(key, call)
			newProtocol := r.Header.Get("Mcp-Protocol-Version") >= sessionlessProtocol
			var grace *time.Timer
			stop := context.AfterFunc(r.Context(), func() {
				if newProtocol {
					cancel(&callCancelled{reason: "the client closed the request"})
					return
				}
				// Clients that cancel may close the request just before their notifications/cancelled
				// arrives: give it a moment to, before taking the closed request for a lost client.
				h.mu.Lock()
				grace = time.AfterFunc(goneGrace, func() { cancel(errClientGone) })
				h.mu.Unlock()
			})
			defer func() {
				stop()
				h.mu.Lock()
				if grace != nil {
					grace.Stop()
				}
				h.mu.Unlock()
				h.remove(key, call)
				cancel(errCallDone)
			}()
			r = r.WithContext(context.WithValue(r.Context(), callScopeKey{}, &callScope{ctx: ctx}))
		}
	}
	h.next.ServeHTTP(w, r)
}

// clientOf tells clients apart by the headers they send with every request: the Mcp-Session-Id handed out
// at initialize, their credentials and their calling session. Only a digest is kept.
func clientOf(r *http.Request) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{
		r.Header.Get(HeaderMCPSessionID), r.Header.Get("Authorization"), r.Header.Get(HeaderSessionID),
	}, "\x00")))
	return hex.EncodeToString(sum[:])
}

func compactID(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}

// inflight is one tool call in flight.
type inflight struct{ cancel context.CancelCauseFunc }

func (h *cancelRouter) add(k callKey, c *inflight) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[k] = append(h.calls[k], c)
}

func (h *cancelRouter) remove(k callKey, c *inflight) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[k] = slices.DeleteFunc(h.calls[k], func(x *inflight) bool { return x == c })
	if len(h.calls[k]) == 0 {
		delete(h.calls, k)
	}
}

// cancel cancels the call k names, when it names exactly one. Notifications that name no call (it ended
// already, or runs on another replica) are ignored, as the cancellation utility asks.
func (h *cancelRouter) cancel(k callKey, reason string) {
	h.mu.Lock()
	calls := h.calls[k]
	h.mu.Unlock()
	if len(calls) == 1 {
		calls[0].cancel(&callCancelled{reason: reason})
	}
}
