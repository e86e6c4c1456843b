// Package orchestrator lets programs and AI agents invoke named tasks — agents — through one call,
// invoke(agent_name, parameters) → result, whether the task is an AI agent (driven by a prompt, resumable)
// or a deterministic program (a command with JSON-Schema-typed parameters and structured output).
//
// This package holds the domain and the contracts between the parts. An agent is defined by a
// [Blueprint]; invoking it starts a [Session], and each start or resume of a session is a [Run] queued
// for a runner. A session has an append-only log of [Event] values and ends with a [Result] of the same
// shape for every agent type. A [Coordinator] validates parameters against the agent's schema (every
// error at once, see [ValidationError]), keeps everything in a store (package store) and hands runs to
// runners, which execute them through an [Executor].
//
// The parts live in subpackages: coordinator (the in-process Coordinator), runner (the worker loop),
// httpapi (the HTTP API, and a client that is a Coordinator too), mcpserver (tools for AI agents),
// gateway, store/sqlstore and the executors under executor/. See the examples.
package orchestrator
