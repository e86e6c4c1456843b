//go:build !linux

package benchmarks

import "syscall"

// dieWithTest has nothing to ask for where there is no parent-death signal: the cleanups stop the child.
func dieWithTest(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
