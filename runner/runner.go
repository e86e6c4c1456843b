// Package runner is the worker side of the orchestrator: a [Runner] registers with an
// [orchestrator.Coordinator] — a coordinator.Coordinator in-process, or an httpapi.Client for a remote
// one — announces the deterministic blueprints it owns, heartbeats, long-polls for work (it is woken the
// moment a run it can take exists) and executes runs through an [orchestrator.Executor]. The processes a
// run starts reach the coordinator through a [Gateway] (package gateway) with a token scoped to the run.
//
// A runner checks a run's environment against the blueprint it executes
// ([orchestrator.Blueprint.CheckRunEnv]) whatever the coordinator checked, and cuts a result larger than the
// coordinator accepts ([orchestrator.Registration].MaxResultBytes) to fit, saying so
// ([orchestrator.EventOutputTruncated]).
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/backoff"
	"github.com/agentorchestrator/orchestrator/internal/batch"
	"github.com/agentorchestrator/orchestrator/internal/jsonsize"
)

// Config configures a [Runner]. Zero values take the documented defaults.
type Config struct {
	// Coordinator is where the runner registers and gets work: a *coordinator.Coordinator in-process, or
	// an httpapi.Client for a remote one. Required.
	Coordinator orchestrator.Coordinator
	// Executor performs the runs. Required.
	Executor orchestrator.Executor
	// Blueprints are the deterministic agents this runner owns and announces (see
	// [orchestrator.LoadBlueprints]).
	Blueprints []*orchestrator.Blueprint

	// Hostname defaults to os.Hostname().
	Hostname string
	// ProjectDir is the working directory of runs that do not name one. Defaults to the process's working
	// directory.
	ProjectDir string
	// ExecutorType names the executor for operators and demands. Default "deterministic" when Blueprints are
	// announced, else "agent".
	ExecutorType string
	// ExecutorProfile names the executor's configuration for demands. Default: ExecutorType.
	ExecutorProfile string
	Tags            []string
	// RequireMatchingTags makes the runner take only runs that demand at least one of its tags.
	RequireMatchingTags bool
	// AcceptsAgents overrides whether the runner takes AI agent runs (default: only when it announces no
	// blueprints).
	AcceptsAgents *bool
	// MaxConcurrent is how many runs execute at once: a slot is a run whose executor has not returned (a
	// running process). Default 4.
	MaxConcurrent int
	// MaxPendingReports is how many ended runs may wait for their final report to be recorded without
	// holding a slot. Past it, each further run waiting on its report holds its slot, so a slow coordinator
	// slows the runner down instead of piling up results. Default MaxConcurrent; negative: none (a slot is
	// held until the run's report is recorded).
	MaxPendingReports int

	// ShutdownGrace is how long runs in progress may go on after the runner's context ends; then they are
	// stopped. Default 30s.
	ShutdownGrace time.Duration
	// StartedDelay is how long a run executes before the runner reports it started (the session shows
	// running from then on), unless it emits events sooner, which reports it at once. A run that ends
	// sooner and quietly is reported once, when it ends: the started report would cost a store
	// transaction (and an HTTP request) for a state nobody would see. Default 250ms; negative reports
	// every run started at once.
	StartedDelay time.Duration
	// ReportTimeout is how long the runner keeps retrying a run's final report (the coordinator may be
	// restarting) before it gives the result up. Default 10m.
	ReportTimeout time.Duration
	// MaxReportBatch is how many final reports may travel in one call when the coordinator is a
	// [orchestrator.BatchReporter]. A report that finds no report call under way goes at once, alone; reports
	// that become ready while one is under way wait for it and then go together. Default 256: the
	// coordinator writes a group's ends with one statement per table whatever its size, so under load
	// larger groups cost its store less per run (BENCHMARKS.md has the comparison with 64), and a lone
	// report still goes at once. The HTTP client splits a group that would exceed a request's size. 1
	// sends each report on its own.
	MaxReportBatch int
	// MaxResultBytes caps the size of a result the runner reports, measured as JSON: a larger result is cut
	// to fit (Result.Truncated, and an output_truncated event says what was cut). The coordinator's own
	// limit, announced at registration ([orchestrator.Registration].MaxResultBytes), applies whatever this
	// says; this may only lower it. Zero: the coordinator's (DefaultLimits.MaxResultBytes when it announces
	// none).
	MaxResultBytes int64
	// Gateway, when set, is opened for each run and gives the run's processes their way back to the
	// coordinator (see [Gateway]).
	Gateway Gateway
	// Metrics receives the runner's measurements (prommetrics.New fits). Default: none.
	Metrics Metrics
	// TracerProvider records each run's execution as a span (orchestrator.execute) in the run's trace
	// (orchestrator.Run.TraceParent); the executed process gets that span's context as TRACEPARENT, so
	// what it starts through the gateway joins the trace. Default: OpenTelemetry's global provider,
	// which records nothing until a program installs one; TRACEPARENT is set either way when the run
	// has trace context.
	TracerProvider trace.TracerProvider
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
}

// Metrics receives a runner's measurements ([Config].Metrics). Its methods are called with the runner's
// lock held: they must not block.
type Metrics interface {
	// SlotsBusy reports how many of the runner's MaxConcurrent slots execute a run, whenever it changes.
	SlotsBusy(n int)
}

// slotsBusy reports to the metrics, if any, how many runs execute now: those claimed and not yet ended,
// less those whose execution ended and whose report is on its way (they hold no process). r.mu is held.
func (r *Runner) slotsBusy() {
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.SlotsBusy(len(r.active) - r.reporting)
	}
}

// Gateway gives a run's processes scoped access to the coordinator. The runner opens it before a run
// executes and closes it after; the returned environment (AGENT_ORCHESTRATOR_API_URL, a per-run token) is
// added to [orchestrator.Invocation.Env].
type Gateway interface {
	Open(asg *orchestrator.Assignment) (env map[string]string, closeFn func())
}

// Runner is the worker loop: it registers with a coordinator, announces its blueprints, heartbeats,
// long-polls for work within its concurrency limit, executes runs through its [orchestrator.Executor] and
// reports their outcomes. It is a concrete type: one loop serves every executor, which is where
// implementations differ.
type Runner struct {
	cfg Config
	co  orchestrator.Coordinator
	log *slog.Logger
	// tracer records runs' executions (Config.TracerProvider).
	tracer trace.Tracer
	reg    orchestrator.RunnerRegistration
	blue   map[string]*orchestrator.Blueprint

	mu       sync.Mutex
	runnerID string
	active   map[string]*activeRun // by run id, from its claim until its final report is recorded
	// reporting counts the runs of active whose execution ended (reporting is set): up to
	// MaxPendingReports of them hold no slot.
	reporting int
	// recent holds the runs this runner finished in the last recentFor, recentOrder their ids oldest first:
	// a poll answer built while one of them was still claimed may hand it out again (a redelivery), and it
	// must not run twice.
	recent      map[string]time.Time
	recentOrder []string
	cancelPoll  context.CancelFunc // ends the loop's poll for runs when the runner must register again
	// watchingStops is set while the stop watch runs (see watchStops), pollingRuns while the loop polls
	// for runs.
	watchingStops, pollingRuns bool
	watchDone                  sync.WaitGroup
	// wake wakes the loop while the runner is full: a slot freed, or the runner must register again.
	wake chan struct{}
	wg   sync.WaitGroup
	// reports queues final reports for a BatchReporter (nil: they go one by one).
	reports *batch.Queue[orchestrator.RunReport]

	registered chan struct{} // closed after the first successful registration
	regOnce    sync.Once
	reRegister chan struct{}
	// gen counts successful registrations: a 404 answered to a call made under an older one is stale.
	gen uint64
	// maxResult is the coordinator's result limit, from the last registration (0: not announced).
	maxResult int64
	// link says when the coordinator stops and starts answering.
	link *link
}

type activeRun struct {
	asg    *orchestrator.Assignment
	cancel context.CancelFunc
	// why is set when the runner ends the run itself: "stopped", "runner shut down".
	why string
	// abandoned runs are not reported: the coordinator already ended them.
	abandoned bool
	// reporting is set once the executor returned: the run waits on its final report.
	reporting bool
}

// New checks cfg and returns a runner. Call [Runner.Run] to start it.
func New(cfg Config) (*Runner, error) {
	if cfg.Coordinator == nil {
		return nil, errors.New("orchestrator: Config.Coordinator is required")
	}
	if cfg.Executor == nil {
		return nil, errors.New("orchestrator: Config.Executor is required")
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("orchestrator: hostname: %w", err)
		}
		cfg.Hostname = h
	}
	if cfg.ProjectDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("orchestrator: working directory: %w", err)
		}
		cfg.ProjectDir = wd
	}
	if cfg.ExecutorType == "" {
		cfg.ExecutorType = string(orchestrator.AgentTypeAgent)
		if len(cfg.Blueprints) > 0 {
			cfg.ExecutorType = string(orchestrator.AgentTypeDeterministic)
		}
	}
	if cfg.ExecutorProfile == "" {
		cfg.ExecutorProfile = cfg.ExecutorType
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 4
	}
	if cfg.MaxPendingReports == 0 {
		cfg.MaxPendingReports = cfg.MaxConcurrent
	}
	cfg.MaxPendingReports = max(cfg.MaxPendingReports, 0)
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.StartedDelay == 0 {
		cfg.StartedDelay = 250 * time.Millisecond
	}
	if cfg.ReportTimeout <= 0 {
		cfg.ReportTimeout = 10 * time.Minute
	}
	if cfg.MaxReportBatch <= 0 {
		cfg.MaxReportBatch = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	blue := map[string]*orchestrator.Blueprint{}
	for _, b := range cfg.Blueprints {
		if b == nil {
			return nil, errors.New("orchestrator: nil blueprint")
		}
		if _, dup := blue[b.Name]; dup {
			return nil, fmt.Errorf("orchestrator: blueprint %q announced twice", b.Name)
		}
		blue[b.Name] = b
	}
	r := &Runner{
		cfg:    cfg,
		co:     cfg.Coordinator,
		log:    cfg.Logger,
		tracer: traces.Tracer(cfg.TracerProvider, "github.com/agentorchestrator/orchestrator/runner"),
		blue:   blue,
		reg: orchestrator.RunnerRegistration{
			Hostname:            cfg.Hostname,
			ProjectDir:          cfg.ProjectDir,
			ExecutorType:        cfg.ExecutorType,
			ExecutorProfile:     cfg.ExecutorProfile,
			Tags:                cfg.Tags,
			RequireMatchingTags: cfg.RequireMatchingTags,
			MaxConcurrent:       cfg.MaxConcurrent,
			AcceptsAgents:       cfg.AcceptsAgents,
			Blueprints:          cfg.Blueprints,
		},
		active:     map[string]*activeRun{},
		recent:     map[string]time.Time{},
		registered: make(chan struct{}),
		reRegister: make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		link:       &link{log: cfg.Logger},
	}
	r.reports = r.newReportQueue()
	return r, nil
}

// ID returns the runner id, empty before the first registration.
func (r *Runner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runnerID
}

// Registered is closed once the runner has registered for the first time.
func (r *Runner) Registered() <-chan struct{} { return r.registered }

// Run registers the runner and works until ctx ends. Then it stops claiming, lets runs in progress finish
// within ShutdownGrace, stops the rest (reporting them stopped), deregisters — its blueprints disappear
// from the coordinator at once — and returns nil. It returns early with an error only when registration is
// rejected as invalid.
func (r *Runner) Run(ctx context.Context) error {
	reg, err := r.register(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// Runs live in their own context so that shutting down lets them finish within the grace period.
	runsCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()

	// Heartbeats go on until the runner has deregistered: during the shutdown grace it is still alive.
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeatLoop(hbCtx, time.Duration(reg.HeartbeatIntervalSeconds*float64(time.Second)))
	}()

	pollWait := time.Duration(reg.PollTimeoutSeconds * float64(time.Second))
	if pollWait <= 0 {
		pollWait = 30 * time.Second
	}
	retry := backoff.New(100*time.Millisecond, 5*time.Second)
	// When the last poll took as many runs as it asked for, more are likely waiting (backlog): a slot
	// that frees then waits a little for others (see below), up to the last such poll's round trip.
	refill := max(1, r.cfg.MaxConcurrent/4)
	backlog := false
	var lastPoll time.Duration
	var gather *time.Timer
	for ctx.Err() == nil {
		select {
		case <-r.reRegister:
			r.log.Warn("coordinator does not know this runner; registering again", "runner_id", r.ID())
			r.abandonAll()
			if _, err := r.register(ctx); err != nil {
				continue
			}
		default:
		}
		// While the coordinator is unreachable, a heartbeat probes it: a poll that reaches it is held
		// there, so its answer would say the coordinator is back only a poll's wait later.
		if r.link.isDown() {
			if err := r.co.Heartbeat(ctx, r.ID()); ctx.Err() == nil && r.link.result("heartbeat", err) {
				retry.Sleep(ctx)
				continue
			}
		}
		r.mu.Lock()
		free := r.cfg.MaxConcurrent - r.slotsInUse()
		if free > 0 && (!backlog || free >= refill) {
			gather = nil
		} else {
			// A full runner takes stops through the stop watch, and polls for runs once a slot frees.
			// While a backlog waits, one claim for a few slots costs the coordinator about what one for a
			// single slot does: the first slot to free waits for refill slots, or for the time the last
			// poll took, whichever comes first.
			var deadline <-chan time.Time
			if free > 0 {
				if gather == nil {
					gather = time.NewTimer(lastPoll)
				}
				deadline = gather.C
			}
			r.watchStops(ctx, pollWait)
			r.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-r.wake:
				continue
			case <-deadline:
			}
			r.mu.Lock()
			free = r.cfg.MaxConcurrent - r.slotsInUse()
			gather = nil
			if free == 0 || ctx.Err() != nil {
				r.mu.Unlock()
				continue
			}
		}
		pollCtx, cancel := context.WithCancel(ctx)
		r.cancelPoll = cancel
		r.pollingRuns = true
		id, gen := r.runnerID, r.gen
		r.mu.Unlock()

		began := time.Now()
		work, err := r.co.PollWork(pollCtx, orchestrator.PollParams{RunnerID: id, Wait: pollWait, Max: free})
		cancelled := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()
		r.mu.Lock()
		r.pollingRuns = false
		r.mu.Unlock()
		backlog = err == nil && work != nil && len(work.Runs) == free
		if backlog {
			lastPoll = min(time.Since(began), maxGather) // it found runs at once: a round trip
		}
		switch {
		case err == nil:
			r.link.result("poll", nil)
			retry.Reset()
		case ctx.Err() != nil:
		case cancelled:
			continue // the runner must register again: the loop's next turn does it
		case mustRegisterAgain(err):
			r.mu.Lock()
			stale := gen != r.gen
			r.mu.Unlock()
			if stale {
				continue // the runner registered again since this poll was sent
			}
			r.log.Warn("coordinator does not know this runner; registering again", "runner_id", id, "err", err)
			r.abandonAll()
			if errors.Is(err, orchestrator.ErrUnauthorized) {
				retry.Sleep(ctx) // should a fresh credential be refused too, do not spin
			}
			_, _ = r.register(ctx)
			continue
		default:
			if !r.link.result("poll", err) {
				r.log.Warn("poll failed", "err", err)
			}
			retry.Sleep(ctx)
			continue
		}
		if work == nil {
			continue
		}
		for _, sid := range work.Stop {
			r.stop(sid, "stopped")
		}
		for _, asg := range work.Runs {
			r.start(runsCtx, asg)
		}
	}
	r.watchDone.Wait()
	r.shutdown()
	stopHB()
	<-hbDone
	return nil
}

// watchStops starts the stop watch unless it runs already; r.mu is held. The stop watch long-polls for
// stops alone (Max 0) while the loop does not poll for runs (the runner is full, or waits for more slots
// to free), and ends after a poll that finds the loop polling again.
//
// It is a poll of its own rather than the loop's, so that a slot that frees does not cancel it. A runner
// under load fills and frees its slots many times a second: a cancelled poll would cost the coordinator
// a look at the store for nothing each time, and over HTTP/1.1 its connection, which the client closes to
// cancel a request in flight. A watch poll outlives the runner's next poll for runs instead: for up to a
// poll's wait both are open, and each brings the stops it finds.
func (r *Runner) watchStops(ctx context.Context, pollWait time.Duration) {
	if r.watchingStops {
		return
	}
	r.watchingStops = true
	r.watchDone.Add(1)
	go func() {
		defer r.watchDone.Done()
		retry := backoff.New(100*time.Millisecond, 5*time.Second)
		for {
			r.mu.Lock()
			if ctx.Err() != nil || r.pollingRuns {
				r.watchingStops = false
				r.mu.Unlock()
				return
			}
			id, gen := r.runnerID, r.gen
			r.mu.Unlock()
			work, err := r.co.PollWork(ctx, orchestrator.PollParams{RunnerID: id, Wait: pollWait})
			switch {
			case err == nil:
				r.link.result("poll", nil)
				retry.Reset()
				for _, sid := range work.Stop {
					r.stop(sid, "stopped")
				}
			case ctx.Err() != nil:
			case mustRegisterAgain(err):
				// The loop registers again; until then this runner's polls are refused.
				r.mu.Lock()
				r.registerAgain(gen)
				r.watchingStops = false
				r.mu.Unlock()
				return
			default:
				if !r.link.result("poll", err) {
					r.log.Warn("poll for stops failed", "err", err)
				}
				retry.Sleep(ctx)
			}
		}
	}()
}

// registerAgain tells the loop to register again, after a heartbeat or a stop poll under registration gen
// was answered that the coordinator no longer knows this runner: it ends the loop's poll and wakes it.
// An answer to a call made under an older registration is stale and ignored. r.mu is held.
func (r *Runner) registerAgain(gen uint64) {
	if gen != r.gen {
		return
	}
	select {
	case r.reRegister <- struct{}{}:
	default:
	}
	if r.cancelPoll != nil {
		r.cancelPoll()
	}
	r.wakeLoop()
}

// wakeLoop wakes the loop if it waits for a free slot; r.mu is held.
func (r *Runner) wakeLoop() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// register registers until it succeeds, the context ends, or the coordinator rejects the registration as
// invalid (a configuration error, returned). It presents the secret of its previous registration, if any.
// While another live process holds this runner's identity (runner_identity_in_use) it keeps trying, with
// one warning: the other one may be this runner's own previous process, which the coordinator lets go once
// it is stale.
func (r *Runner) register(ctx context.Context) (*orchestrator.Registration, error) {
	retry := backoff.New(200*time.Millisecond, 10*time.Second)
	warned := false
	for {
		reg, err := r.co.RegisterRunner(ctx, &r.reg)
		if err == nil {
			r.link.result("register", nil)
			r.reg.RunnerSecret = reg.RunnerSecret
			r.mu.Lock()
			r.runnerID = reg.RunnerID
			r.maxResult = reg.MaxResultBytes
			r.gen++
			select {
			case <-r.reRegister: // answered by this registration
			default:
			}
			r.mu.Unlock()
			for _, b := range reg.Blueprints {
				if b.Name != b.RegisteredName {
					r.log.Warn("blueprint name taken by another runner; registered under a suffixed name",
						"blueprint", b.Name, "registered_name", b.RegisteredName)
				}
			}
			r.log.Info("registered", "runner_id", reg.RunnerID, "blueprints", len(reg.Blueprints))
			r.regOnce.Do(func() { close(r.registered) })
			return reg, nil
		}
		if errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge) || errors.Is(err, orchestrator.ErrUnauthorized) || errors.Is(err, orchestrator.ErrForbidden) {
			return nil, fmt.Errorf("register runner: %w", err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case orchestrator.ErrorCode(err) == "runner_identity_in_use" && !warned:
			r.log.Warn("another live runner holds this runner's identity; retrying until it is stale or removed", "err", err)
			warned = true
		case orchestrator.ErrorCode(err) == "runner_identity_in_use":
			r.log.Debug("runner identity still in use; retrying", "err", err)
		case r.link.result("register", err):
		default:
			r.log.Warn("registration failed; retrying", "err", err)
		}
		retry.Sleep(ctx)
	}
}

// mustRegisterAgain reports whether err, answered to a heartbeat or a poll, means the coordinator no
// longer knows this runner (unknown, offline), or no longer takes its credential (revoked when it went
// offline): it must register again.
func mustRegisterAgain(err error) bool {
	return errors.Is(err, orchestrator.ErrNotFound) || errors.Is(err, orchestrator.ErrUnauthorized)
}

func (r *Runner) heartbeatLoop(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		id, gen := r.runnerID, r.gen
		r.mu.Unlock()
		err := r.co.Heartbeat(ctx, id)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			r.link.result("heartbeat", nil)
		case mustRegisterAgain(err):
			r.mu.Lock()
			r.registerAgain(gen)
			r.mu.Unlock()
		case r.link.result("heartbeat", err):
		default:
			r.log.Warn("heartbeat failed", "err", err)
		}
	}
}

// start begins executing asg unless this runner already executes it (a redelivered run).
func (r *Runner) start(runsCtx context.Context, asg *orchestrator.Assignment) {
	ctx, cancel := context.WithCancel(runsCtx)
	ar := &activeRun{asg: asg, cancel: cancel}
	r.mu.Lock()
	_, dup := r.active[asg.Run.ID]
	_, done := r.recent[asg.Run.ID]
	if dup || done {
		r.mu.Unlock()
		cancel()
		return
	}
	r.active[asg.Run.ID] = ar
	r.slotsBusy()
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer r.finished(asg.Run.ID)
		r.execute(ctx, ar)
	}()
}

// slotsInUse is how many slots the active runs hold: those executing, and those waiting on their report
// beyond MaxPendingReports. r.mu is held.
func (r *Runner) slotsInUse() int {
	return len(r.active) - min(r.reporting, r.cfg.MaxPendingReports)
}

// executed records that a run's executor returned: the run waits on its final report, and its slot is
// free unless MaxPendingReports runs wait already.
func (r *Runner) executed(ar *activeRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ar.reporting = true
	r.reporting++
	r.slotsBusy()
	if r.reporting <= r.cfg.MaxPendingReports {
		r.wakeLoop() // a slot is free: poll for runs
	}
}

func (r *Runner) finished(runID string) {
	r.mu.Lock()
	if ar := r.active[runID]; ar != nil && ar.reporting {
		r.reporting--
	}
	delete(r.active, runID)
	r.slotsBusy()
	now := time.Now()
	r.recent[runID] = now
	r.recentOrder = append(r.recentOrder, runID)
	for len(r.recentOrder) > 0 && now.Sub(r.recent[r.recentOrder[0]]) > recentFor {
		delete(r.recent, r.recentOrder[0])
		r.recentOrder = r.recentOrder[1:]
	}
	r.wakeLoop() // a slot is free: poll for runs
	r.mu.Unlock()
}

// maxGather bounds how long a free slot waits for others before the runner polls for runs.
const maxGather = 5 * time.Millisecond

// recentFor is how long a finished run is remembered. A stale redelivery is a poll answer built before the
// run's end was committed, so it arrives within a poll's round trip; a minute is ample.
const recentFor = time.Minute

// stop ends the execution of a session's run; why becomes the reported reason.
func (r *Runner) stop(sessionID, why string) {
	r.mu.Lock()
	var list []*activeRun
	for _, ar := range r.active {
		if ar.asg.Run.SessionID == sessionID {
			if ar.why == "" {
				ar.why = why
			}
			list = append(list, ar)
		}
	}
	r.mu.Unlock()
	for _, ar := range list {
		ar.cancel()
	}
}

// abandonAll stops every execution without reporting it: a coordinator that forgot this runner has
// already failed its runs ("Runner disconnected during execution").
func (r *Runner) abandonAll() {
	r.mu.Lock()
	list := make([]*activeRun, 0, len(r.active))
	for _, ar := range r.active {
		ar.abandoned = true
		list = append(list, ar)
	}
	r.mu.Unlock()
	for _, ar := range list {
		ar.cancel()
	}
}

func (r *Runner) shutdown() {
	r.mu.Lock()
	n := len(r.active)
	r.mu.Unlock()
	if n > 0 {
		r.log.Info("shutting down; waiting for runs in progress", "runs", n, "grace", r.cfg.ShutdownGrace)
		done := make(chan struct{})
		go func() { r.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(r.cfg.ShutdownGrace):
			r.mu.Lock()
			for _, ar := range r.active {
				if ar.why == "" {
					ar.why = "runner shut down"
				}
				ar.cancel()
			}
			r.mu.Unlock()
			<-done
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.co.DeregisterRunner(ctx, r.ID()); err != nil {
		r.log.Warn("deregistration failed", "err", err)
		return
	}
	r.log.Info("deregistered", "runner_id", r.ID())
}

func (r *Runner) execute(ctx context.Context, ar *activeRun) {
	asg, run := ar.asg, ar.asg.Run
	log := r.log.With("run_id", run.ID, "session_id", run.SessionID, "agent", run.AgentName)
	rid := r.ID()
	if run.TraceParent != "" {
		var span trace.Span
		ctx, span = r.tracer.Start(traces.Parent(ctx, run.TraceParent), "orchestrator.execute", trace.WithAttributes(
			attribute.String("orchestrator.agent", run.AgentName), attribute.String("orchestrator.run_id", run.ID),
			attribute.String("orchestrator.session_id", run.SessionID), attribute.String("orchestrator.runner_id", rid)))
		defer span.End()
	}
	begun := time.Now()
	r.log.Info("run started", "agent", run.AgentName, "session_id", run.SessionID, "run_id", run.ID, "runner_id", rid, "type", run.Type)
	// Reports and events outlive a stopped run's context: they must still reach the coordinator.
	bg := context.WithoutCancel(ctx)
	// The started report travels while the execution begins, so dispatch latency does not include a round
	// trip to the coordinator. The final report waits for it (so the coordinator sees started before
	// ended); a refusal — the run was stopped or is no longer this runner's — ends the execution unreported.
	// The started report goes out after StartedDelay, or as soon as the run shows activity (its first
	// events), whichever comes first; a run over before either is recorded by its final report alone.
	started, execDone, active := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(started)
		if d := r.cfg.StartedDelay; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-execDone:
				return
			case <-active:
			case <-t.C:
			}
		}
		err := r.co.ReportRun(bg, orchestrator.RunReport{RunnerID: rid, RunID: run.ID, Status: orchestrator.RunRunning})
		switch {
		case err == nil:
		case errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound):
			log.Info("run is no longer ours; ending its execution", "err", err)
			r.mu.Lock()
			ar.abandoned = true
			r.mu.Unlock()
			ar.cancel()
		default:
			log.Warn("could not report the run started; executing anyway", "err", err)
		}
	}()
	inv, err := r.invocation(asg)
	var res *orchestrator.Result
	if err == nil {
		// Set here, after the run's metadata.env: no client can name the trace a process reports to.
		if tp := traces.Format(ctx); tp != "" {
			inv.Env[traces.Env] = tp
		}
		var closeGW func()
		if r.cfg.Gateway != nil {
			var env map[string]string
			env, closeGW = r.cfg.Gateway.Open(asg)
			for k, v := range env {
				inv.Env[k] = v
			}
		}
		var activeOnce sync.Once
		sink := orchestrator.EventSinkFunc(func(_ context.Context, events ...orchestrator.Event) error {
			// The session shows running before its first events are visible.
			activeOnce.Do(func() { close(active); <-started })
			_, err := r.co.AppendEvents(bg, run.SessionID, events)
			return err
		})
		res, err = r.cfg.Executor.Execute(ctx, inv, sink)
		if closeGW != nil {
			closeGW()
		}
	}
	close(execDone)
	r.executed(ar)
	<-started
	r.mu.Lock()
	why, abandoned := ar.why, ar.abandoned
	r.mu.Unlock()
	if abandoned {
		logRunEnded(log, rid, begun, "abandoned", "the coordinator ended it or gave it to another runner")
		return
	}
	// A result the coordinator would refuse for its size is cut to fit, and the session says so.
	if fitted, info := fitResult(res, r.resultLimit()); info != nil {
		res = fitted
		log.Warn("result cut to the coordinator's limit", "limit_bytes", info["limit_bytes"], "result_bytes", info["result_bytes"], "kept_bytes", info["kept_bytes"])
		if _, err := r.co.AppendEvents(bg, run.SessionID, []orchestrator.Event{orchestrator.NewEvent(orchestrator.EventOutputTruncated, info)}); err != nil {
			log.Warn("could not record the output_truncated event", "err", err)
		}
	}
	rep := orchestrator.RunReport{RunnerID: rid, RunID: run.ID, Result: res}
	switch {
	case why != "":
		rep.Status, rep.Error = orchestrator.RunStopped, why
	case err != nil:
		rep.Status, rep.Error = orchestrator.RunFailed, err.Error()
	case res.Failed():
		rep.Status, rep.Error = orchestrator.RunFailed, res.Error
		if rep.Error == "" {
			rep.Error = fmt.Sprintf("exit code %d", *res.ExitCode)
		}
	default:
		rep.Status = orchestrator.RunCompleted
	}
	if len(rep.Error) > maxReportError {
		rep.Error = jsonsize.CutString(rep.Error, maxReportError) // the coordinator keeps no more
	}
	logRunEnded(log, rid, begun, string(rep.Status), rep.Error)
	r.report(bg, log, rep)
}

// report delivers a run's final report, retrying transient failures for up to ReportTimeout: a
// coordinator that restarts meanwhile still gets the result. A report the coordinator refuses as too
// large or invalid is replaced by a small one without the result, whose error says why: the run then ends
// at once, failed (or stopped), instead of staying running with its result lost.
func (r *Runner) report(ctx context.Context, log *slog.Logger, rep orchestrator.RunReport) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReportTimeout)
	defer cancel()
	retry := backoff.New(100*time.Millisecond, 5*time.Second)
	replaced := false
	for {
		err := r.sendReport(ctx, rep)
		switch {
		case err == nil:
			log.Debug("run reported", "status", rep.Status)
			return
		case (errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge)) && !replaced:
			log.Error("the coordinator refused the run's report; reporting the run without its result", "status", rep.Status, "err", err)
			replaced = true
			status := orchestrator.RunFailed
			if rep.Status == orchestrator.RunStopped {
				status = orchestrator.RunStopped
			}
			rep = orchestrator.RunReport{RunnerID: rep.RunnerID, RunID: rep.RunID, Status: status,
				Error: jsonsize.CutString(fmt.Sprintf("the coordinator refused the run's %s report (%v); its result is lost", rep.Status, err), maxReportError)}
			continue
		case errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) || errors.Is(err, orchestrator.ErrInvalid) || errors.Is(err, orchestrator.ErrTooLarge):
			log.Warn("run report refused", "status", rep.Status, "err", err)
			return
		case ctx.Err() != nil:
			log.Error("gave up reporting the run", "status", rep.Status, "err", err)
			return
		}
		if !r.link.result("report", err) {
			log.Warn("run report failed; retrying", "err", err)
		}
		retry.Sleep(ctx)
	}
}

func (r *Runner) invocation(asg *orchestrator.Assignment) (*orchestrator.Invocation, error) {
	run := asg.Run
	b := asg.Blueprint
	if run.AgentType == orchestrator.AgentTypeDeterministic {
		// Execute only what this runner announced, whatever the coordinator sent.
		b = r.blue[asg.BlueprintName]
		if b == nil {
			return nil, fmt.Errorf("this runner has no blueprint %q", asg.BlueprintName)
		}
	}
	if b == nil {
		return nil, fmt.Errorf("the coordinator sent no blueprint for agent %q", run.AgentName)
	}
	// The coordinator checked the run's environment; a runner checks again, against the blueprint it
	// executes (its own, for a deterministic agent), so that a coordinator that does not check cannot
	// decide what its host runs.
	env, err := orchestrator.MetadataEnv(run.Metadata)
	if err != nil {
		return nil, err
	}
	if err := b.CheckRunEnv(env); err != nil {
		return nil, err
	}
	dir := run.ProjectDir
	if dir == "" {
		dir = r.cfg.ProjectDir
	}
	return &orchestrator.Invocation{
		Mode:              run.Type,
		RunID:             run.ID,
		SessionID:         run.SessionID,
		AgentName:         run.AgentName,
		Blueprint:         b,
		Parameters:        run.Parameters,
		ProjectDir:        dir,
		OutputSchema:      run.OutputSchema,
		Metadata:          run.Metadata,
		ExecutorSessionID: asg.ExecutorSessionID,
		MaxBudgetUSD:      asg.MaxBudgetUSD,
		Env:               map[string]string{orchestrator.EnvSessionID: run.SessionID, orchestrator.EnvRunID: run.ID},
	}, nil
}
