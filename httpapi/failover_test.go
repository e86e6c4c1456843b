package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// fakeCoordinator answers a few routes and counts the requests it got.
type fakeCoordinator struct {
	*httptest.Server
	hits atomic.Int32
}

func newFake(t *testing.T, h http.HandlerFunc) *fakeCoordinator {
	t.Helper()
	f := &fakeCoordinator{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func okCoordinator(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "POST" && r.URL.Path == "/runs":
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"run_id":"run_1","session_id":"ses_1","status":"pending"}`))
	case r.URL.Path == "/runner/runs":
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Write([]byte(`{"session_id":"ses_1","status":"running"}`))
	}
}

// deadURL returns the URL of a server that was closed: connections to it are refused.
func deadURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func failoverClient(t *testing.T, urls string) *Client {
	t.Helper()
	// Backoff long enough that a test would notice a switch that waited for it.
	c, err := NewClient(urls, ClientConfig{RetryMax: 2, RetryWaitMin: 2 * time.Second, RetryWaitMax: 2 * time.Second, Timeout: 20 * time.Second})
	check(t, "NewClient", err)
	return c
}

// A coordinator that refuses connections: the request goes to the next one at once, and so do the
// requests after it.
func TestClientFailoverOnConnectionRefused(t *testing.T) {
	t.Parallel()
	b := newFake(t, okCoordinator)
	dead := deadURL(t)
	c := failoverClient(t, dead+", "+b.URL+"/")
	if c.URL() != dead {
		t.Fatalf("URL() = %q before any request, want the first one", c.URL())
	}
	start := time.Now()
	if _, err := c.GetSession(context.Background(), "ses_1"); err != nil {
		t.Fatalf("GetSession with the first coordinator down: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the switch took %s: it must not wait for the backoff", d)
	}
	if c.URL() != b.URL {
		t.Fatalf("URL() = %q after the switch, want %q", c.URL(), b.URL)
	}
	// A request that must not run twice goes to the next coordinator too: a refused dial never reached the
	// first one.
	c2 := failoverClient(t, dead+","+b.URL)
	res, err := c2.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "a"})
	if err != nil || res.RunID != "run_1" {
		t.Fatalf("StartRun with the first coordinator down: %+v, %v", res, err)
	}
	if _, err := c.PollWork(context.Background(), orchestrator.PollParams{RunnerID: "r", Wait: time.Second}); err != nil {
		t.Fatalf("PollWork on the second coordinator: %v", err)
	}
	if got := b.hits.Load(); got != 3 {
		t.Fatalf("the live coordinator got %d requests, want 3", got)
	}
}

// HTTP answers come from a live coordinator: neither a 4xx nor a 5xx makes the client switch.
func TestClientNoFailoverOnHTTPErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNotFound, http.StatusInternalServerError} {
		a := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(`{"error":"boom","message":"boom"}`))
		})
		b := newFake(t, okCoordinator)
		c, err := NewClient(a.URL+","+b.URL, ClientConfig{RetryMax: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond})
		check(t, "NewClient", err)
		if _, err := c.GetSession(context.Background(), "ses_1"); err == nil {
			t.Fatalf("status %d: GetSession succeeded", status)
		}
		if b.hits.Load() != 0 || c.URL() != a.URL {
			t.Fatalf("status %d: the client switched (second coordinator hit %d times, URL %q)", status, b.hits.Load(), c.URL())
		}
		want := int32(1)
		if status >= 500 {
			want = 2 // retried once, on the same coordinator
		}
		if got := a.hits.Load(); got != want {
			t.Fatalf("status %d: first coordinator hit %d times, want %d", status, got, want)
		}
	}
}

// A coordinator that dies while it holds a request (the connection closes without an answer): a safe
// request — a runner's long poll, a create with its idempotency key — is repeated on the next coordinator
// at once; a request that must not run twice is not repeated (it may have been executed), but the next
// call goes to the next coordinator.
func TestClientFailoverWhenCoordinatorDiesMidRequest(t *testing.T) {
	t.Parallel()
	a := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		// The whole request has arrived — the client cannot take it for one it never sent — and then the
		// coordinator dies without an answer.
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	b := newFake(t, okCoordinator)

	c := failoverClient(t, a.URL+","+b.URL)
	start := time.Now()
	if _, err := c.PollWork(context.Background(), orchestrator.PollParams{RunnerID: "r", Max: 1, Wait: 5 * time.Second}); err != nil {
		t.Fatalf("PollWork whose coordinator died: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the switch took %s", d)
	}
	if a.hits.Load() != 1 || b.hits.Load() != 1 || c.URL() != b.URL {
		t.Fatalf("hits %d/%d, URL %q; want 1/1 and the second coordinator", a.hits.Load(), b.hits.Load(), c.URL())
	}

	// A create carries an idempotency key, so it is safe to repeat as well: the next coordinator answers.
	c2 := failoverClient(t, a.URL+","+b.URL)
	if _, err := c2.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "a"}); err != nil {
		t.Fatalf("StartRun whose coordinator died mid-request: %v, want it repeated on the next coordinator", err)
	}
	if a.hits.Load() != 2 || b.hits.Load() != 2 || c2.URL() != b.URL {
		t.Fatalf("hits %d/%d, URL %q: want StartRun repeated once on the second coordinator", a.hits.Load(), b.hits.Load(), c2.URL())
	}
	// A request that must not run twice and has no key (an event append) is not repeated, but the next
	// call goes to the next coordinator.
	c3 := failoverClient(t, a.URL+","+b.URL)
	_, err := c3.AppendEvents(context.Background(), "ses_x", []orchestrator.Event{{Type: "progress"}})
	if err == nil || !errors.Is(err, ErrServer) {
		t.Fatalf("AppendEvents whose coordinator died mid-request: %v, want an ErrServer error and no repeat", err)
	}
	if a.hits.Load() != 3 || b.hits.Load() != 2 {
		t.Fatalf("hits %d/%d: AppendEvents was repeated", a.hits.Load(), b.hits.Load())
	}
	if c3.URL() != b.URL {
		t.Fatalf("URL() = %q after a dead coordinator, want the next one", c3.URL())
	}
}

// With every coordinator down the request fails like a single-URL client's (ErrServer), after trying each
// and retrying with backoff.
func TestClientFailoverAllDown(t *testing.T) {
	t.Parallel()
	c, err := NewClient(deadURL(t)+","+deadURL(t)+","+deadURL(t), ClientConfig{RetryMax: 2, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 20 * time.Millisecond})
	check(t, "NewClient", err)
	if _, err := c.GetSession(context.Background(), "x"); !errors.Is(err, ErrServer) {
		t.Fatalf("all down: %v, want ErrServer", err)
	}
	// The client went round; it keeps working from wherever it ended.
	if _, err := NewClient("http://a:1, ,http://b:2", ClientConfig{}); err == nil {
		t.Fatal("NewClient accepted an empty URL in the list")
	}
	c2, err := NewClient(" http://a:1/ ,http://b:2", ClientConfig{})
	check(t, "NewClient", err)
	if c2.base != "http://a:1,http://b:2" {
		t.Fatalf("base = %q", c2.base)
	}
}

// A coordinator that holds a request past its timeout without answering (hung): that request fails, the
// next one goes to the next coordinator.
func TestClientFailoverAfterTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	a := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	b := newFake(t, okCoordinator)
	c, err := NewClient(a.URL+","+b.URL, ClientConfig{Timeout: 100 * time.Millisecond})
	check(t, "NewClient", err)
	if _, err := c.GetSession(context.Background(), "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung coordinator: %v, want DeadlineExceeded", err)
	}
	if c.URL() != b.URL {
		t.Fatalf("URL() = %q after a timeout, want the next coordinator", c.URL())
	}
	if _, err := c.GetSession(context.Background(), "x"); err != nil {
		t.Fatalf("next request: %v", err)
	}
	// The caller's own cancellation is not the coordinator's fault: no switch.
	c2, err := NewClient(a.URL+","+b.URL, ClientConfig{})
	check(t, "NewClient", err)
	cctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c2.GetSession(cctx, "x"); err == nil {
		t.Fatal("GetSession on a hung coordinator succeeded")
	}
	if c2.URL() != a.URL {
		t.Fatalf("URL() = %q after the caller's deadline, want no switch", c2.URL())
	}
}
