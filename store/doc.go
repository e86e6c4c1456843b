// Package store is the contract between a coordinator and its durable state: the [Store] interface, the
// records only a store keeps ([Agent], [Webhook], [IdempotencyKey]), and the parameters and guarded
// updates its methods take. The domain types a store holds (runs, sessions, events, schedules) are the
// root package's; this package adds what only the coordinator and the stores need, so that the root reads
// as the product's vocabulary.
//
// Package sqlstore implements Store on SQLite and PostgreSQL; package storetest is the conformance suite
// every implementation runs (storetest.Run). A program that embeds a coordinator opens a store and hands
// it to coordinator.New; it rarely calls a Store method itself.
//
// # Rules every implementation follows
//
//   - The store is the truth: the coordinator keeps nothing in memory that a restart could lose.
//   - Missing records are [orchestrator.ErrNotFound]; uniqueness violations and lost guards are
//     [orchestrator.ErrConflict]. Native errors (sql.ErrNoRows, a unique violation) never escape.
//   - Guarded updates (Update*, Claim*) change a record only when its current status is one of the
//     expected ones, in one atomic statement; concurrent callers can never both win.
//   - [Store.InTx] runs a function in one transaction: everything it did through the transaction's Store
//     is committed, or nothing is. Inside it, only that Store may be used.
//   - Times are stored with at least microsecond precision and returned in UTC.
//   - Returned records are fresh copies the caller may modify.
//   - Lists are ordered oldest first (by creation time, then id) unless a filter says otherwise.
//   - Deleting a missing record is ErrNotFound; a cursor (AfterID) naming a record that no longer exists
//     is ErrNotFound.
//   - JSON payloads come back byte for byte as stored.
//
// # Optional capabilities
//
// A store may implement more than Store; the coordinator uses what it finds. [BriefUpdater] and
// [BatchBriefUpdater] make a run's end cheaper, [WriteChecker] lets the HTTP API's readiness check prove
// the store can still write, and a [Notifier] carries wake-ups between coordinator replicas sharing one
// database.
package store
