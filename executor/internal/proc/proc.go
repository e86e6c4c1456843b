// Package proc runs the programs the executors under executor/ start — a deterministic command, an
// external executor (executor/process), the Claude Code CLI (executor/claudecode) — the same way: executed
// directly (never through a shell), leading their own process group, their stdin written once and closed,
// their stdout and stderr consumed while they run, and stopped as a group (SIGTERM, a grace period, then
// SIGKILL) when the run's context ends or its timeout expires. Whatever way a program ends, its group gets
// SIGKILL once it has exited, so no grandchild outlives the run. Should the process that runs them be killed
// outright, its watchdog ends them (package watchdog).
//
// [StderrPump] turns a program's stderr into stderr events while it runs.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/executor/internal/watchdog"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// PipeDrainTimeout is how long [Run] waits, after the process group is gone, for the pipes to reach EOF.
// Only a process that escaped the group (setsid) can hold them open that long; the pipes are then closed
// under it so the run still ends.
const PipeDrainTimeout = 2 * time.Second

// Spec describes one program run.
type Spec struct {
	// Path is the executable (see [LookPath]); Args is the full argv, Args[0] as the program should see it.
	Path string
	Args []string
	// Env is the whole environment ([Environ]); Dir the working directory (empty: the runner's).
	Env []string
	Dir string
	// Stdin is written to the program's stdin, which is then closed. A program that exits without reading
	// it is fine.
	Stdin []byte
	// Stdout and Stderr consume the program's output; each runs in its own goroutine until its reader
	// reaches EOF (or fails: the pipe is closed under it when an escaped process holds it open). They must
	// keep reading, or the program blocks on a full pipe. Nil discards the output.
	Stdout, Stderr func(io.Reader)
	// Timeout, when positive, stops the program after that long ([TimedOut]).
	Timeout time.Duration
	// StopGrace is how long a stopped program has between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// User, when set, is the user the program runs as (isolation.Config.User): its uid, gid and groups.
	User *isolation.User
	// Logger receives diagnostics. Nil discards them.
	Logger *slog.Logger
}

// End says how a program's run ended.
type End int

const (
	// Exited: the program exited by itself (whatever its status).
	Exited End = iota
	// Stopped: the context ended; the program was terminated (or never started).
	Stopped
	// TimedOut: Spec.Timeout expired; the program was terminated.
	TimedOut
)

// Exit is the outcome of [Run].
type Exit struct {
	End End
	// State is the program's process state; nil when it never started (the context had ended).
	State *os.ProcessState
	// Pid is the program's process id (and process group id), 0 when it never started.
	Pid int
}

// Code returns the exit status: the program's own when it exited by itself, -1 when it was stopped, timed
// out, or killed by a signal.
func (x *Exit) Code() int {
	if x.End != Exited || x.State == nil {
		return -1
	}
	return x.State.ExitCode()
}

// Success reports whether the program exited by itself with status 0.
func (x *Exit) Success() bool { return x.Code() == 0 }

// Description says how an unsuccessful program ended: "exit code 3", "killed by signal 9 (killed)",
// "stopped", "timed out".
func (x *Exit) Description() string {
	switch {
	case x.End == Stopped:
		return "stopped"
	case x.End == TimedOut:
		return "timed out"
	case x.State == nil:
		return "did not run"
	}
	return describe(x.State)
}

// Run starts spec's program and waits until it has ended and its output has been consumed. It returns an
// error only when the program could not be started; every outcome of a started program is an [Exit].
// When ctx has already ended, nothing is started and the Exit says Stopped.
func Run(ctx context.Context, spec Spec) (*Exit, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("proc: empty argv")
	}
	if ctx.Err() != nil {
		return &Exit{End: Stopped}, nil
	}
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Own pipes rather than cmd.StdoutPipe & co.: the reading goroutines must be able to outlive Wait (a
	// grandchild may still hold the write ends) and be ended by closing the read ends.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	defer closeAll(inW, outR, errR)

	watchdog.Watch(log)
	cmd := exec.Command(spec.Path, spec.Args[1:]...)
	cmd.Args[0] = spec.Args[0]
	cmd.Env = withOwner(spec.Env)
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	prepareGroup(cmd)
	startErr := runAs(cmd, spec.User)
	if startErr == nil {
		startErr = cmd.Start()
	}
	closeAll(inR, outW, errW) // the child has its copies
	if startErr != nil {
		return nil, startErr
	}
	grp := groupOf(cmd.Process)
	x := &Exit{Pid: cmd.Process.Pid}
	log.Debug("program started", "pid", x.Pid, "argv", spec.Args)

	var pipes sync.WaitGroup
	pipes.Go(func() { consume(outR, spec.Stdout) })
	pipes.Go(func() { consume(errR, spec.Stderr) })
	pipes.Go(func() { writeStdin(inW, spec.Stdin, log) })

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		x.End = Stopped
		waitErr = terminate(grp, waited, spec.StopGrace, log)
	case <-timeout:
		x.End = TimedOut
		waitErr = terminate(grp, waited, spec.StopGrace, log)
	}
	// The leader is gone; nothing else of its group may outlive the run.
	if err := grp.kill(); err != nil {
		log.Warn("kill process group after exit", "error", err)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		log.Warn("wait for program", "error", waitErr)
	}
	x.State = cmd.ProcessState

	drained := make(chan struct{})
	go func() { pipes.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(PipeDrainTimeout):
		log.Warn("a process outside the run's process group holds its pipes open; closing them")
		closeAll(inW, outR, errR)
		<-drained
	}
	log.Debug("program ended", "pid", x.Pid, "end", x.End, "exit_code", x.Code())
	return x, nil
}

// terminate stops the process group: SIGTERM, then SIGKILL if the leader has not exited within grace. It
// returns Wait's result.
func terminate(grp group, waited <-chan error, grace time.Duration, log *slog.Logger) error {
	if err := grp.terminate(); err != nil {
		log.Warn("terminate process group", "error", err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
	}
	if err := grp.kill(); err != nil {
		log.Warn("kill process group", "error", err)
	}
	return <-waited
}

// copyBuffers are the buffers [Drain] copies through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Drain copies r to w until EOF or an error, through a pooled buffer. io.Copy from a pipe (an *os.File)
// allocates a 32 KiB buffer each time, for output that is often a few bytes.
func Drain(w io.Writer, r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// Hide the file's WriteTo, which io.CopyBuffer would prefer to the buffer given.
	return io.CopyBuffer(w, struct{ io.Reader }{r}, *buf)
}

func consume(r io.Reader, fn func(io.Reader)) {
	if fn == nil {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	fn(r)
	// Whatever fn left unread must not block the program.
	_, _ = io.Copy(io.Discard, r)
}

// writeStdin writes payload and closes stdin. A program that exits without reading it makes the write fail
// with EPIPE; that is not an error of the run.
func writeStdin(w *os.File, payload []byte, log *slog.Logger) {
	if len(payload) > 0 {
		if _, err := w.Write(payload); err != nil && !isBrokenPipe(err) && !errors.Is(err, os.ErrClosed) {
			log.Debug("write stdin", "error", err)
		}
	}
	_ = w.Close()
}

// withOwner returns env (nil: this process's) with this process's mark ([watchdog.EnvOwner]) last, so that
// no layer can set it: the watchdog finds what this process started by it.
func withOwner(env []string) []string {
	mark := watchdog.Env()
	if mark == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	return append(env[:len(env):len(env)], mark)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// Environ layers a program's environment: the runner's as iso lets programs have it (iso.Environ: without
// the runner's credentials, with the user's HOME), then each layer in turn. Later layers override earlier
// ones in place, so each name appears once; a layer's names are applied in sorted order.
func Environ(iso isolation.Config, layers ...map[string]string) []string {
	env := iso.Environ()
	index := make(map[string]int, len(env))
	for i, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			index[k] = i
		}
	}
	for _, layer := range layers {
		keys := make([]string, 0, len(layer))
		for k := range layer {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv := k + "=" + layer[k]
			if i, ok := index[k]; ok {
				env[i] = kv
				continue
			}
			index[k] = len(env)
			env = append(env, kv)
		}
	}
	return env
}

// Lookup returns the value of name in env (the last one, should it appear twice).
func Lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// LookPath finds file in pathList (a PATH value: the run's own, which exec.LookPath would not use). A
// name containing a slash is used as it is. Relative PATH entries are skipped, as exec.LookPath refuses
// them (exec.ErrDot): they would make the program depend on the working directory.
func LookPath(file, pathList string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}

// GiveTo makes u the owner of paths (not following symbolic links), so that a program running as u can
// use the temporary files an executor prepares for it. With a nil u it does nothing.
func GiveTo(u *isolation.User, paths ...string) error {
	if u == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(u.UID), int(u.GID)); err != nil {
			return fmt.Errorf("give %s to %s: %w", p, u, err)
		}
	}
	return nil
}
