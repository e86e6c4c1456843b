package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/egress"
	"github.com/agentorchestrator/orchestrator/webhook"
)

// CoordinatorConfig configures a [LocalCoordinator]. Zero values take the documented defaults.
type CoordinatorConfig struct {
	// Store holds all state. Required.
	Store Store
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
	// SyncWait bounds how long a sync StartRun waits for the session to end before answering with the
	// session's current status. Default 5m.
	SyncWait time.Duration
	// StopResend is how long a stop handed to a runner may go unanswered before it is handed again.
	// Default 10s.
	StopResend time.Duration
	// RedeliverAfter is how long a run may stay claimed without its runner reporting it started before it is
	// handed to that runner again (the poll response that carried it may have been lost). Default 15s.
	RedeliverAfter time.Duration
	// SweepInterval is how often liveness, no-match and callback sweeps run. Default 500ms, so a dead runner
	// is declared offline within about half a second of the threshold.
	SweepInterval time.Duration

	// Retention, when positive, deletes sessions that ended longer ago than this, with their runs, events
	// and callbacks, in batches. Default: off (keep everything).
	Retention time.Duration

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
	Notifier Notifier

	// AgentCacheTTL is how long StartRun may reuse an agent it looked up instead of reading it again.
	// Agent writes through this coordinator clear the cache when they commit, and writes through another
	// replica when its wake-up arrives through the Notifier; the TTL bounds what a lost wake-up, or an
	// agent written to the store directly, leaves in it. Default 1s; negative: no cache.
	AgentCacheTTL time.Duration

	// Limits bound inputs; zero fields take the defaults of [DefaultLimits].
	Limits Limits
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

// Limits bound what callers and executors may send. Exceeding one is an [ErrTooLarge] or [ErrInvalid] error.
type Limits struct {
	// MaxParametersBytes bounds a run's parameters (and metadata) as JSON. Default 1 MiB.
	MaxParametersBytes int
	// MaxSchemaBytes bounds a parameters or output schema. Default 256 KiB.
	MaxSchemaBytes int
	// MaxEventBytes bounds one event's payload. Default 256 KiB.
	MaxEventBytes int
	// MaxEventsPerAppend bounds how many events one AppendEvents call may carry. Default 1000.
	MaxEventsPerAppend int
	// MaxEventsPage bounds a page of events. Default 1000.
	MaxEventsPage int
	// MaxBlueprints bounds how many blueprints one runner may announce. Default 1000.
	MaxBlueprints int
	// MaxResultBytes bounds a result's text plus data. Default 8 MiB. Runners are told it when they
	// register ([Registration].MaxResultBytes) and cut their results to fit it, measured as JSON; the HTTP
	// API sizes its report routes' body limit after it.
	MaxResultBytes int
}

// DefaultLimits are the limits used for zero fields of [Limits].
var DefaultLimits = Limits{
	MaxParametersBytes: 1 << 20,
	MaxSchemaBytes:     256 << 10,
	MaxEventBytes:      256 << 10,
	MaxEventsPerAppend: 1000,
	MaxEventsPage:      1000,
	MaxBlueprints:      1000,
	MaxResultBytes:     8 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxParametersBytes, d.MaxParametersBytes)
	set(&l.MaxSchemaBytes, d.MaxSchemaBytes)
	set(&l.MaxEventBytes, d.MaxEventBytes)
	set(&l.MaxEventsPerAppend, d.MaxEventsPerAppend)
	set(&l.MaxEventsPage, d.MaxEventsPage)
	set(&l.MaxBlueprints, d.MaxBlueprints)
	set(&l.MaxResultBytes, d.MaxResultBytes)
	return l
}

// LocalCoordinator is the in-process [Coordinator]: it validates requests, keeps every state change in the
// [Store] and wakes parked runners and waiters the moment something they wait for happens. Several
// LocalCoordinators may share one PostgreSQL store; every state change is a guarded store update, so
// concurrent replicas cannot both win a transition.
//
// Call [LocalCoordinator.Start] to run the background sweeps (runner liveness, no-match timeouts,
// callback delivery) and [LocalCoordinator.Stop] to end them.
type LocalCoordinator struct {
	cfg     CoordinatorConfig
	store   Store
	log     *slog.Logger
	limits  Limits
	schemas *SchemaCache
	notify  *notifier
	// agents caches StartRun's agent lookups (nil when CoordinatorConfig.AgentCacheTTL is negative).
	agents *agentCache
	// webhookKick wakes the webhook deliverer when this coordinator queued a delivery or one ended.
	webhookKick chan struct{}
	// webhookSlots holds a token per delivery in flight (capacity: WebhookConcurrency).
	webhookSlots chan struct{}
	// egress is the destination policy of webhook deliveries (WebhookAllowHosts).
	egress *egress.Policy
	// noMatchPages and parkPages are where the no-match sweep's two checks go on reading pending runs.
	noMatchPages, parkPages sweepPages
	// secrets caches the runners' secret hashes for VerifyRunnerSecret.
	secrets secretCache

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
}

var (
	_ Coordinator   = (*LocalCoordinator)(nil)
	_ BatchReporter = (*LocalCoordinator)(nil)
	_ WriteChecker  = (*LocalCoordinator)(nil)
)

// NewCoordinator returns a coordinator over cfg.Store.
func NewCoordinator(cfg CoordinatorConfig) (*LocalCoordinator, error) {
	if cfg.Store == nil {
		return nil, errors.New("orchestrator: CoordinatorConfig.Store is required")
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
	def(&cfg.WebhookTimeout, 10*time.Second)
	if cfg.WebhookMaxAttempts <= 0 {
		cfg.WebhookMaxAttempts = 12
	}
	if cfg.WebhookConcurrency <= 0 {
		cfg.WebhookConcurrency = 64
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
	if cfg.AgentCacheTTL == 0 {
		cfg.AgentCacheTTL = time.Second
	}
	c := &LocalCoordinator{
		cfg:     cfg,
		store:   cfg.Store,
		log:     cfg.Logger,
		limits:  cfg.Limits.withDefaults(),
		schemas: NewSchemaCache(1024),
		notify:  newNotifier(),

		webhookKick:  make(chan struct{}, 1),
		webhookSlots: make(chan struct{}, cfg.WebhookConcurrency),
		egress:       egressPolicy,
	}
	if cfg.AgentCacheTTL > 0 {
		c.agents = newAgentCache(cfg.AgentCacheTTL)
	}
	return c, nil
}

// Config returns the effective configuration, defaults applied.
func (c *LocalCoordinator) Config() CoordinatorConfig { return c.cfg }

// Limits returns the effective limits, defaults applied.
func (c *LocalCoordinator) Limits() Limits { return c.limits }

// Store returns the coordinator's store.
func (c *LocalCoordinator) Store() Store { return c.store }

// Start runs the background sweeps until ctx ends or Stop is called. Calling Start twice is an error.
func (c *LocalCoordinator) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return errors.New("orchestrator: coordinator already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.stopped = make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.sweepLoop(ctx) })
	wg.Go(func() { c.webhookLoop(ctx) })
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

// deliverRemote wakes the waiters of a key another replica published. The empty key means that
// wake-ups may have been missed (the Notifier has just started listening, after a start or a lost
// connection): every waiter is woken to look again, and the agent cache is cleared. agentsKey (another
// replica wrote an agent) clears the agent cache and wakes nobody.
func (c *LocalCoordinator) deliverRemote(key string) {
	switch key {
	case "":
		c.agents.clear() // an agent write's wake-up may have been missed too
		c.notify.notifyAll()
	case agentsKey:
		c.agents.clear()
	default:
		c.notify.notify(key)
	}
}

// wake tells goroutines parked on key — here, and on other replicas when a Notifier is configured — that
// what they wait for may have happened.
func (c *LocalCoordinator) wake(key string) {
	c.notify.notify(key)
	if c.cfg.Notifier != nil {
		c.cfg.Notifier.Notify(key)
	}
}

// Stop ends the background sweeps and waits for them to return. Parked polls and waits are not affected:
// they end with their own contexts.
func (c *LocalCoordinator) Stop() {
	c.mu.Lock()
	cancel, stopped := c.cancel, c.stopped
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-stopped
	}
}

// notFound builds an ErrNotFound error with a code such as "session_not_found".
func notFound(what, id string) *Error {
	return Errorf(ErrNotFound, what+"_not_found", "%s %q not found", what, id)
}

// lookup carries a store read's result so a bare ErrNotFound can be given a coded error:
// lookup(store.GetSession(ctx, id)).as("session", id).
func lookup[T any](v T, err error) found[T] { return found[T]{v, err} }

type found[T any] struct {
	v   T
	err error
}

func (f found[T]) as(what, id string) (T, error) {
	if errors.Is(f.err, ErrNotFound) {
		var zero T
		return zero, notFound(what, id)
	}
	return f.v, f.err
}

// await calls look until it reports done, parking between looks until something is notified on key (or
// also on key2, when not empty), wait elapses or ctx ends; a wait of zero looks once. The notification
// channels are taken before each look, so nothing that happens after a look is missed: a waiter is woken
// the moment what it waits for may have happened, never by polling. It returns (false, nil) when wait
// elapses, and ctx's error when ctx ends.
func (c *LocalCoordinator) await(ctx context.Context, wait time.Duration, key, key2 string, look func() (bool, error)) (bool, error) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		ch, release := c.notify.wait(key)
		var ch2 <-chan struct{}
		release2 := func() {}
		if key2 != "" {
			ch2, release2 = c.notify.wait(key2)
		}
		done, err := look()
		if done || err != nil || timer == nil {
			release()
			release2()
			return done, err
		}
		select {
		case <-ch:
		case <-ch2:
		case <-timer:
			release()
			release2()
			return false, nil
		case <-ctx.Done():
			release()
			release2()
			return false, ctx.Err()
		}
		release()
		release2()
	}
}

// CheckWrite implements [WriteChecker] with the store's own check; a store without one is taken to be
// able to write.
func (c *LocalCoordinator) CheckWrite(ctx context.Context) error {
	if wc, ok := c.store.(WriteChecker); ok {
		return wc.CheckWrite(ctx)
	}
	return nil
}
