//go:build !unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// group falls back to the single child process where process groups do not exist: grandchildren are not
// reached. The executors are built and tested for Unix; this keeps them compiling elsewhere.
type group struct{ p *os.Process }

func prepareGroup(*exec.Cmd) {}

// runAs refuses to switch users: only Unix systems can.
func runAs(_ *exec.Cmd, u *isolation.User) error {
	if u != nil {
		return errors.New("running programs as another user is supported on Unix only")
	}
	return nil
}

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

// OpenOutput opens a file a program wrote for its executor to read, when it is a regular file.
func OpenOutput(path string, _ *isolation.User) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.Open(path)
}
