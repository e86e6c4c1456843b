package deterministic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
)

const (
	// maxPendingLines bounds the stderr lines waiting for the event sink. A sink slower than the program's
	// stderr never blocks the program: lines beyond this are dropped and counted, and a marker event says so.
	maxPendingLines = 10_000
	// maxBatch bounds the events handed to the sink in one Emit call.
	maxBatch = 500
	// errorTailBytes bounds the stderr tail that becomes Result.Error when the program fails.
	errorTailBytes = 2048
)

// stderrData is the payload of an [orchestrator.EventStderr] event.
type stderrData struct {
	Line string `json:"line"`
	// Truncated is set when the line was longer than Config.MaxStderrLine; Line then ends with a marker.
	Truncated bool `json:"truncated,omitempty"`
}

// stderrPump turns the child's stderr into events while it runs.
//
// One goroutine reads lines (read) and queues them; another (deliver) hands the queue to the sink. Lines
// that arrive together (in one read from the pipe) are queued before the deliverer is woken, and lines that
// arrive while the sink is busy wait for the next Emit, so batching comes from the load itself: a quiet
// program's line is delivered at once, never held back by a timer, and a chatty program's lines go out in
// batches of up to maxBatch.
type stderrPump struct {
	sessionID string
	maxLine   int
	logger    *slog.Logger

	mu      sync.Mutex
	pending []orchestrator.Event
	dropped int
	tail    []byte // the last stderr bytes, for Result.Error

	wake chan struct{} // capacity 1: "the queue has something"
	eof  chan struct{} // closed when read has queued its last line
}

func newStderrPump(sessionID string, maxLine int, logger *slog.Logger) *stderrPump {
	return &stderrPump{
		sessionID: sessionID,
		maxLine:   maxLine,
		logger:    logger,
		wake:      make(chan struct{}, 1),
		eof:       make(chan struct{}),
	}
}

// read queues r's lines until EOF (or until r is closed under it).
func (p *stderrPump) read(r io.Reader) {
	defer close(p.eof)
	br := bufio.NewReaderSize(r, p.maxLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than maxLine: keep its head, skip the rest up to the newline.
			cut := len(line)
			// Do not split a multi-byte character: drop an incomplete one at the end of the head.
			for i := cut - 1; i >= 0 && i >= cut-utf8.UTFMax; i-- {
				if utf8.RuneStart(line[i]) {
					if !utf8.FullRune(line[i:cut]) {
						cut = i
					}
					break
				}
			}
			head := string(line[:cut])
			skipped := len(line) - cut
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				skipped += len(line)
			}
			skipped -= len(line) - len(trimEOL(line))
			if skipped > 0 {
				p.add(head+fmt.Sprintf(" … [line truncated: %d more bytes]", skipped), true)
			} else {
				p.add(head, false)
			}
		case len(line) > 0:
			p.add(string(trimEOL(line)), false)
		}
		if err != nil {
			return // io.EOF, or the pipe was closed after the run
		}
		if !lineBuffered(br) {
			p.signal()
		}
	}
}

// lineBuffered reports whether another complete line is already buffered, so that lines which arrived
// together are queued together before the deliverer is woken.
func lineBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func (p *stderrPump) add(line string, truncated bool) {
	ev := orchestrator.NewEvent(orchestrator.EventStderr, stderrData{Line: line, Truncated: truncated})
	ev.SessionID = p.sessionID
	ev.Time = orchestrator.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, line...)
	p.tail = append(p.tail, '\n')
	if len(p.tail) > 2*errorTailBytes {
		p.tail = append(p.tail[:0], p.tail[len(p.tail)-errorTailBytes:]...)
	}
	if len(p.pending) >= maxPendingLines {
		p.dropped++
		return
	}
	p.pending = append(p.pending, ev)
}

func (p *stderrPump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// deliver hands queued lines to sink until read has finished and the queue is empty. Emit errors are
// logged, never fatal: losing a log line must not kill the program.
func (p *stderrPump) deliver(ctx context.Context, sink orchestrator.EventSink) {
	for {
		select {
		case <-p.wake:
			p.flush(ctx, sink)
		case <-p.eof:
			p.flush(ctx, sink)
			return
		}
	}
}

func (p *stderrPump) flush(ctx context.Context, sink orchestrator.EventSink) {
	for {
		p.mu.Lock()
		n := min(len(p.pending), maxBatch)
		batch := p.pending[:n:n]
		p.pending = p.pending[n:]
		if len(p.pending) == 0 {
			p.pending = nil
		}
		dropped := p.dropped
		p.dropped = 0
		p.mu.Unlock()
		if dropped > 0 {
			ev := orchestrator.NewEvent(orchestrator.EventStderr, stderrData{
				Line: fmt.Sprintf("[orchestrator: %d stderr lines dropped because the event sink could not keep up]", dropped),
			})
			ev.SessionID, ev.Time = p.sessionID, orchestrator.Now()
			batch = append(batch, ev)
			p.logger.Warn("stderr lines dropped: event sink too slow", "session_id", p.sessionID, "dropped", dropped)
		}
		if len(batch) == 0 {
			return
		}
		if err := sink.Emit(ctx, batch...); err != nil {
			p.logger.Warn("emit stderr events", "session_id", p.sessionID, "events", len(batch), "error", err)
		}
	}
}

// errorTail returns the last lines of stderr (at most errorTailBytes), trimmed, for Result.Error.
func (p *stderrPump) errorTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.tail
	if len(t) > errorTailBytes {
		t = t[len(t)-errorTailBytes:]
		// Start at a line boundary when there is one, else at least at a rune boundary.
		if i := bytes.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
			t = t[i+1:]
		} else {
			for len(t) > 0 && !utf8.RuneStart(t[0]) {
				t = t[1:]
			}
		}
	}
	return string(bytes.TrimSpace(t))
}
