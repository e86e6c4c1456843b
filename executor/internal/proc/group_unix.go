//go:build unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// group is the child's process group: the child leads a new group (Setpgid), so every process it starts
// without leaving the group can be signalled at once, and none outlives the run.
type group struct{ pgid int }

func prepareGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// runAs makes the program run as u (nil: the runner's own user), with u's groups.
func runAs(cmd *exec.Cmd, u *isolation.User) error {
	if u == nil {
		return nil
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: slices.Clone(u.Groups)}
	return nil
}

func groupOf(p *os.Process) group { return group{pgid: p.Pid} }

// terminate asks the whole group to stop (SIGTERM).
func (g group) terminate() error { return g.signal(syscall.SIGTERM) }

// kill ends the whole group (SIGKILL). It is safe after the leader was reaped: the kernel keeps a process
// group id allocated while any member lives, so -pgid reaches the same group or nothing (ESRCH).
func (g group) kill() error { return g.signal(syscall.SIGKILL) }

func (g group) signal(sig syscall.Signal) error {
	if g.pgid <= 0 {
		return nil
	}
	if err := syscall.Kill(-g.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d with %v: %w", g.pgid, sig, err)
	}
	return nil
}

// describe says how a process that exited unsuccessfully ended.
func describe(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}

func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

// OpenOutput opens a file a program wrote for its executor to read (executor/process's result file). The
// program chose what is at that path, so it is opened only when it is a regular file — not a symbolic
// link, which could point the runner at any file it may read, nor a FIFO or device, which could block it —
// and, when the program ran as u, only when u owns it: a hard link to someone else's file is refused.
func OpenOutput(path string, u *isolation.User) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case u != nil:
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != u.UID {
			err = fmt.Errorf("%s belongs to uid %d, not to %s", path, st.Uid, u)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
