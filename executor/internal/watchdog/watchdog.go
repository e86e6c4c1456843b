// Package watchdog ends the programs a process started when that process dies, however it dies.
//
// The executors run each program in a process group of its own, and end the group when the run ends. Were
// the process that runs them — a runner, or any program that embeds an executor — killed outright
// (SIGKILL, the OOM killer, a crash), nothing would end them: they and their children would live on,
// adopted by init. So that process has a watchdog, started by [Watch]: its own executable run again, which
// this package's initialization recognises and turns into the watchdog before any of the program's own
// code runs. The watchdog holds the read end of a pipe whose write end only its owner holds (never
// inherited: O_CLOEXEC); the kernel closes that end when the owner dies, however it dies. Reading end of
// file, the watchdog ends every process that carries its owner's mark ([EnvOwner], which the executors set
// in every program's environment, and which the program's children inherit) — with its process group, when
// it leads one — by SIGTERM, then SIGKILL after [Grace], and exits. A run costs nothing more than that one
// environment variable: the watchdog learns of no run.
//
// When a watchdog starts, it also ends the leftovers of owners that no longer run and whose watchdogs are
// gone too (a runner killed with its watchdog, say), so that a runner that starts again cleans up what its
// previous incarnation left; an owner that has just died is left to its own watchdog and its grace.
//
// A process is ended only when, read through a pidfd (which refers to that one process, whatever happens to
// its pid), its own environment carries the mark of a dead owner of this pid namespace — or, for the
// watchdog's owner, of that owner. A reused pid, a process that never had the mark, and the processes of a
// runner that lives are never signalled. An owner is known by its pid namespace, pid and start time, so a
// runner's pid taken by another process does not keep its leftovers alive, and a process this one cannot see
// (another pid namespace, hidden by hidepid) is never taken for dead. What escapes: a process that cleared
// its environment and left its leader's group, and one the runner's user may not read or signal.
//
// The package imports nothing outside the standard library, so that it is initialized before nearly every
// other package of the program (Go initializes the first ready package by import path), and a watchdog
// costs little memory: about 2 MB of its own, its code shared with its owner. It works on Linux, where
// /proc gives the marks; elsewhere [Watch] does nothing.
package watchdog

import (
	"log/slog"
	"sync"
	"time"
)

// EnvOwner is set in the environment of every program the executors start ([Env]), and inherited by what
// the program starts: it names the process that started it.
const EnvOwner = "AGENT_ORCHESTRATOR_OWNER"

// envWatchdog, in a process's environment, makes it the watchdog of the owner its value names (see
// [Watch]). It is checked in this package's initialization, before the program's own code runs.
const envWatchdog = "AGENT_ORCHESTRATOR_WATCHDOG"

// Grace is how long the processes of a runner that died have between SIGTERM and SIGKILL: the executors'
// default stop grace.
const Grace = 5 * time.Second

var (
	watchMu  sync.Mutex
	watched  bool // a watchdog runs for this process
	watchErr bool // the watchdog could not start, or died too often: runs go on without one
	restarts int
)

// maxWatchdogRestarts bounds how many times a watchdog that died is started again.
const maxWatchdogRestarts = 3

// Watch makes sure this process has a watchdog (on Linux; elsewhere it does nothing), starting one if it
// has none or if its watchdog died. The executors that run programs call it when they are created, and
// before each program they start. An error is logged once: the runs go on without a watchdog.
func Watch(log *slog.Logger) {
	watchMu.Lock()
	defer watchMu.Unlock()
	if watched || watchErr {
		return
	}
	err := startWatchdog(func() {
		watchMu.Lock()
		defer watchMu.Unlock()
		watched = false
		if restarts++; restarts > maxWatchdogRestarts {
			watchErr = true
			if log != nil {
				log.Warn("the watchdog keeps exiting; should this process be killed, the programs it started will outlive it")
			}
		}
	})
	if err != nil {
		watchErr = true
		if log != nil {
			log.Warn("no watchdog: should this process be killed, the programs it started will outlive it", "err", err)
		}
		return
	}
	watched = true
}
