package benchmarks

import "syscall"

// dieWithTest asks the kernel to SIGKILL the child when the test binary dies without its cleanups (a
// -timeout panic, a signal), so that an interrupted run leaves no program behind.
func dieWithTest(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
