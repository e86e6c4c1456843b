// Package runner is the worker side of the orchestrator: a [Runner] registers with a [Coordinator] — a
// coordinator.Coordinator in-process, or an httpapi.Client for a remote one — announces the deterministic blueprints it owns, heartbeats, long-polls for work (it is woken the
// moment a run it can take exists) and executes runs through an [orchestrator.Executor]. The processes a
// run starts reach the coordinator through a [Gateway] (package gateway) with a token scoped to the run.
//
// A runner checks a run's environment against the blueprint it executes
// ([orchestrator.Blueprint.CheckRunEnv]) whatever the coordinator checked, and cuts a result larger than the
// coordinator accepts ([orchestrator.Registration].MaxResultBytes) to fit, saying so
// ([orchestrator.EventOutputTruncated]). It sends a run's events in calls that fit the coordinator's limits,
// and counts the stderr lines the coordinator did not store in an [orchestrator.EventStderrDropped] event.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/traces"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/batch"
)

// Config configures a [Runner]. Zero values take the documented defaults.
type Config struct {
	// Coordinator is where the runner registers and gets work: a *coordinator.Coordinator in-process, or
	// an httpapi.Client for a remote one. Required.
	Coordinator Coordinator
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

// Coordinator is the part of [orchestrator.Coordinator] a runner calls: registration, heartbeats, polls,
// reports and events. Every orchestrator.Coordinator satisfies it — the in-process coordinator.Coordinator
// and the HTTP client httpapi.Client alike — so a runner takes either; a test, or a program that relays a
// runner's calls elsewhere, implements these six methods and nothing else. When it is also an
// [orchestrator.BatchReporter], final reports that become ready together travel in one call
// ([Config].MaxReportBatch).
type Coordinator interface {
	// RegisterRunner registers the runner, or registers it again under its previous identity.
	RegisterRunner(ctx context.Context, r *orchestrator.RunnerRegistration) (*orchestrator.Registration, error)
	// Heartbeat keeps the runner alive; ErrNotFound or ErrUnauthorized means it must register again.
	Heartbeat(ctx context.Context, runnerID string) error
	// PollWork waits for runs to execute and stops for runs the runner holds.
	PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error)
	// ReportRun records a run's start or end.
	ReportRun(ctx context.Context, r orchestrator.RunReport) error
	// AppendEvents records a run's events in its session.
	AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error)
	// DeregisterRunner removes the runner when it shuts down.
	DeregisterRunner(ctx context.Context, runnerID string) error
}

// Metrics receives a runner's measurements ([Config].Metrics). Its methods are called with the runner's
// lock held: they must not block.
type Metrics interface {
	// SlotsBusy reports how many of the runner's MaxConcurrent slots execute a run, whenever it changes.
	SlotsBusy(n int)
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
	co  Coordinator
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
	// eventBudget bounds the size of one call of events (see events.go).
	eventBudget atomic.Int64
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
	r.eventBudget.Store(eventCallBytes)
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
