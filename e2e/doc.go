// Package e2e holds the end-to-end tests: they build the reference binaries (examples/coordinator,
// examples/runner, examples/agents/...) and the helper programs under e2e/internal, run them as separate
// processes on 127.0.0.1 — each test its own coordinator, SQLite file, runners and blueprint folders — and
// drive them through the HTTP API only.
//
//	api_test.go        the wire contract: listing and schemas, the validation 400, runs to their
//	                   results (testagent, ao-file-stats, the python echo-json), stderr events while
//	                   a command runs (paged and SSE), name@runner_id collisions, resume refused, auth
//	lifecycle_test.go  real-process lifecycles: a runner SIGKILLed mid-run, a coordinator SIGKILLed and
//	                   restarted, a runner re-registering with a coordinator that forgot it, stop reaching
//	                   a whole process tree, parent callbacks, graceful runner shutdown
//	callback_ai_test.go  the callback path with a Claude Code session: a parent run by the claude-code
//	                   executor starts a deterministic child over MCP (through the runner's gateway) in
//	                   async_callback mode, and is resumed (--resume) with the child's structured result
//	claude_cases_test.go  the Claude Code executor with fakeclaude on a bad day: MCP servers failed or
//	                   pending (or optional), --strict-mcp-config and the allowed servers, denied tools,
//	                   usage (one event per API message), API failures and their error codes, root
//	claude_real_test.go  the real claude CLI ($ORCHESTRATOR_TEST_CLAUDE, or claude on PATH; .ci/run
//	                   installs the version e2e/testdata/claude-cli pins) against a stand-in Anthropic API
//	                   (internal/testkit/fakeanthropic): a turn, a resume, an MCP tool call through the
//	                   gateway, a 529 and a resume after it, a server that cannot start; it skips without
//	                   a CLI, except under CI
//	ao_test.go         the ao command line against the real binaries: ao run following a run live (its
//	                   stderr lines before it ends), exit codes, invalid parameters, logs -f (also across a
//	                   coordinator restart), stop, Ctrl-C, --json for every command, and ao run on a
//	                   pseudo-terminal (spinner, live lines)
//	openapi_test.go    every answer the api helper receives is checked against docs/openapi.yaml (its route,
//	                   status and body schema); TestOpenAPIEveryRoute calls every documented route with a
//	                   success and an error
//	harness_test.go    processes, ports, the API helpers; procfs_test.go finds what a test left behind
//	internal/testagent   the deterministic agent the tests run (its flags are the blueprint's parameters)
//	internal/echorunner  an AI-agent runner (runner.Runner on httpapi.Client) that records prompts
//	internal/fakeclaude  a stand-in for the Claude Code CLI: stream-json out, MCP calls, records its runs
//
// Every process runs in its own process group with a per-test marker in its environment; a test's cleanup
// SIGKILLs its processes, then fails if anything carrying its marker is still alive. The tests need Linux
// (process groups, /proc); elsewhere they skip. Run them with
//
//	go test -race -count=1 ./e2e/...
//
// When the test binary is built with -race, so are the binaries it starts, and a data race reported by any
// of them fails the test that started it.
package e2e
