package claudecode

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
)

// flagProbeTimeout bounds `claude --help` (it takes seconds where the CLI cannot reach Anthropic's
// servers).
const flagProbeTimeout = 30 * time.Second

// flagCache remembers the optional flags each installed CLI has: its `--help`, read once per executor and
// CLI path. The flags every supported version has are passed without asking.
type flagCache struct {
	mu   sync.Mutex
	help map[string]*helpText
}

type helpText struct {
	once sync.Once
	text string
}

// hasFlag says whether the run's CLI lists flag in its --help. A CLI whose --help cannot be read is taken
// to have no optional flag (and is asked again by no later run of this executor).
func (e *Executor) hasFlag(ctx context.Context, r *run, flag string) bool {
	e.flags.mu.Lock()
	if e.flags.help == nil {
		e.flags.help = map[string]*helpText{}
	}
	h := e.flags.help[r.path]
	if h == nil {
		h = &helpText{}
		e.flags.help[r.path] = h
	}
	e.flags.mu.Unlock()
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flagProbeTimeout)
		defer cancel()
		var out bytes.Buffer
		argv := append(append([]string{e.cfg.ClaudePath}, e.cfg.ExtraArgs...), "--help")
		exit, err := proc.Run(ctx, proc.Spec{
			Path:      r.path,
			Args:      argv,
			Env:       r.env,
			Dir:       r.inv.ProjectDir,
			Stdout:    func(rd io.Reader) { _, _ = proc.Drain(limitWriter{&out, 1 << 20}, rd) },
			StopGrace: time.Second,
			User:      e.cfg.Isolation.User,
			Logger:    r.log,
		})
		if err != nil || !exit.Success() {
			desc := "?"
			if exit != nil {
				desc = exit.Description()
			}
			r.log.Warn("cannot read the Claude Code CLI's --help: its optional flags are not used", "error", err, "exit", desc)
			return
		}
		h.text = out.String()
	})
	return strings.Contains(h.text, flag+" ")
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
