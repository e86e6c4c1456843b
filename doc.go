// Package orchestrator lets programs and AI agents invoke named tasks — agents — through one call,
// invoke(agent_name, parameters) → result, whether the task is an AI agent (driven by a prompt, resumable)
// or a deterministic program (a command with JSON-Schema-typed parameters and structured output).
//
// # Concepts
//
// An agent is defined by a [Blueprint]: its name, type, description, parameters_schema and output_schema,
// and how it runs (a command for deterministic agents, a system prompt for AI agents). Invoking an agent
// starts a [Session]; each start or resume of a session is a [Run] queued for a runner. Sessions have an
// append-only, sequence-numbered log of [Event] values and end with a [Result] of the same shape for every
// agent type: result_type, result_text, result_data, exit_code, error.
//
// A [Coordinator] accepts runs, validates parameters against the agent's schema (every error at once, with
// JSON paths — see [ValidationError]), stores everything in a [Store] and hands runs to runners.
// [LocalCoordinator] is the in-process implementation; package httpapi serves it over HTTP and provides a
// client that implements the same interface, so everything that talks to a Coordinator works embedded or
// remote.
//
// A [Runner] registers with a coordinator, announces the deterministic blueprints it owns, heartbeats,
// long-polls for work (it is woken the moment a run it can take exists) and executes runs through an
// [Executor]: executor/deterministic runs a command as a subprocess, executor/gofunc runs Go functions,
// executor/claudecode runs AI agents with the Claude Code CLI, executor/process runs any program that
// speaks the stdin protocol, and other executors plug in through the same interface. The processes a run
// starts reach the coordinator through the runner's gateway (package gateway) with a token scoped to the
// run; AI agents reach every agent through MCP (package mcpserver). Runner is a concrete type rather than an
// interface: there is one worker loop, and executors are where implementations differ.
//
// A run's metadata.env may set only the environment variables its blueprint lists in allowed_env, and
// never one that changes which code programs run ([Blueprint.CheckRunEnv]); the executors keep the
// runner's credentials from the processes they start, and may run them as another user (package
// executor/isolation). A runner cuts a result larger than the coordinator accepts
// ([Registration].MaxResultBytes) to fit, and says so ([EventOutputTruncated]).
//
// # Lifecycles
//
// A run moves pending → claimed → running → completed | failed | stopped; a session pending → running →
// completed | failed | stopped, and an AI session becomes pending again when it is resumed. Each transition
// is one guarded store update, so a run is never claimed twice and concurrent actors cannot both win.
// Deterministic sessions cannot be resumed ("Deterministic agents do not support resumption").
//
// Runners that stop heartbeating become stale (no new claims) and then offline: their blueprints are
// removed and the runs they held fail with "Runner disconnected during execution". When a session started
// in async_callback mode ends, a callback is written in the same transaction, and its parent AI session is
// resumed with the child's result — at once if the parent is idle, else together with every other callback
// when the parent's current run ends. Callers outside the system may give a callback_url instead: the
// outcome is POSTed there, signed as Standard Webhooks specifies (receivers verify it with package
// [github.com/agentorchestrator/orchestrator/webhook]) and retried; deliveries reach public addresses
// only, unless [CoordinatorConfig].WebhookAllowHosts opens others.
//
// # Embedding
//
// A Go service embeds a coordinator and a runner in one process with a store from store/sqlstore (SQLite by
// default, PostgreSQL for several coordinator replicas); see the package examples.
package orchestrator
