package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// DefaultMaxBatchBytesInFlight is the default of [Config.MaxBatchBytesInFlight]: two fan-outs of the
// largest size at once.
const DefaultMaxBatchBytesInFlight = 64 << 20

// inflightRetryAfter is the Retry-After, in seconds, of a request refused for the bytes in flight: a
// batch takes about that long to decode and store.
const inflightRetryAfter = 1

// bytesInFlight bounds the bytes that the bodies of the large-body routes (fan-outs and reports, whose
// limits exceed MaxBodyBytes) hold at once, across every request and credential. A body is decoded whole
// and then grows several times over as Go values, so without this bound a handful of concurrent batches
// at the size limit made the coordinator's memory grow by hundreds of MiB.
//
// A request reserves its Content-Length (at most the route's limit) before its body is read, and gives it
// back when it is answered; a body of unknown length (chunked) reserves the route's whole limit, which is
// all it may send. One that does not fit is refused at once, before its body is read: 429
// too_many_bytes_in_flight with Retry-After. A request larger than the whole budget could never fit, so
// the budget is never below the largest route limit.
type bytesInFlight struct {
	max  int64
	mu   sync.Mutex
	used int64
}

func newBytesInFlight(max int64) *bytesInFlight {
	if max < 0 {
		return nil
	}
	return &bytesInFlight{max: max}
}

// reserve takes n bytes of the budget and returns the function that gives them back, or false when they
// do not fit.
func (b *bytesInFlight) reserve(n int64) (func(), bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return nil, false
	}
	b.used += n
	return func() {
		b.mu.Lock()
		b.used -= n
		b.mu.Unlock()
	}, true
}

// admit reserves the bytes of r's body, whose route allows limit bytes; when they do not fit it answers
// 429 and returns false.
func (b *bytesInFlight) admit(w http.ResponseWriter, r *http.Request, limit int64) (func(), bool) {
	n := limit
	if r.ContentLength >= 0 {
		n = min(r.ContentLength, limit)
	}
	release, ok := b.reserve(n)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(inflightRetryAfter))
		writeErrorStatus(w, http.StatusTooManyRequests, "too_many_bytes_in_flight", fmt.Sprintf(
			"the coordinator is already reading %d bytes of batch and report bodies, and this one's %d bytes would pass its limit of %d; retry later",
			b.usedNow(), n, b.max), map[string]any{"limit": b.max})
		return nil, false
	}
	return release, true
}

func (b *bytesInFlight) usedNow() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
