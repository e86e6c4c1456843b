package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// ANSI sequences, used only on a terminal that wants colour.
const (
	clearLine = "\r\x1b[K"
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiYell  = "\x1b[33m"
	ansiCyan  = "\x1b[36m"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// liveView shows a run's events as they come, on stderr. On a terminal each line carries the time
// elapsed since the run began, and a status line at the bottom — a spinner, the session's status, the
// elapsed time — is redrawn as time passes and after every line. Elsewhere (a pipe, a file) it writes
// plain lines: stderr lines as the program wrote them, other events as "[type] text", nothing else.
type liveView struct {
	w     io.Writer
	tty   bool
	color bool
	label string // the agent and session, on the status line
	begin time.Time
	now   func() time.Time
	// tick is how often the status line is redrawn. Default 100ms.
	tick time.Duration

	mu      sync.Mutex
	running bool // the status line is being drawn (between start and close)
	status  string
	frame   int
	drawn   bool     // the status line is on the screen
	paused  bool     // a question is on the screen: lines wait in held
	held    []string // lines written while paused
	stop    chan struct{}
	done    chan struct{}
}

func newLiveView(w io.Writer, tty, color bool, label string, begin time.Time) *liveView {
	return &liveView{w: w, tty: tty, color: color && tty, label: label, begin: begin, now: time.Now,
		tick: 100 * time.Millisecond, status: string(orchestrator.SessionPending)}
}

// start begins redrawing the status line (on a terminal).
func (v *liveView) start() {
	if !v.tty {
		return
	}
	v.stop, v.done = make(chan struct{}), make(chan struct{})
	v.mu.Lock()
	v.running = true
	v.redraw()
	v.mu.Unlock()
	go func() {
		defer close(v.done)
		t := time.NewTicker(v.tick)
		defer t.Stop()
		for {
			select {
			case <-v.stop:
				return
			case <-t.C:
				v.mu.Lock()
				v.frame++
				v.redraw()
				v.mu.Unlock()
			}
		}
	}()
}

// close stops the status line and removes it from the screen.
func (v *liveView) close() {
	if v.stop != nil {
		close(v.stop)
		<-v.done
		v.stop = nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.running = false
	if v.drawn {
		io.WriteString(v.w, clearLine)
		v.drawn = false
	}
	v.flushHeld()
}

// setStatus changes the word on the status line (pending, running, reconnecting, stopping, …).
func (v *liveView) setStatus(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.status != s {
		v.status = s
		v.redraw()
	}
}

// event shows one event. Result and run_ended events are left out: the end of the run is summed up once
// it has ended.
func (v *liveView) event(ev *orchestrator.Event) {
	switch ev.Type {
	case orchestrator.EventResult, orchestrator.EventRunEnded:
		return
	case orchestrator.EventRunStarted:
		v.setStatus(string(orchestrator.SessionRunning))
	}
	text := describeEvent(ev)
	if !v.tty {
		if ev.Type != orchestrator.EventStderr {
			text = "[" + ev.Type + "] " + text
		}
		v.writeLines(text, "")
		return
	}
	style := ""
	switch ev.Type {
	case orchestrator.EventStderr, orchestrator.EventMessage, orchestrator.EventProgress:
	default:
		style = ansiDim
	}
	v.writeLines(text, style)
}

// note shows a message from ao itself.
func (v *liveView) note(text string) {
	if !v.tty {
		v.writeLines("ao: "+text, "")
		return
	}
	v.writeLines(text, ansiYell)
}

// writeLines writes text, one line per line of it, above the status line.
func (v *liveView) writeLines(text, style string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	stamp := formatElapsed(v.now().Sub(v.begin))
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if !v.tty {
			b.WriteString(line)
			b.WriteByte('\n')
			continue
		}
		line = sanitize(line)
		if i > 0 {
			stamp = ""
		}
		b.WriteString(v.paint(ansiDim, fmt.Sprintf("%7s", stamp)))
		b.WriteString("  ")
		b.WriteString(v.paint(style, line))
		b.WriteByte('\n')
	}
	if v.paused {
		v.held = append(v.held, b.String())
		return
	}
	if v.drawn {
		io.WriteString(v.w, clearLine)
		v.drawn = false
	}
	io.WriteString(v.w, b.String())
	v.redraw()
}

// pause takes the status line off the screen and holds new lines back, for a question; resume puts
// them out.
func (v *liveView) pause() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.paused = true
	if v.drawn {
		io.WriteString(v.w, clearLine)
		v.drawn = false
	}
}

func (v *liveView) resume() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.flushHeld()
	v.redraw()
}

func (v *liveView) flushHeld() {
	v.paused = false
	for _, s := range v.held {
		io.WriteString(v.w, s)
	}
	v.held = nil
}

// redraw draws the status line; v.mu is held.
func (v *liveView) redraw() {
	if !v.running || v.paused {
		return
	}
	spin := spinnerFrames[v.frame%len(spinnerFrames)]
	color := ansiCyan
	if v.status != string(orchestrator.SessionRunning) {
		color = ansiYell
	}
	line := clearLine + v.paint(color, spin+" "+v.status) + " " + formatElapsed(v.now().Sub(v.begin)) +
		v.paint(ansiDim, "  "+v.label)
	io.WriteString(v.w, line)
	v.drawn = true
}

func (v *liveView) paint(style, s string) string {
	if !v.color || style == "" || s == "" {
		return s
	}
	return style + s + ansiReset
}

// formatElapsed shows a duration the way the status line does: 40ms, 0.4s, 12.3s, 2m05s, 1h02m.
func formatElapsed(d time.Duration) string {
	switch {
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%dms", max(d.Milliseconds(), 0))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
