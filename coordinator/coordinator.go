package coordinator

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/blobstore"
	"github.com/agentorchestrator/orchestrator/internal/schemacache"
	"github.com/agentorchestrator/orchestrator/internal/traces"
	"github.com/agentorchestrator/orchestrator/store"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/egress"
	"github.com/agentorchestrator/orchestrator/internal/ttlcache"
	"github.com/agentorchestrator/orchestrator/internal/wakeup"
	"github.com/agentorchestrator/orchestrator/webhook"
)

// Config configures a [Coordinator]. Zero values take the documented defaults.
type Config struct {
	// Store holds all state. Required.
	Store store.Store
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger

	// HeartbeatInterval is how often runners are told to heartbeat. Default 30s.
	HeartbeatInterval time.Duration
	// StaleAfter without a heartbeat makes a runner stale: it claims nothing new. Default 90s.
	StaleAfter time.Duration
	// OfflineAfter without a heartbeat makes a runner offline: its blueprints are removed and the runs it
	// holds fail with "Runner disconnected during execution". Default 180s.
	OfflineAfter time.Duration
	// PollTimeout caps how long a runner's poll is held. Default 30s.
	PollTimeout time.Duration
	// NoMatchTimeout fails a pending run that no live runner can take after this long. Default 300s.
	NoMatchTimeout time.Duration
	// ParkAfter parks a pending run that no live runner can take after this long: claims skip it until a
	// runner that matches it registers. Default 2s.
	ParkAfter time.Duration
	// SyncWait bounds how long a sync StartRun waits for its run to end before answering with the
	// session's current status. Default 5m.
	SyncWait time.Duration
	// StopResend is how long a stop handed to a runner may go unanswered before it is handed again.
	// Default 10s.
	StopResend time.Duration
	// RedeliverAfter is how long a run may stay claimed without its runner reporting it started before it is
	// handed to that runner again (the poll response that carried it may have been lost). Default 15s.
	RedeliverAfter time.Duration
	// TimeoutGrace is how long a run past its timeout may take to end after its runner was asked to stop
	// it: then the coordinator fails it itself (error code "timeout"), whatever its runner does. Default 30s.
	TimeoutGrace time.Duration
	// SweepInterval is how often liveness, no-match and callback sweeps run. Default 500ms, so a dead runner
	// is declared offline within about half a second of the threshold.
	SweepInterval time.Duration

	// Retention, when positive, deletes sessions that ended longer ago than this, with their runs, events
	// and callbacks, in batches. Default: off (keep everything).
	Retention time.Duration
	// IdempotencyRetention is how long a StartRun's idempotency key is remembered (at least: the
	// retention sweep deletes older keys). Default 24h.
	IdempotencyRetention time.Duration

	// WebhookSecret signs the deliveries to runs' callback_url as Standard Webhooks specifies (see package
	// [github.com/agentorchestrator/orchestrator/webhook]): "whsec_" + base64 stands for the key it
	// decodes to, anything else is used as its own bytes. Runs with a callback_url are refused while it is
	// empty: an unsigned callback could be forged by anyone.
	WebhookSecret []byte
	// WebhookAllowHosts opens destinations that deliveries otherwise refuse. A callback_url is chosen by a
	// client, so by default deliveries reach public addresses only: loopback, private, link-local,
	// carrier-grade NAT, unique-local, multicast and other special-purpose addresses are refused — checked
	// on the address actually connected to, after DNS resolution — and so is a callback_url with user info.
	// Each entry is a host name, matched exactly ("hooks.internal", "localhost"), an IP address
	// ("127.0.0.1") or a CIDR prefix ("10.1.0.0/16"). Default: none.
	WebhookAllowHosts []string
	// WebhookClient makes webhook deliveries. Default: a client that does not follow redirects, uses no
	// proxy, and refuses destinations WebhookAllowHosts does not open when it connects. A client given
	// here is used as it is: the destination check when connecting is then its own business (StartRun
	// still refuses what a callback_url shows to be off-limits).
	WebhookClient *http.Client
	// WebhookTimeout bounds one delivery attempt. Default 10s.
	WebhookTimeout time.Duration
	// WebhookMaxAttempts is how many times a delivery is tried before it is given up (retries back off
	// exponentially from 1s to 10 minutes). Default 12.
	WebhookMaxAttempts int
	// WebhookConcurrency bounds how many deliveries are in flight at once. Each delivery is independent:
	// a receiver that never answers holds one slot for up to WebhookTimeout, and the others go on.
	// Default 64.
	WebhookConcurrency int

	// Notifier carries wake-ups between coordinator replicas that share one store, so a runner parked on one
	// replica is woken by a run created through another. Nil: this coordinator is the only one.
	Notifier store.Notifier

	// AgentCacheTTL is how long StartRun may reuse an agent it looked up instead of reading it again.
	// Agent writes through this coordinator clear the cache when they commit, and writes through another
	// replica when its wake-up arrives through the Notifier; the TTL bounds what a lost wake-up, or an
	// agent written to the store directly, leaves in it. Default 1s; negative: no cache.
	AgentCacheTTL time.Duration

	// MaxTreeDepth is how deep a tree of sessions may grow: a root has depth 0, its children 1. A start
	// deeper is refused with tree_limit_exceeded. A root may ask for less (StartRunParams.Limits).
	// Default 8.
	MaxTreeDepth int
	// MaxTreeSessions is how many sessions one tree may hold, its root included (every session ever
	// started in it). A start beyond is refused with tree_limit_exceeded. A root may ask for less.
	// Default 10,000.
	MaxTreeSessions int
	// MaxSchedules caps how many schedules may exist at once, paused ones included: creating one more is
	// 409 too_many_schedules. Every schedule may start a run each second, so the cap bounds the load that
	// clients can set up to recur. Default 1000; negative: no cap.
	MaxSchedules int

	// Limits bound inputs; zero fields take their defaults ([orchestrator.Limits.WithDefaults]).
	Limits orchestrator.Limits

	// Artifacts is the bucket that holds sessions' artifacts (the files agents produce). Default: the
	// bucket ArtifactsURL names; with neither, the coordinator keeps no artifacts and its artifact calls
	// fail with code artifacts_not_configured.
	Artifacts *blobstore.Bucket
	// ArtifactsURL names the artifact bucket New opens when Artifacts is nil (-artifacts): file:///DIR,
	// s3://bucket?region=…&endpoint=… (with the s3 driver registered; see package blobstore). The bucket
	// lives as long as the process.
	ArtifactsURL string
	// MaxArtifactBytes bounds one artifact. Default 2 GiB.
	MaxArtifactBytes int64
	// MaxArtifactsPerSession bounds how many artifacts one session keeps. Default 1000.
	MaxArtifactsPerSession int
	// Prices estimates the cost of usage reported without one (a Claude Code run's per-message usage
	// events; see docs/usage.md). Its entries replace the defaults of the same model; the other models
	// keep theirs. Default: [DefaultPrices].
	Prices Prices

	// Metrics receives the coordinator's measurements (prommetrics.New fits). Default: none.
	Metrics Metrics
	// TracerProvider records the spans of runs: creation, claim, report and callback delivery, in the
	// trace of the W3C traceparent the request that created the run carried (POST /runs, an MCP call, a
	// process's call through a runner's gateway), or a new one. Each run keeps its trace context
	// (Run.TraceParent) for the runner, and a session its trace id. Default: OpenTelemetry's global
	// provider, which records nothing until a program installs one; trace context passes through either
	// way.
	TracerProvider trace.TracerProvider

	// Now is the coordinator's clock. Every time it records comes from it — in UTC, truncated to
	// microseconds, so that every store keeps it as it is — and so does every threshold it measures
	// records against: runner liveness (StaleAfter, OfflineAfter), NoMatchTimeout, ParkAfter, StopResend,
	// RedeliverAfter, Retention and webhook retries. A test can thus move time forward and call
	// [Coordinator.Sweep] instead of waiting. Waits and intervals (PollTimeout, SyncWait, SweepInterval,
	// WebhookTimeout) run on timers, the caches' lifetimes on time.Now, and webhook signatures carry the
	// time of day, which receivers check. Default: time.Now.
	Now func() time.Time
}

// warmWriter is a store whose reads cost less inside a write transaction than on their own, as
// SQLite's do: a read connection drops its page cache whenever another has committed since its last
// read — under load, before nearly every read — while the writing connection's stays warm. A poll then
// reads its runner and stop requests in its claim's transaction. On PostgreSQL a transaction would only
// add round trips.
type warmWriter interface{ ReadsWarmInWrites() bool }

// Coordinator is the in-process [orchestrator.Coordinator]: it validates requests, keeps every state
// change in the [store.Store] and wakes parked runners and waiters the moment something they wait
// for happens. Several Coordinators may share one PostgreSQL store; every state change is a guarded store
// update, so concurrent replicas cannot both win a transition.
//
// Call [Coordinator.Start] to run the background sweeps (runner liveness, no-match timeouts,
// callback delivery) and the schedules' firing loop, and [Coordinator.Stop] to end them.
type Coordinator struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	limits  orchestrator.Limits
	schemas *schemacache.Cache
	wakeups *wakeup.Hub
	// agents caches StartRun's agent lookups (nil when Config.AgentCacheTTL is negative).
	agents *ttlcache.Cache[*store.Agent]
	// webhookKick wakes the webhook deliverer when this coordinator queued a delivery or one ended.
	webhookKick chan struct{}
	// webhookSlots holds a token per delivery in flight (capacity: WebhookConcurrency).
	webhookSlots chan struct{}
	// egress is the destination policy of webhook deliveries (WebhookAllowHosts).
	egress *egress.Policy
	// noMatchPages and parkPages are where the no-match sweep's two checks go on reading pending runs.
	noMatchPages, parkPages sweepPages
	// secrets caches the runners' secret hashes for VerifyRunnerSecret.
	secrets *ttlcache.Cache[[sha256.Size]byte]
	// metrics is Config.Metrics; nil measures nothing.
	metrics Metrics
	// prices is Config.Prices over DefaultPrices.
	prices Prices
	tracer trace.Tracer
	// warmWrites: the store reads for less inside a write transaction (see warmWriter).
	warmWrites bool
	// due wakes parked polls when a delayed run becomes due.
	due dueTimer

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
}

var (
	_ orchestrator.Coordinator   = (*Coordinator)(nil)
	_ orchestrator.BatchStarter  = (*Coordinator)(nil)
	_ orchestrator.BatchReporter = (*Coordinator)(nil)
	_ store.WriteChecker         = (*Coordinator)(nil)
)

// New returns a coordinator over cfg.Store.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil {
		return nil, errors.New("orchestrator: Config.Store is required")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.HeartbeatInterval, 30*time.Second)
	def(&cfg.StaleAfter, 90*time.Second)
	def(&cfg.OfflineAfter, 180*time.Second)
	def(&cfg.PollTimeout, 30*time.Second)
	def(&cfg.NoMatchTimeout, 300*time.Second)
	def(&cfg.ParkAfter, 2*time.Second)
	def(&cfg.SyncWait, 5*time.Minute)
	def(&cfg.StopResend, 10*time.Second)
	def(&cfg.SweepInterval, 500*time.Millisecond)
	def(&cfg.RedeliverAfter, 15*time.Second)
	def(&cfg.TimeoutGrace, 30*time.Second)
	def(&cfg.WebhookTimeout, 10*time.Second)
	def(&cfg.IdempotencyRetention, 24*time.Hour)
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if cfg.MaxArtifactsPerSession <= 0 {
		cfg.MaxArtifactsPerSession = DefaultMaxArtifactsPerSession
	}
	if err := openArtifacts(&cfg); err != nil {
		return nil, err
	}
	if cfg.WebhookMaxAttempts <= 0 {
		cfg.WebhookMaxAttempts = 12
	}
	if cfg.WebhookConcurrency <= 0 {
		cfg.WebhookConcurrency = 64
	}
	if cfg.MaxTreeDepth <= 0 {
		cfg.MaxTreeDepth = defaultMaxTreeDepth
	}
	if cfg.MaxTreeSessions <= 0 {
		cfg.MaxTreeSessions = defaultMaxTreeSessions
	}
	if cfg.MaxSchedules == 0 {
		cfg.MaxSchedules = DefaultMaxSchedules
	}
	egressPolicy, err := egress.NewPolicy(cfg.WebhookAllowHosts)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: WebhookAllowHosts: %w", err)
	}
	if cfg.WebhookClient == nil {
		cfg.WebhookClient = webhookClient(egressPolicy)
	}
	if len(cfg.WebhookSecret) > 0 {
		// Sign refuses only a malformed "whsec_" secret: better said now than at the first delivery.
		if _, err := webhook.Sign(string(cfg.WebhookSecret), "wh_check", time.Unix(0, 0), nil); err != nil {
			return nil, fmt.Errorf("orchestrator: WebhookSecret: %w", err)
		}
	}
	if cfg.StaleAfter > cfg.OfflineAfter {
		return nil, fmt.Errorf("orchestrator: StaleAfter (%s) must not exceed OfflineAfter (%s)", cfg.StaleAfter, cfg.OfflineAfter)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AgentCacheTTL == 0 {
		cfg.AgentCacheTTL = time.Second
	}
	c := &Coordinator{
		cfg:     cfg,
		store:   cfg.Store,
		log:     cfg.Logger,
		limits:  cfg.Limits.WithDefaults(),
		schemas: schemacache.New(1024),
		wakeups: wakeup.New(),
		secrets: ttlcache.New[[sha256.Size]byte](runnerSecretTTL, secretCacheMax),

		webhookKick:  make(chan struct{}, 1),
		webhookSlots: make(chan struct{}, cfg.WebhookConcurrency),
		egress:       egressPolicy,
		metrics:      cfg.Metrics,
		prices:       cfg.Prices.withDefaults(),
		tracer:       traces.Tracer(cfg.TracerProvider, tracerName),
	}
	if cfg.AgentCacheTTL > 0 {
		c.agents = ttlcache.New[*store.Agent](cfg.AgentCacheTTL, agentCacheMax)
	}
	if ww, ok := cfg.Store.(warmWriter); ok {
		c.warmWrites = ww.ReadsWarmInWrites()
	}
	return c, nil
}

// Config returns the effective configuration, defaults applied.
func (c *Coordinator) Config() Config { return c.cfg }

// Limits returns the effective limits, defaults applied.
func (c *Coordinator) Limits() orchestrator.Limits { return c.limits }

// Store returns the coordinator's store.
func (c *Coordinator) Store() store.Store { return c.store }

// now is the time to record, by the configured clock.
func (c *Coordinator) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Microsecond) }

// Start runs the background sweeps until ctx ends or Stop is called. Calling Start twice is an error.
func (c *Coordinator) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return errors.New("orchestrator: coordinator already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.stopped = make(chan struct{})
	c.stopDue(false)
	c.armNextDue(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.sweepLoop(ctx) })
	wg.Go(func() { c.webhookLoop(ctx) })
	wg.Go(func() { c.scheduleLoop(ctx) })
	if c.cfg.Notifier != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := c.cfg.Notifier.Listen(ctx, c.deliverRemote)
				if ctx.Err() != nil {
					return
				}
				c.log.Warn("notifier stopped listening; restarting", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(c.stopped)
	}()
	return nil
}

// Stop ends the background sweeps and waits for them to return. Parked polls and waits are not affected:
// they end with their own contexts.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	cancel, stopped := c.cancel, c.stopped
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
		c.stopDue(true)
	}
}

// notFound builds an ErrNotFound error with a code such as "session_not_found".
func notFound(what, id string) *orchestrator.Error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, what+"_not_found", "%s %q not found", what, id)
}

// lookup carries a store read's result so a bare ErrNotFound can be given a coded error:
// lookup(store.GetSession(ctx, id)).as("session", id).
func lookup[T any](v T, err error) found[T] { return found[T]{v, err} }

type found[T any] struct {
	v   T
	err error
}

func (f found[T]) as(what, id string) (T, error) {
	if errors.Is(f.err, orchestrator.ErrNotFound) {
		var zero T
		return zero, notFound(what, id)
	}
	return f.v, f.err
}

// CheckWrite implements [store.WriteChecker] with the store's own check; a store without one is taken
// to be able to write.
func (c *Coordinator) CheckWrite(ctx context.Context) error {
	if wc, ok := c.store.(store.WriteChecker); ok {
		return wc.CheckWrite(ctx)
	}
	return nil
}
