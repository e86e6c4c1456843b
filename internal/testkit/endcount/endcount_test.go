package endcount

import (
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// inner records the ends passed on to it.
type inner struct {
	Counter // for the methods the test does not look at
	ended   []orchestrator.RunStatus
}

func (i *inner) RunEnded(_ string, outcome orchestrator.RunStatus, _ time.Duration) {
	i.ended = append(i.ended, outcome)
}

func TestCounter(t *testing.T) {
	in := &inner{}
	c := &Counter{Inner: in}
	c.RunEnded("a", orchestrator.RunCompleted, 0) // before Arm: passed on, not counted
	done := c.Arm(2)
	c.RunEnded("a", orchestrator.RunCompleted, 0)
	select {
	case <-done:
		t.Fatal("done after one end of two")
	default:
	}
	c.RunEnded("a", orchestrator.RunFailed, 0)
	select {
	case <-done:
	default:
		t.Fatal("not done after two ends of two")
	}
	if n, failed := c.Counted(); n != 2 || failed != 1 {
		t.Fatalf("counted %d ends, %d failed; want 2, 1", n, failed)
	}
	if len(in.ended) != 3 {
		t.Fatalf("%d ends passed on, want 3", len(in.ended))
	}
	if done := c.Arm(0); done == nil {
		t.Fatal("Arm(0) returned no channel")
	} else {
		<-done // closed at once
	}
}
