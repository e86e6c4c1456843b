// Package orchestrator lets programs and AI agents invoke named tasks — agents — through one call,
// invoke(agent_name, parameters) → result, whether the task is an AI agent (driven by a prompt, resumable)
// or a deterministic program (a command or a Go function with JSON-Schema-typed parameters and structured
// output).
//
// This package holds the domain and the contracts between the parts; the parts themselves live in
// subpackages, and a Go service embeds any of them in its own process. The binaries under examples/ are
// thin wiring around the same packages. The repository's docs/ directory has the reference: the HTTP API,
// MCP, lifecycles, executors, operations and the decisions behind them.
//
// # Concepts
//
// An agent is defined by a [Blueprint]: its name, its [AgentType] ([AgentTypeDeterministic] or
// [AgentTypeAgent]), its parameters schema and output schema, and for a deterministic agent its command,
// for an AI agent its system prompt, MCP servers and executor configuration. Deterministic agents belong to
// the runner that announces them; AI agents live in the coordinator's registry.
//
// Invoking an agent starts a [Session]. Each start or resume of a session is a [Run], queued for a runner
// that can execute it: the runner that owns the agent, or one that matches the run's [Demands] (host,
// project directory, executor, tags). A session has an append-only log of [Event] values and ends with a
// [Result] of the same shape for every agent type: result_type, result_text, result_data, exit_code and
// error. An AI session can be resumed with a new prompt; a deterministic one cannot.
//
// A [Coordinator] is what clients, runners and tools call. It validates parameters against the agent's
// schema (every error at once), keeps every change in a store — the store is the truth, so a coordinator
// can restart, or several can share one PostgreSQL database — and hands runs to runners, which execute
// them through an [Executor].
//
// # Start here
//
// The identifiers an embedder needs, in the order a program meets them:
//
//   - sqlstore.New (package store/sqlstore) opens the store: a SQLite file, ":memory:", or a postgres://
//     URL.
//   - coordinator.New, with coordinator.Config, builds the in-process [Coordinator]; its Start runs the
//     background work (runner liveness, runs no runner can take, callbacks, webhook deliveries,
//     schedules) until Stop.
//   - gofunc.NewTask and gofunc.New (package executor/gofunc) make Go functions agents; deterministic.New
//     (package executor/deterministic) runs the commands of blueprints read with [LoadBlueprints].
//   - runner.New, with runner.Config, builds a runner over any [Coordinator]; Run registers it, heartbeats
//     and executes runs until its context ends, and Registered says when it is ready.
//   - [Coordinator.StartRun] with [StartRunParams] starts or resumes a session, and answers with a
//     [StartRunResult]; [ModeSync] waits for the run's [Result].
//   - [Coordinator.CreateAgent] registers an AI agent's [Blueprint]; a runner without blueprints serves
//     such agents.
//   - [ValidationError] lists every parameter that does not match the agent's schema; [ErrorCode] gives
//     any error's machine code.
//   - [Executor] and [EventSink] are what an executor of your own implements and emits to.
//   - httpapi.NewHandler serves a [Coordinator] over HTTP; httpapi.NewClient is a [Coordinator] over HTTP,
//     so a runner or a tool works the same embedded or remote.
//   - orchestratortest.New gives your own tests an in-memory coordinator that records the runs it starts.
//
// # Embedding
//
// A coordinator and a runner in one process, a Go function made an agent, and a synchronous call (the
// package's Example is this program, run with the tests):
//
//	store, err := sqlstore.New(ctx, ":memory:", nil)
//	...
//	coord, err := coordinator.New(coordinator.Config{Store: store})
//	...
//	if err := coord.Start(ctx); err != nil { ... }
//	defer coord.Stop()
//
//	add := gofunc.NewTask("add", "Adds two integers", func(ctx context.Context, p AddParams) (Sum, error) {
//		return Sum{Sum: p.A + p.B}, nil
//	})
//	funcs := gofunc.New(add)
//	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: funcs, Blueprints: funcs.Blueprints()})
//	...
//	go worker.Run(runCtx)
//	<-worker.Registered()
//
//	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
//		AgentName: "add", Mode: orchestrator.ModeSync, Parameters: json.RawMessage(`{"a": 2, "b": 3}`),
//	})
//	fmt.Println(res.Status, string(res.Result.ResultData)) // completed {"sum":5}
//
// The parameters schema of "add" is derived from AddParams. The same coordinator serves the HTTP API, the
// dashboard, the MCP endpoint and Prometheus metrics from handlers of packages httpapi, ui, mcpserver and
// prommetrics; a program that does not mount one does not link it.
//
// # Executors
//
// An [Executor] performs one run: it receives an [Invocation] (the run's ids, the agent's blueprint, the
// validated parameters with their defaults, the project directory, the output schema, the variables to
// give every process it starts), sends events to an [EventSink] while the run goes on, and returns the
// [Result]. An exit code other than 0 or a non-empty error fails the run; a non-nil error from Execute
// means the executor could not do its job at all. When its context ends (the run was stopped, or the
// runner is shutting down) it kills what it started and returns promptly.
//
// The module has four, each under executor/: deterministic (a blueprint's command as a subprocess, its
// parameters as flags, never through a shell), gofunc (typed Go functions in-process), process (any
// program speaking the stdin protocol of docs/executor-protocol.md) and claudecode (the Claude Code CLI,
// headless). Every one passes the conformance table of executor/executortest, and an executor of your own
// should too. A runner has one executor. With blueprints it owns those deterministic agents; without,
// it takes the runs of the coordinator's registry agents whose demands it matches.
//
// # Stores
//
// The coordinator keeps sessions, runs, events, agents, runners, schedules, callbacks and webhook
// deliveries in a store: the contract is package github.com/agentorchestrator/orchestrator/store, and
// store/sqlstore implements it on SQLite (pure Go, the default) and PostgreSQL. Every transition is a
// guarded update that names the state the row must be in, so a run is never claimed twice and two
// coordinator replicas never both act on the same run. The conformance suite in store/storetest runs
// unchanged against both databases; a store of your own should pass it.
//
// # Modes
//
// [StartRunParams].Mode says how the caller learns the outcome. [ModeSync] waits for the run to end and
// answers with its result. [ModeAsyncPoll], the default, answers at once with the session's and run's
// ids: [Coordinator.WaitRun], [Coordinator.WaitSession] and [Coordinator.ListEvents] long-poll for what
// follows. [ModeAsyncCallback] resumes the parent session (ParentSessionID) with the child's result when
// the child ends, so an AI agent can start others and carry on; callers outside the system give a
// CallbackURL instead and receive a signed webhook. [StartRunParams].Type is [RunTypeStart] or
// [RunTypeResume]; only AI sessions can be resumed.
//
// # Errors
//
// Every error the library returns for a caller's mistake or a missing record wraps one of the sentinels
// [ErrNotFound], [ErrConflict], [ErrInvalid], [ErrInvalidParameters], [ErrUnauthorized], [ErrForbidden]
// and [ErrTooLarge]: check them with errors.Is. An [*Error] also carries a stable machine code (such as
// "agent_not_found") that [ErrorCode] returns, and the HTTP API and the MCP server send as the "error"
// field of their answers, with the status the sentinel maps to. Parameters that do not match an agent's
// schema are a [*ValidationError], which matches [ErrInvalidParameters] and [ErrInvalid] and lists every
// failure as a [FieldError] with its JSON path, so that an AI caller can correct its input in one step.
// Nothing is created when a request is refused.
package orchestrator
