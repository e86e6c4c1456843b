//go:build !unix

package deterministic

import (
	"fmt"
	"os"
	"os/exec"
)

// processGroup falls back to the single child process where process groups do not exist: grandchildren are
// not reached. The executor is built and tested for Unix; this keeps the package compiling elsewhere.
type processGroup struct{ p *os.Process }

func prepareGroup(*exec.Cmd) {}

func groupOf(p *os.Process) processGroup { return processGroup{p: p} }

func (g processGroup) terminate() error { return g.kill() }

func (g processGroup) kill() error {
	if g.p == nil {
		return nil
	}
	if err := g.p.Kill(); err != nil && err != os.ErrProcessDone {
		return err
	}
	return nil
}

func exitDescription(ps *os.ProcessState) string {
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}
