package httpapi

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// DefaultMaxLongPolls is the default of [Config.MaxLongPolls]. A runner holds one poll, plus the waits its
// executors make through its gateway; a client holds one per sync call, wait or stream it has open. A
// thousand leaves room for a fleet of runners sharing one token, while one credential can no longer hold
// thousands of connections open.
const DefaultMaxLongPolls = 1024

// longPollRetryAfter is the Retry-After, in seconds, of a 429 for too many long polls.
const longPollRetryAfter = 1

// longPolls counts the requests to long-polling routes that each credential has open.
type longPolls struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// credential is whom a request's long polls are counted against: its bearer token, hashed (the map must
// not hold tokens), when the handler authenticates; else the client's IP address.
func (s *server) credential(r *http.Request) string {
	if s.cfg.Authenticator != nil {
		if tok, ok := BearerToken(r); ok {
			h := sha256.Sum256([]byte(tok))
			return "token:" + string(h[:])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}

// acquire counts one more open long poll for key and returns its release, or reports false when key has
// the maximum open already.
func (l *longPolls) acquire(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[key] >= l.max {
		return nil, false
	}
	l.n[key]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[key]--; l.n[key] <= 0 {
			delete(l.n, key)
		}
	}, true
}

// writeTooManyLongPolls answers 429 with Retry-After.
func (l *longPolls) writeTooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(longPollRetryAfter))
	writeErrorStatus(w, http.StatusTooManyRequests, "too_many_long_polls", fmt.Sprintf(
		"this credential already has %d long polls and event streams open, the limit; end one, or retry later", l.max),
		map[string]any{"limit": l.max})
}
