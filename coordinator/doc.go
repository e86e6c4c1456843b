// Package coordinator is the in-process [orchestrator.Coordinator]: it validates requests, keeps every
// state change in a [store.Store] and hands runs to runners, waking parked runners and waiters the
// moment something they wait for happens. Package httpapi serves it over HTTP; package runner executes
// what it hands out.
//
// # Lifecycles
//
// A run moves pending → claimed → running → completed | failed | stopped; a session pending → running →
// completed | failed | stopped, and an AI session becomes pending again when it is resumed. Each
// transition is one guarded store update, so a run is never claimed twice and concurrent actors cannot
// both win. Deterministic sessions cannot be resumed ("Deterministic agents do not support resumption").
//
// Runners that stop heartbeating become stale (no new claims) and then offline: their blueprints are
// removed and the runs they held fail with "Runner disconnected during execution". When a session started
// in async_callback mode ends, a callback is written in the same transaction, and its parent AI session is
// resumed with the child's result — at once if the parent is idle, else together with every other
// callback when the parent's current run ends. Callers outside the system may give a callback_url
// instead: the outcome is POSTed there, signed as Standard Webhooks specifies (receivers verify it with
// package [github.com/agentorchestrator/orchestrator/webhook]) and retried; deliveries reach public
// addresses only, unless [Config].WebhookAllowHosts opens others.
//
// # Replicas
//
// Several Coordinators may share one PostgreSQL store: every state change is a guarded store update, so
// for each transition exactly one of them wins, and a [Config].Notifier carries their wake-ups to each
// other.
package coordinator
