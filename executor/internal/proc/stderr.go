package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

const (
	// MaxPendingLines bounds the stderr lines waiting for the event sink. A sink slower than the program's
	// stderr never blocks the program: lines beyond this, or beyond [MaxPendingBytes], are dropped and
	// counted, and an [orchestrator.EventStderrDropped] event says how many, where they would have been.
	MaxPendingLines = 10_000
	// MaxPendingBytes bounds the bytes of the stderr events (their JSON data) waiting for the event sink,
	// so that a run's queue holds at most this much whatever its lines' length: 256 lines of the default
	// 16 KiB limit, or 10,000 short ones.
	MaxPendingBytes = 4 << 20
	// maxBatch bounds the events handed to the sink in one Emit call, and maxBatchBytes their data: with
	// their envelopes, one call then fits one call of the runner's to the coordinator (at most 1 MiB, half
	// the HTTP API's default body limit).
	maxBatch      = 500
	maxBatchBytes = 896 << 10
	// errorTailBytes bounds the stderr tail that becomes Result.Error when the program fails.
	errorTailBytes = 2048
	// FlushTimeout bounds delivering the last stderr events once the program has ended, so a sink that
	// hangs cannot hold the run forever.
	FlushTimeout = 5 * time.Second
	// MinStderrLine and MaxStderrLine bound a pump's line limit: smaller values are raised, larger ones
	// lowered. Past the upper bound, a line is cut in any case: one stderr event must stay far below the
	// coordinator's limit for one event (256 KiB by default).
	MinStderrLine = 64
	MaxStderrLine = 64 << 10
	// maxLineJSON bounds a line as JSON: a line of control characters (or <, > and &) takes up to six times
	// its size, so a line within the byte limit is cut further when its encoding passes this.
	maxLineJSON = 128 << 10
)

// stderrData is the payload of an [orchestrator.EventStderr] event.
type stderrData struct {
	Line string `json:"line"`
	// Truncated is set when the line was longer than the pump's line limit; Line then ends with a marker.
	Truncated bool `json:"truncated,omitempty"`
}

// StderrPump turns a child's stderr into [orchestrator.EventStderr] events while it runs.
//
// One goroutine reads lines ([StderrPump.Read], given to [Spec].Stderr) and queues them; another (started
// by [StderrPump.Start]) hands the queue to the sink. [StderrPump.Finish] waits, boundedly, for the last
// lines to be delivered. Lines that arrive together (in one read from the pipe) are queued before the
// deliverer is woken, and lines that arrive while the sink is busy wait for the next Emit, so batching
// comes from the load itself: a quiet program's line is delivered at once, never held back by a timer, and
// a chatty program's lines go out in batches of up to maxBatch events and maxBatchBytes.
//
// Nothing is lost in silence, and the memory a pump holds is bounded: a line longer than the limit is cut
// and its event says so ("truncated": true); the queue holds at most [MaxPendingLines] lines and
// [MaxPendingBytes]; a line that finds it full is dropped and counted, and an
// [orchestrator.EventStderrDropped] event takes the dropped lines' place in the session. What the sink
// fails to store is the sink's to count (the runner's does).
type StderrPump struct {
	sessionID string
	maxLine   int
	logger    *slog.Logger

	mu      sync.Mutex
	pending []orchestrator.Event
	// pendingBytes is the data of the events in pending; dropped counts the lines dropped since the last
	// one queued (their stderr_dropped event is queued before the next line, or flushed at the end).
	pendingBytes int
	dropped      int
	tail         []byte // the last stderr bytes, for Result.Error

	wake    chan struct{} // capacity 1: "the queue has something"
	eof     chan struct{} // closed when Read has queued its last line (or by Finish, when Read never ran)
	eofOnce sync.Once

	delivered  chan struct{} // closed when the deliverer has returned
	cancelEmit context.CancelFunc
}

// NewStderrPump returns a pump whose events belong to sessionID. Lines longer than maxLine bytes are cut,
// with a marker saying how much was cut; maxLine is raised to [MinStderrLine] and lowered to
// [MaxStderrLine]. logger gets sink errors.
func NewStderrPump(sessionID string, maxLine int, logger *slog.Logger) *StderrPump {
	maxLine = min(max(maxLine, MinStderrLine), MaxStderrLine)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &StderrPump{
		sessionID: sessionID,
		maxLine:   maxLine,
		logger:    logger,
		wake:      make(chan struct{}, 1),
		eof:       make(chan struct{}),
		delivered: make(chan struct{}),
	}
}

// Start delivers queued lines to sink until [StderrPump.Finish]. Events are emitted with a context that
// outlives ctx's cancellation, so the lines a program writes while it is being stopped still reach the
// session.
func (p *StderrPump) Start(ctx context.Context, sink orchestrator.EventSink) {
	emitCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancelEmit = cancel
	go func() {
		defer close(p.delivered)
		p.deliver(emitCtx, sink)
	}()
}

// Finish waits until every line Read queued has been handed to the sink, at most [FlushTimeout]. Call it
// once the program's stderr has been read to its end ([Run] has returned), or when the program never
// started.
func (p *StderrPump) Finish() {
	p.eofOnce.Do(func() { close(p.eof) })
	if p.cancelEmit == nil {
		return
	}
	deadline := time.AfterFunc(FlushTimeout, p.cancelEmit)
	<-p.delivered
	deadline.Stop()
	p.cancelEmit()
}

// Read queues r's lines until EOF (or until r is closed under it).
func (p *StderrPump) Read(r io.Reader) {
	defer p.eofOnce.Do(func() { close(p.eof) })
	pool := readerPool(p.maxLine)
	br, _ := pool.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(r, p.maxLine)
	} else {
		br.Reset(r)
	}
	defer func() {
		br.Reset(nil)
		pool.Put(br)
	}()
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
			p.add(head, skipped)
		case len(line) > 0:
			p.add(string(trimEOL(line)), 0)
		}
		if err != nil {
			return // io.EOF, or the pipe was closed after the run
		}
		if !lineBuffered(br) {
			p.signal()
		}
	}
}

// readerPools keeps the stderr readers of ended runs for the next ones, a pool per line limit: each holds
// a buffer of the limit's size (16 KiB by default), and allocating it for every run was, with the stdout
// buffer ([Drain]), a third of the bytes a short deterministic run allocated. Lines leave the buffer as
// copies, so a reader can be reused as soon as Read returns.
var readerPools sync.Map // line limit → *sync.Pool of *bufio.Reader

func readerPool(size int) *sync.Pool {
	if p, ok := readerPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := readerPools.LoadOrStore(size, new(sync.Pool))
	return p.(*sync.Pool)
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

// add queues a line: head, and when skipped bytes of it were cut, a marker saying how many. A line that
// cannot fit in the queue is counted before it costs an encoding: a flood is dropped cheaply.
func (p *StderrPump) add(head string, skipped int) {
	line := head
	if skipped > 0 {
		line += truncationMarker(skipped)
	}
	p.mu.Lock()
	p.tail = append(p.tail, line...)
	p.tail = append(p.tail, '\n')
	if len(p.tail) > 2*errorTailBytes {
		p.tail = append(p.tail[:0], p.tail[len(p.tail)-errorTailBytes:]...)
	}
	full := !p.fits(len(line)) // the encoding is at least as long as the line
	if full {
		p.dropped++
	}
	p.mu.Unlock()
	if full {
		return
	}
	ev := orchestrator.NewEvent(orchestrator.EventStderr, stderrData{Line: line, Truncated: skipped > 0})
	if len(ev.Data) > maxLineJSON {
		// Mostly characters JSON escapes: cut the line to fit as JSON too.
		cut := jsonsize.CutString(head, maxLineJSON-256)
		line = cut + truncationMarker(skipped+len(head)-len(cut))
		ev = orchestrator.NewEvent(orchestrator.EventStderr, stderrData{Line: line, Truncated: true})
	}
	ev.SessionID = p.sessionID
	ev.Time = time.Now().UTC()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fits(len(ev.Data)) {
		p.dropped++
		return
	}
	p.queueDropped()
	p.pending = append(p.pending, ev)
	p.pendingBytes += len(ev.Data)
}

// fits reports whether an event of size bytes fits in the queue; p.mu is held.
func (p *StderrPump) fits(size int) bool {
	return len(p.pending) < MaxPendingLines && p.pendingBytes+size <= MaxPendingBytes
}

func truncationMarker(skipped int) string {
	return fmt.Sprintf(" … [line truncated: %d more bytes]", skipped)
}

// queueDropped queues the stderr_dropped event of the lines dropped since the last one queued, if any; it
// is small, and queued even when the queue is full, so that the count is never lost. p.mu is held.
func (p *StderrPump) queueDropped() {
	if p.dropped == 0 {
		return
	}
	ev := orchestrator.NewEvent(orchestrator.EventStderrDropped, map[string]any{"dropped_lines": p.dropped, "reason": "queue_full"})
	ev.SessionID, ev.Time = p.sessionID, time.Now().UTC()
	p.logger.Warn("stderr lines dropped: the event sink could not keep up", "session_id", p.sessionID, "dropped", p.dropped)
	p.pending = append(p.pending, ev)
	p.pendingBytes += len(ev.Data)
	p.dropped = 0
}

func (p *StderrPump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// deliver hands queued lines to sink until Read has finished and the queue is empty. Emit errors are
// logged, never fatal: losing a log line must not kill the program.
func (p *StderrPump) deliver(ctx context.Context, sink orchestrator.EventSink) {
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

func (p *StderrPump) flush(ctx context.Context, sink orchestrator.EventSink) {
	for {
		p.mu.Lock()
		p.queueDropped()
		n, size := 0, 0
		for n < len(p.pending) && n < maxBatch && (n == 0 || size+len(p.pending[n].Data) <= maxBatchBytes) {
			size += len(p.pending[n].Data)
			n++
		}
		batch := p.pending[:n:n]
		p.pending = p.pending[n:]
		p.pendingBytes -= size
		if len(p.pending) == 0 {
			p.pending = nil
		}
		p.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		if err := sink.Emit(ctx, batch...); err != nil {
			p.logger.Warn("emit stderr events", "session_id", p.sessionID, "events", len(batch), "error", err)
		}
	}
}

// ErrorTail returns the last lines of stderr (at most 2 KiB), trimmed, for Result.Error.
func (p *StderrPump) ErrorTail() string {
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
