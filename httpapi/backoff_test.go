package httpapi

import (
	"net/http"
	"testing"
	"time"
)

// The wait between retries never exceeds RetryWaitMax, whatever the attempt number, unless the server
// asked for longer with Retry-After.
func TestBackoffIsCapped(t *testing.T) {
	t.Parallel()
	a := &attempt{}
	lo, hi := 200*time.Millisecond, time.Second
	for n := 1; n <= 20; n++ {
		if d := a.backoff(lo, hi, n, nil); d > hi || d < 0 {
			t.Fatalf("attempt %d: backoff %s, want within [0, %s]", n, d, hi)
		}
	}
	resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": []string{"3"}}}
	if d := a.backoff(lo, hi, 1, resp); d != 3*time.Second {
		t.Errorf("Retry-After 3: backoff %s, want 3s", d)
	}
	a.now = true
	if d := a.backoff(lo, hi, 5, nil); d != 0 {
		t.Errorf("a switch to a fresh URL waits %s, want 0", d)
	}
}
