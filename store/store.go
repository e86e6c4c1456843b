package store

import (
	"context"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// Store is the coordinator's durable state: runners, agents, sessions, runs, events, callbacks, webhooks,
// idempotency keys and schedules. It is the truth: the coordinator keeps nothing in memory that a restart
// could lose. Every implementation follows the rules of the package documentation and passes the
// conformance suite in package storetest.
type Store interface {
	// InTx runs fn in one transaction: either everything fn did through tx is committed, or nothing is.
	// Calling InTx on a tx runs fn in the same transaction. Inside fn use only tx: on SQLite the
	// transaction holds the store's only write connection, so a call through the outer Store waits for fn
	// to finish and never returns.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Store) error) error

	// PutRunner inserts the runner or replaces the record with the same ID. A new record has no secret
	// hash; a replaced one keeps its own.
	PutRunner(ctx context.Context, r *orchestrator.RunnerInfo) error
	GetRunner(ctx context.Context, id string) (*orchestrator.RunnerInfo, error)
	ListRunners(ctx context.Context, f RunnerFilter) ([]*orchestrator.RunnerInfo, error)
	// TouchRunner records a heartbeat: sets LastHeartbeatAt and, when the runner was stale, makes it online.
	// An unknown or offline runner is ErrNotFound (it must register again).
	TouchRunner(ctx context.Context, id string, at time.Time) (*orchestrator.RunnerInfo, error)
	// UpdateRunnerStatus moves a runner to status when its current status is one of from
	// (and, when heartbeatBefore is non-zero, its last heartbeat is older than it).
	UpdateRunnerStatus(ctx context.Context, id string, from []orchestrator.RunnerStatus, to orchestrator.RunnerStatus, heartbeatBefore time.Time) (*orchestrator.RunnerInfo, error)
	DeleteRunner(ctx context.Context, id string) error
	// SetRunnerSecretHash stores the SHA-256 hash of the runner's secret (see [orchestrator.Registration]); an empty
	// hash clears it, so that no secret is valid. The hash lives beside the runner's record, not in
	// [orchestrator.RunnerInfo], so that no listing and no log of a runner carries it. An unknown runner is ErrNotFound.
	SetRunnerSecretHash(ctx context.Context, id string, hash []byte) error
	// GetRunnerSecretHash returns the hash SetRunnerSecretHash stored, empty when there is none. An
	// unknown runner is ErrNotFound.
	GetRunnerSecretHash(ctx context.Context, id string) ([]byte, error)

	// CreateAgent inserts an agent; a taken name is ErrConflict.
	CreateAgent(ctx context.Context, a *Agent) error
	GetAgent(ctx context.Context, name string) (*Agent, error)
	// ListAgents returns agents ordered by name.
	ListAgents(ctx context.Context, f AgentFilter) ([]*Agent, error)
	// UpdateAgent replaces the blueprint and UpdatedAt of an existing agent.
	UpdateAgent(ctx context.Context, a *Agent) error
	DeleteAgent(ctx context.Context, name string) error
	// DeleteRunnerAgents deletes every agent owned by the runner and returns how many there were.
	DeleteRunnerAgents(ctx context.Context, runnerID string) (int, error)

	CreateSession(ctx context.Context, s *orchestrator.Session) error
	// CreateSessionWithRun creates a session and its first run in one atomic write: both exist after it,
	// or neither (a taken id of either is ErrConflict). It is how a run is started, so a store may make it
	// cheaper than the two creations in a transaction.
	CreateSessionWithRun(ctx context.Context, s *orchestrator.Session, r *orchestrator.Run) error
	// CreateSessionWithRunOnce is CreateSessionWithRun that also records k, with the run's and the
	// session's ids, in the same atomic write: a key recorded already is ErrConflict, and nothing is
	// created. Of concurrent creates with one key, exactly one succeeds.
	CreateSessionWithRunOnce(ctx context.Context, s *orchestrator.Session, r *orchestrator.Run, k *IdempotencyKey) error
	GetSession(ctx context.Context, id string) (*orchestrator.Session, error)
	ListSessions(ctx context.Context, f orchestrator.SessionFilter) ([]*orchestrator.Session, error)
	// UpdateSession applies u when the session's status is one of from (any status when from is empty) and
	// returns the updated session.
	UpdateSession(ctx context.Context, id string, from []orchestrator.SessionStatus, u SessionUpdate) (*orchestrator.Session, error)
	// LiveDescendants returns the pending and running sessions below p.SessionID, through every
	// generation, found with one recursive query. Ended sessions are walked through (an ended child may
	// have live children) but not returned. Order: none promised.
	LiveDescendants(ctx context.Context, p DescendantsParams) ([]*TreeMember, error)
	// AdmitToTree counts one more session in the tree of root: it raises the root's count of sessions
	// when it is below maxSessions and reports whether it did. It is one guarded statement, so that of
	// concurrent starts in one tree no more than maxSessions are admitted; called in the transaction that
	// creates the session, a creation that fails takes its count back with it. An unknown root is
	// ErrNotFound.
	AdmitToTree(ctx context.Context, root string, maxSessions int) (bool, error)
	// DeleteSession deletes the session with its runs, events, callbacks (as parent or child) and artifacts
	// (their keys go to the artifact garbage queue).
	DeleteSession(ctx context.Context, id string) error
	// DeleteEndedSessions deletes up to limit sessions that ended (completed, failed or stopped) before
	// before, each with its runs, events, callbacks, webhooks and artifacts (as DeleteSession), and returns how many it deleted
	// (retention). Sessions something is still on its way to are kept: one with a child that will call it
	// back, one with undelivered callbacks, one whose webhook is still being delivered.
	DeleteEndedSessions(ctx context.Context, before time.Time, limit int) (int, error)

	CreateRun(ctx context.Context, r *orchestrator.Run) error
	GetRun(ctx context.Context, id string) (*orchestrator.Run, error)
	ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error)
	// ClaimRuns atomically moves up to p.Max pending, unparked, due (RunAt not after p.Now) runs that the
	// runner described by p can execute (see [orchestrator.Demands.Matches]) to claimed, bound to the runner, highest
	// Priority first and oldest first within one (by RunAt, or CreatedAt for a run not delayed), and
	// returns them in that order. It never takes a run past its AgentLimit or KeyLimit, counted over the
	// runs claimed or running in the whole store, whatever claims run concurrently, nor past its RateLimit:
	// it takes a rate-limited run only while fewer than RateLimit runs of its bucket (agent name and
	// RateBucket) were claimed in the RatePeriod before p.Now, counting those it takes. None to take is an
	// empty result, not an error. A run is never claimed twice. Parked runs cost the claim nothing. Claiming several runs at once is one write instead of one per run: under load,
	// most of what a busy runner asks for.
	ClaimRuns(ctx context.Context, p ClaimParams) ([]*orchestrator.Run, error)
	// UpdateRun applies u when the run's status is one of from (any status when from is empty) and, when
	// runnerID is non-empty, the run is held by that runner. A run held by another runner is ErrConflict.
	UpdateRun(ctx context.Context, id string, from []orchestrator.RunStatus, runnerID string, u RunUpdate) (*orchestrator.Run, error)
	// SetRunsParked sets Parked on the listed runs that are still pending and returns how many changed.
	SetRunsParked(ctx context.Context, ids []string, parked bool) (int, error)
	// NextRunAt returns the earliest RunAt after after of a pending delayed run, the zero time when there
	// is none: when a runner parked in a long poll must next be woken.
	NextRunAt(ctx context.Context, after time.Time) (time.Time, error)
	// TakeStopRequests returns the runner's claimed or running runs with a stop requested that was never
	// sent, or sent before resendBefore, and marks them sent at now.
	TakeStopRequests(ctx context.Context, runnerID string, now, resendBefore time.Time) ([]*orchestrator.Run, error)

	// AppendEvents appends events to a session, assigning each the next sequence number (written back into
	// the events) and raising the session's LastEventSeq. Usage events ([orchestrator.EventUsage]) add
	// their deltas (see [UsageOfEvents]) to the session's usage totals in the same atomic write, so no
	// concurrent append loses an update. An unknown session is ErrNotFound.
	AppendEvents(ctx context.Context, sessionID string, events []*orchestrator.Event) error
	// ListEvents returns up to limit events with Seq > afterSeq, in Seq order.
	ListEvents(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]*orchestrator.Event, error)
	// LastEvent returns the newest event of one of the given types with Seq > afterSeq; ErrNotFound if none.
	LastEvent(ctx context.Context, sessionID string, types []string, afterSeq int64) (*orchestrator.Event, error)

	// SessionTree returns the session rootID and its descendants through every generation (detached
	// ones included), generation by generation — the root first — and at most limit of them, with one
	// query. An unknown root is ErrNotFound.
	SessionTree(ctx context.Context, rootID string, limit int) ([]*TreeSession, error)

	CreateCallback(ctx context.Context, c *orchestrator.Callback) error
	// ListCallbacks returns callbacks oldest first.
	ListCallbacks(ctx context.Context, f CallbackFilter) ([]*orchestrator.Callback, error)
	// MarkCallbacksDelivered sets DeliveredAt and DeliveredRun on the listed callbacks that are not yet
	// delivered, and returns how many it marked.
	MarkCallbacksDelivered(ctx context.Context, ids []string, runID string, at time.Time) (int, error)

	// CreateWebhook records a webhook delivery to make.
	CreateWebhook(ctx context.Context, w *Webhook) error
	// ClaimWebhooks leases up to limit pending webhooks that are due (NextAttemptAt not after now), oldest
	// due first: it moves their NextAttemptAt to leaseUntil, so no other coordinator replica takes them
	// while this one delivers, and returns them.
	ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*Webhook, error)
	// UpdateWebhook records the outcome of a delivery attempt: Status, Attempts, NextAttemptAt, LastError
	// and DeliveredAt of w.
	UpdateWebhook(ctx context.Context, w *Webhook) error

	// CreateIdempotencyKey records an idempotency key with what its create answered; a key already
	// recorded is ErrConflict. Called in the transaction that creates the run, it makes the key unique
	// across coordinator replicas: of concurrent creates with one key, exactly one commits.
	CreateIdempotencyKey(ctx context.Context, k *IdempotencyKey) error
	GetIdempotencyKey(ctx context.Context, key string) (*IdempotencyKey, error)
	// DeleteIdempotencyKeys deletes up to limit keys created before before and returns how many it deleted.
	DeleteIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error)
	// CreateSchedule inserts a schedule; a taken id is ErrConflict.
	CreateSchedule(ctx context.Context, s *orchestrator.Schedule) error
	GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error)
	// ListSchedules returns the schedules f selects, in the order [orchestrator.ScheduleFilter] gives.
	ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error)
	// UpdateSchedule writes every field of s but ID, AgentName and CreatedAt when the stored schedule's
	// Revision still equals s.Revision, and increments both. Of writers that read the same revision only
	// one wins, the others get ErrConflict: that is how exactly one coordinator replica fires each tick.
	UpdateSchedule(ctx context.Context, s *orchestrator.Schedule) error
	DeleteSchedule(ctx context.Context, id string) error
	// CountSchedules returns how many schedules there are, paused ones included (the coordinator's
	// MaxSchedules cap counts them all).
	CountSchedules(ctx context.Context) (int, error)

	// LockCacheEntry returns the result cache's entry for key, making an empty one (no result, no leader)
	// for agentName when there is none, and holds it until the transaction ends: of concurrent
	// transactions that lock one key, on any coordinator replica, each sees what the previous one wrote.
	// That is what makes a cache's single flight hold across replicas. Call it inside InTx.
	LockCacheEntry(ctx context.Context, key, agentName string, now time.Time) (*CacheEntry, error)
	// PutCacheEntry writes every field of e, an entry locked by LockCacheEntry in the same transaction.
	PutCacheEntry(ctx context.Context, e *CacheEntry) error
	// ListCacheWaiters returns the pending runs waiting for key's leader (CacheRole "wait"), oldest first.
	ListCacheWaiters(ctx context.Context, key string) ([]*orchestrator.Run, error)
	// SetRunCacheRole sets a pending run's CacheRole and Parked: a waiter promoted to leader is unparked so
	// that a runner claims it. A run no longer pending is ErrConflict.
	SetRunCacheRole(ctx context.Context, id, role string, parked bool) error
	// DeleteCacheEntries deletes up to limit entries that nothing fills and whose result expired before
	// before (or that hold none and were last written before it), and returns how many it deleted
	// (retention). An entry whose leader was last written more than a week before before is deleted too.
	DeleteCacheEntries(ctx context.Context, before time.Time, limit int) (int, error)

	// RateLimitStarts returns how many runs of the agent's rate-limit bucket were claimed after since.
	RateLimitStarts(ctx context.Context, agentName, bucket string, since time.Time) (int, error)
	// RateLimitedRuns counts, per agent, the pending, unparked runs due by now that their rate limit holds:
	// their bucket saw as many claims as the limit in the period before now.
	RateLimitedRuns(ctx context.Context, now time.Time) (map[string]int, error)
	// PutArtifact records an artifact, replacing the record of the same session and name; the replaced
	// record's key goes to the garbage queue in the same write. An unknown session is ErrNotFound.
	PutArtifact(ctx context.Context, a *Artifact) error
	// GetArtifact returns one artifact's record; ErrNotFound when the session has none of that name.
	GetArtifact(ctx context.Context, sessionID, name string) (*Artifact, error)
	// ListArtifacts returns a session's artifacts ordered by name (none for an unknown session).
	ListArtifacts(ctx context.Context, sessionID string) ([]*Artifact, error)
	// CountArtifacts returns how many artifacts a session has.
	CountArtifacts(ctx context.Context, sessionID string) (int, error)
	// ListArtifactGarbage returns up to limit bucket keys no record refers to any more, oldest first:
	// those of replaced artifacts, and of the artifacts of sessions DeleteSession and DeleteEndedSessions
	// deleted (they queue them in the transaction that deletes the records).
	ListArtifactGarbage(ctx context.Context, limit int) ([]string, error)
	// DeleteArtifactGarbage removes keys from the garbage queue, once their objects are deleted from the
	// bucket. Keys not queued are ignored.
	DeleteArtifactGarbage(ctx context.Context, keys []string) error
	// CreateInputRequest inserts an input request; a taken id is ErrConflict.
	CreateInputRequest(ctx context.Context, r *orchestrator.InputRequest) error
	GetInputRequest(ctx context.Context, id string) (*orchestrator.InputRequest, error)
	// ListInputRequests returns the requests f selects, oldest first (created_at, then id).
	ListInputRequests(ctx context.Context, f orchestrator.InputRequestFilter) ([]*orchestrator.InputRequest, error)
	// CloseInputRequest moves an open request to c.Status with c's answer, answerer and time, and returns
	// it. A request that is no longer open is ErrConflict, an unknown one ErrNotFound: the update is
	// guarded by the open status, so of concurrent closes exactly one wins and an answer is written once.
	CloseInputRequest(ctx context.Context, id string, c InputRequestClose) (*orchestrator.InputRequest, error)
	// ReleaseRun clears Held and Parked of a held pending run and makes it due at at (its RunAt), so that
	// runners may claim it, behind the runs that were queued before it was released, and its wait for a
	// runner (the no-match timeout) starts then. A run that is not both pending and held is ErrConflict,
	// an unknown one ErrNotFound.
	ReleaseRun(ctx context.Context, id string, at time.Time) error

	// Close releases the store's resources.
	Close() error
}

// WriteChecker is an optional capability of a [Store], and of an [orchestrator.Coordinator] whose store
// has it (coordinator.Coordinator): CheckWrite makes a small real write and reports whether it failed — a
// full disk, a read-only database, a lost connection. The HTTP API's readiness check (GET /ready) answers
// 503 while it fails, so a load balancer stops sending work to a coordinator that cannot record it.
// Implementations may reuse a result for about a second, so that frequent checks cost the store little.
type WriteChecker interface {
	CheckWrite(ctx context.Context) error
}

// Notifier carries wake-ups between coordinator replicas sharing a store (on PostgreSQL: LISTEN/NOTIFY).
// Keys are opaque strings; a wake-up is only a hint to re-read the store, so a lost one delays a waiter
// until its next timeout but never loses data.
type Notifier interface {
	// Notify publishes key to every replica (this one included, or not: both are fine). It must not block;
	// implementations queue and batch.
	Notify(key string)
	// Listen delivers keys published by any replica until ctx ends. It may deliver the empty key when
	// wake-ups may have been missed (it has just started listening): the coordinator then wakes every
	// waiter. On an error the coordinator calls Listen again after a second.
	Listen(ctx context.Context, deliver func(key string)) error
}
