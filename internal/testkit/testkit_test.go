package testkit

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if !Until(time.Minute, func() bool { return n.Add(1) == 5 }) {
		t.Fatal("Until gave up on a condition that holds at its fifth check")
	}
	if got := n.Load(); got != 5 {
		t.Errorf("cond checked %d times, want 5: Until must stop at the first true", got)
	}
	if Until(10*time.Millisecond, func() bool { return false }) {
		t.Error("Until reported true for a condition that never holds")
	}
	// A condition that first holds at the deadline is seen: the last check is made then.
	start := time.Now()
	if !Until(20*time.Millisecond, func() bool { return time.Since(start) >= 20*time.Millisecond }) {
		t.Error("Until missed a condition that holds at its deadline")
	}
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

func TestWaitForFailsWithWhat(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{TB: t}
	WaitFor(rec, time.Millisecond, "nothing", func() bool { return false })
	if !strings.Contains(rec.msg, "waiting for nothing") {
		t.Errorf("WaitFor on a condition that never holds failed with %q, want one naming what it waited for", rec.msg)
	}
	rec = &fatalRecorder{TB: t}
	WaitFor(rec, time.Minute, "something", func() bool { return true })
	if rec.msg != "" {
		t.Errorf("WaitFor failed on a condition that holds: %s", rec.msg)
	}
	rec = &fatalRecorder{TB: t}
	WaitForState(rec, time.Millisecond, "a state", func() (bool, string) { return false, "still not" })
	if !strings.Contains(rec.msg, "waiting for a state; last state: still not") {
		t.Errorf("WaitForState on a condition that never holds failed with %q, want the last state", rec.msg)
	}
}
