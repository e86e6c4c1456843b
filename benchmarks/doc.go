// Package benchmarks holds the system-level benchmarks recorded in BENCHMARKS.md: the HTTP path with real
// subprocesses, dispatch latency, stop latency, failure detection and the idle runner's memory. They start
// coordinators, runners and processes, so they live apart from the unit benchmarks of each package. Run
// them with
//
//	go test ./benchmarks -run XXX -bench . -benchtime 1x
package benchmarks
