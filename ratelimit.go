package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// RateLimit bounds how many of an agent's runs start per time window: at most Limit runs are claimed in
// any PeriodSeconds, counted per bucket — one bucket for the agent, or, with Key, one per value the
// parameter Key names. Runs over the limit are not refused and do not fail: they stay pending
// (GET /sessions/{id} shows waiting_reason "rate_limited") and are claimed as the window allows, highest
// priority and oldest first. The window slides: a claim is allowed while fewer than Limit runs of its
// bucket were claimed in the PeriodSeconds before it. It is enforced by the store's claim, so it holds
// across runners and coordinator replicas.
//
// A run takes the limit of its agent's blueprint when it is created; a request cannot set or loosen it.
type RateLimit struct {
	// Limit is the most runs started per window: 1 to 10000.
	Limit int `json:"limit"`
	// PeriodSeconds is the window: 1 second to 1 day.
	PeriodSeconds int `json:"period_seconds"`
	// Key, when set, is a JSON path into the run's parameters ("$.customer", "$.target.host"): runs with
	// the same value share a bucket. A run whose parameters lack it falls in the bucket of the value null.
	Key string `json:"key,omitempty"`
}

// Period returns PeriodSeconds as a duration.
func (l *RateLimit) Period() time.Duration { return time.Duration(l.PeriodSeconds) * time.Second }

const (
	maxRateLimit         = 10000
	maxRatePeriodSeconds = 24 * 3600
)

// rateKeyPattern is the JSON path a rate limit's key may be: $ followed by one or more .name steps.
var rateKeyPattern = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_-]*)+$`)

func (l *RateLimit) validate() error {
	if l.Limit < 1 || l.Limit > maxRateLimit {
		return fmt.Errorf("rate_limit.limit must be between 1 and %d", maxRateLimit)
	}
	if l.PeriodSeconds < 1 || l.PeriodSeconds > maxRatePeriodSeconds {
		return fmt.Errorf("rate_limit.period_seconds must be between 1 and %d (1 day)", maxRatePeriodSeconds)
	}
	if l.Key != "" && !rateKeyPattern.MatchString(l.Key) {
		return fmt.Errorf("rate_limit.key %q must be a JSON path of object members such as $.customer or $.target.host", l.Key)
	}
	return nil
}

// Bucket returns the bucket of a run with these (validated) parameters: "" without a Key, else the
// canonical JSON of the value Key names ("null" when the parameters lack it).
func (l *RateLimit) Bucket(params json.RawMessage) string {
	if l.Key == "" {
		return ""
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return "null"
	}
	for _, name := range strings.Split(strings.TrimPrefix(l.Key, "$."), ".") {
		obj, ok := doc.(map[string]any)
		if !ok {
			return "null"
		}
		if doc, ok = obj[name]; !ok {
			return "null"
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "null"
	}
	canon, err := CanonicalJSON(b)
	if err != nil {
		return "null"
	}
	return string(canon)
}

// WaitingRateLimited is a pending session's [Session].WaitingReason while a rate limit holds its run.
const WaitingRateLimited = "rate_limited"

// WaitingCacheInFlight is a pending session's WaitingReason while it waits for an identical start in
// flight, whose result it will share.
const WaitingCacheInFlight = "cache_in_flight"
