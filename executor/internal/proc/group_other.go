//go:build !unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// group falls back to the single child process where process groups do not exist: grandchildren are not
// reached. The executors are built and tested for Unix; this keeps them compiling elsewhere.
type group struct{ p *os.Process }

func prepareGroup(*exec.Cmd) {}

func groupOf(p *os.Process) group { return group{p: p} }

func (g group) terminate() error { return g.kill() }

func (g group) kill() error {
	if g.p == nil {
		return nil
	}
	if err := g.p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func describe(ps *os.ProcessState) string {
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}

func isBrokenPipe(error) bool { return false }
