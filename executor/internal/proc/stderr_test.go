package proc

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

// lineSource yields n lines of size bytes each (newline included) from one line it holds: a flood of any
// size costs the test one line of memory.
type lineSource struct {
	n    int
	tmpl []byte
	line int // lines fully read
	off  int // bytes of the current line read
}

func newLineSource(n, size int) *lineSource {
	tmpl := []byte(strings.Repeat("x", size-1) + "\n")
	return &lineSource{n: n, tmpl: tmpl}
}

func (s *lineSource) Read(b []byte) (int, error) {
	if s.line == s.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(b) && s.line < s.n {
		c := copy(b[k:], s.tmpl[s.off:])
		k += c
		s.off += c
		if s.off == len(s.tmpl) {
			s.line, s.off = s.line+1, 0
		}
	}
	return k, nil
}

// recordingSink keeps what it is given, and blocks each Emit until release is closed.
type recordingSink struct {
	release chan struct{}
	mu      sync.Mutex
	events  []orchestrator.Event
}

func (s *recordingSink) Emit(_ context.Context, evs ...orchestrator.Event) error {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, evs...)
	return nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A flood of long lines into a sink that does not keep up: the pump's queue stays within its bounds, and
// so does the memory it holds, whatever the flood's size; every line is either kept — cut to the line
// limit and marked truncated — or counted in a stderr_dropped event. Not parallel: it measures the heap.
func TestPumpFloodStaysBounded(t *testing.T) {
	const (
		lines    = 1000
		lineSize = 100 << 10 // over the line limit: each line is cut
	)
	sink := &recordingSink{release: make(chan struct{})}
	before := heapInUse()
	p := NewStderrPump("ses_x", MaxStderrLine, nil)
	p.Start(t.Context(), sink)
	p.Read(newLineSource(lines, lineSize)) // 100 MiB, read while the sink is stuck

	p.mu.Lock()
	queued, queuedBytes, dropped := len(p.pending), p.pendingBytes, p.dropped
	p.mu.Unlock()
	if queuedBytes > MaxPendingBytes || queued > MaxPendingLines {
		t.Errorf("queue after the flood: %d events, %d bytes; want at most %d events and %d bytes", queued, queuedBytes, MaxPendingLines, MaxPendingBytes)
	}
	if dropped == 0 {
		t.Errorf("no line was dropped from a %d MiB flood into a stuck sink", lines*lineSize>>20)
	}
	// What the pump holds: its queue, the batch the stuck sink was given, a reader's buffer. Far below
	// the flood, and independent of its size.
	if grown := int64(heapInUse()) - int64(before); grown > 3*MaxPendingBytes {
		t.Errorf("the heap grew by %d MiB during a %d MiB flood; want at most %d MiB", grown>>20, lines*lineSize>>20, 3*MaxPendingBytes>>20)
	}

	close(sink.release)
	p.Finish()
	kept, counted := 0, 0
	for _, ev := range sink.events {
		switch ev.Type {
		case orchestrator.EventStderr:
			var d stderrData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if !d.Truncated || !strings.HasPrefix(d.Line, strings.Repeat("x", MaxStderrLine)+" … [line truncated: ") {
				t.Fatalf("line %d: truncated %v, %d bytes; want it cut to %d bytes and marked", kept, d.Truncated, len(d.Line), MaxStderrLine)
			}
			kept++
		case orchestrator.EventStderrDropped:
			var d struct {
				N int `json:"dropped_lines"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			counted += d.N
		}
	}
	if kept+counted != lines || kept == 0 {
		t.Errorf("%d lines kept and %d counted as dropped; want %d in all, some kept", kept, counted, lines)
	}
}

// A line of characters JSON escapes is cut further, so that its event stays within maxLineJSON.
func TestPumpCutsLinesToFitAsJSON(t *testing.T) {
	t.Parallel()
	var got []orchestrator.Event
	p := NewStderrPump("ses_x", MaxStderrLine, nil)
	p.Start(t.Context(), orchestrator.EventSinkFunc(func(_ context.Context, evs ...orchestrator.Event) error {
		got = append(got, evs...)
		return nil
	}))
	line := strings.Repeat("\x01", MaxStderrLine-1) // within the byte limit; six bytes each as JSON
	p.Read(strings.NewReader(line + "\nafter\n"))
	p.Finish()
	if len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	var d stderrData
	if err := json.Unmarshal(got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if len(got[0].Data) > maxLineJSON || !d.Truncated || !strings.Contains(d.Line, "more bytes]") {
		t.Errorf("event of %d bytes, truncated %v; want at most %d and marked truncated", len(got[0].Data), d.Truncated, maxLineJSON)
	}
	kept := strings.Count(d.Line, "\x01")
	if want := " … [line truncated: " + itoa(len(line)-kept) + " more bytes]"; !strings.HasSuffix(d.Line, want) {
		t.Errorf("line ends %q, want %q", d.Line[len(d.Line)-40:], want)
	}
}

// A batch handed to the sink stays within maxBatchBytes, so that it fits one request.
func TestPumpBatchesFitARequest(t *testing.T) {
	t.Parallel()
	sink := &recordingSink{release: make(chan struct{})}
	close(sink.release)
	var sizes []int
	p := NewStderrPump("ses_x", MaxStderrLine, nil)
	p.Start(t.Context(), orchestrator.EventSinkFunc(func(ctx context.Context, evs ...orchestrator.Event) error {
		n := 0
		for _, e := range evs {
			n += len(e.Data)
		}
		sizes = append(sizes, n)
		return sink.Emit(ctx, evs...)
	}))
	p.Read(newLineSource(200, 40<<10))
	p.Finish()
	kept := 0
	for _, ev := range sink.events {
		if ev.Type == orchestrator.EventStderr {
			kept++
		}
	}
	if kept != 200 {
		t.Errorf("%d lines kept, want 200", kept)
	}
	for _, n := range sizes {
		if n > maxBatchBytes {
			t.Errorf("a batch of %d bytes, over %d", n, maxBatchBytes)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
