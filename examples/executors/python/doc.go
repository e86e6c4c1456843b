// Package python holds ao-echo-exec, an external executor written in Python (standard library only) that
// speaks the orchestrator's stdin protocol (docs/executor-protocol.md), and the test that runs it end to
// end through executor/process, a runner's gateway and a coordinator. The package has no Go API.
package python
