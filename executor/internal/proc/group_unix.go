//go:build unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
