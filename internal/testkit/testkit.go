// Package testkit holds what the module's tests share: waiting for a condition with a deadline here, and
// in its subpackages a PostgreSQL schema per test (pgtest), the async-callback scenario every transport
// runs (callbackcase) and a counter of run ends for benchmarks (endcount).
//
// A test never sleeps to let something happen: it waits for the condition it needs, with a deadline
// generous enough for a loaded machine, so that it is as fast as the machine allows and fails with a
// message rather than flaking.
package testkit

import (
	"testing"
	"time"
)

// Interval bounds the pause between two checks of a condition. Checks start 1 ms apart and the pause
// doubles up to Interval, so that a condition that holds soon is seen soon and a long wait costs little.
const Interval = 25 * time.Millisecond

// Until checks cond until it returns true and reports whether it did before timeout passed. cond is
// checked once more at the deadline, so a condition that holds by then is never reported false.
func Until(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	pause := time.Millisecond
	next := time.NewTimer(pause)
	defer next.Stop()
	for {
		select {
		case <-deadline.C:
			return cond()
		case <-next.C:
			if cond() {
				return true
			}
			pause = min(2*pause, Interval)
			next.Reset(pause)
		}
	}
}

// WaitFor waits until cond returns true, and fails tb when timeout passes first: "timed out after
// <timeout> waiting for <what>".
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Until(timeout, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// WaitForState is WaitFor for a condition that also describes the state it saw, which the failure
// message reports ("…; last state: <state>").
func WaitForState(tb testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	tb.Helper()
	var state string
	if !Until(timeout, func() bool {
		var ok bool
		ok, state = cond()
		return ok
	}) {
		tb.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
	}
}
