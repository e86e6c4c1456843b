//go:build linux && race

package e2e

// raceEnabled: the test binary has the race detector, so the binaries under test get it too.
const raceEnabled = true
