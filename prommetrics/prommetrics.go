// Package prommetrics exposes a coordinator's and a runner's measurements as Prometheus metrics. It
// implements [coordinator.Metrics] and [runner.Metrics]; a program that does not want Prometheus leaves
// both Metrics fields unset and never imports this package.
//
//	m := prommetrics.New()
//	coord, _ := coordinator.New(coordinator.Config{Store: store, Metrics: m})
//	m.WatchCoordinator(coord)  // runs_pending and runners_online, read from the store at each scrape
//	api := httpapi.NewHandler(coord, httpapi.Config{Metrics: m.Handler()})
//
// The metrics, all prefixed orchestrator_:
//
//	orchestrator_runs_created_total{agent}                 counter    runs queued (starts, fan-outs' runs, resumes, callback deliveries)
//	orchestrator_runs_total{agent,outcome}                 counter    runs ended: completed, failed, stopped
//	orchestrator_run_duration_seconds{agent,outcome}       histogram  a run's creation to its end
//	orchestrator_dispatch_latency_seconds                  histogram  a run's creation to its claim by a runner
//	orchestrator_runs_pending                              gauge      runs waiting for a runner
//	orchestrator_runners_online                            gauge      runners online
//	orchestrator_webhook_deliveries_total{outcome}         counter    callback_url attempts: delivered, retry, failed
//	orchestrator_run_retries_total{agent,reason}           counter    retries scheduled: exit_code, error, timeout, runner_lost, api_*, usage_limit
//	orchestrator_callbacks_total{outcome}                  counter    parent callbacks: recorded, delivered
//	orchestrator_store_tx_seconds{op}                      histogram  store transactions by operation
//	orchestrator_runner_slots_busy                         gauge      a runner's slots executing a run (once it reported)
//	orchestrator_tokens_total{agent,model,kind}            counter    tokens counted into sessions' usage: input, output, cache_read, cache_creation
//	orchestrator_cost_usd_total{agent,model}               counter    their cost in US dollars (reported, else estimated)
//
// Label values that agents choose are bounded: past [MaxAgentLabels] distinct agent names (and
// [MaxModelLabels] model names) a new name is counted as "other", so that runners announcing ever new
// agents cannot grow the series without end.
//
// The registry also holds the Go runtime's and the process's collectors (go_*, process_*).
package prommetrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/runner"
)

// Metrics holds the collectors and the registry they are registered with.
type Metrics struct {
	reg *prometheus.Registry

	runsCreated *prometheus.CounterVec
	runsTotal   *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	dispatch    prometheus.Histogram
	webhooks    *prometheus.CounterVec
	callbacks   *prometheus.CounterVec
	retries     *prometheus.CounterVec
	reruns      *prometheus.CounterVec
	storeTx     *prometheus.HistogramVec
	slotsBusy   prometheus.Gauge
	cache       *prometheus.CounterVec
	usage       usageCounters
	// agents and models bound the label values of agents' and models' names.
	agents, models *boundedLabel
	// slotsOnce registers slotsBusy at a runner's first report, so a coordinator's scrape does not show
	// a runner gauge.
	slotsOnce sync.Once
}

var (
	_ coordinator.Metrics      = (*Metrics)(nil)
	_ coordinator.CacheMetrics = (*Metrics)(nil)
	_ coordinator.RerunMetrics = (*Metrics)(nil)
	_ coordinator.RetryMetrics = (*Metrics)(nil)
	_ runner.Metrics           = (*Metrics)(nil)
)

// runBuckets spans what a run takes, from a Go function's milliseconds to an AI agent's hour.
var runBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// New returns metrics registered with a registry of their own, beside the Go runtime's and the
// process's collectors.
func New() *Metrics {
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		agents: newBoundedLabel(MaxAgentLabels),
		models: newBoundedLabel(MaxModelLabels),
		runsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_runs_created_total", Help: "Runs queued, by agent: session starts (fan-outs' runs included), resumes and callback deliveries.",
		}, []string{"agent"}),
		runsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_runs_total", Help: "Runs ended, by agent and outcome (completed, failed, stopped).",
		}, []string{"agent", "outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "orchestrator_run_duration_seconds", Help: "Time from a run's creation to its end, by agent and outcome.",
			Buckets: runBuckets,
		}, []string{"agent", "outcome"}),
		dispatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "orchestrator_dispatch_latency_seconds", Help: "Time from a run's creation to its claim by a runner.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_webhook_deliveries_total", Help: "Attempts to deliver a run's outcome to its callback_url, by outcome (delivered, retry, failed).",
		}, []string{"outcome"}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_callbacks_total", Help: "Callbacks to parent sessions, by outcome (recorded, delivered).",
		}, []string{"outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_run_retries_total", Help: "Retries scheduled after a failed attempt, by agent and reason.",
		}, []string{"agent", "reason"}),
		reruns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_reruns_total", Help: "Ended sessions started again (re-runs), by agent.",
		}, []string{"agent"}),
		storeTx: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "orchestrator_store_tx_seconds", Help: "Duration of the coordinator's store transactions, by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"op"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orchestrator_cache_requests_total", Help: "Starts of agents with a result cache, by agent and outcome (hit, miss, joined, bypass, refresh).",
		}, []string{"agent", "outcome"}),
		slotsBusy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orchestrator_runner_slots_busy", Help: "The runner's slots executing a run.",
		}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.runsCreated, m.runsTotal, m.runDuration, m.dispatch, m.webhooks, m.callbacks, m.retries, m.reruns, m.storeTx, m.cache)
	m.usage = newUsageCounters(m.reg)
	return m
}

// Registry returns the registry, to register a program's own collectors beside these or to gather them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// WatchCoordinator registers orchestrator_runs_pending, orchestrator_runners_online and
// orchestrator_runs_rate_limited{agent}, read from c's store ([coordinator.Coordinator.Gauges]) at each
// scrape. A read that fails leaves them out of that scrape (and counts in
// promhttp_metric_handler_errors_total).
func (m *Metrics) WatchCoordinator(c *coordinator.Coordinator) {
	m.reg.MustRegister(&gauges{c: c,
		pending: prometheus.NewDesc("orchestrator_runs_pending", "Runs waiting for a runner.", nil, nil),
		online:  prometheus.NewDesc("orchestrator_runners_online", "Runners online (not stale, not offline).", nil, nil),
		limited: prometheus.NewDesc("orchestrator_runs_rate_limited", "Pending runs their agent's rate limit holds, by agent.", []string{"agent"}, nil),
	})
}

// gauges collects the coordinator's state counts at scrape time.
type gauges struct {
	c                        *coordinator.Coordinator
	pending, online, limited *prometheus.Desc
}

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.pending
	ch <- g.online
	ch <- g.limited
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := g.c.Gauges(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.pending, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(v.RunsPending))
	ch <- prometheus.MustNewConstMetric(g.online, prometheus.GaugeValue, float64(v.RunnersOnline))
	for agent, n := range v.RunsRateLimited {
		ch <- prometheus.MustNewConstMetric(g.limited, prometheus.GaugeValue, float64(n), agent)
	}
}

// CacheRequest implements [coordinator.CacheMetrics].
func (m *Metrics) CacheRequest(agent, outcome string) {
	m.cache.WithLabelValues(m.agents.value(agent), outcome).Inc()
}

// RunCreated implements [coordinator.Metrics].
func (m *Metrics) RunCreated(agent string) {
	m.runsCreated.WithLabelValues(m.agents.value(agent)).Inc()
}

// RunClaimed implements [coordinator.Metrics].
func (m *Metrics) RunClaimed(_ string, latency time.Duration) {
	m.dispatch.Observe(latency.Seconds())
}

// RunEnded implements [coordinator.Metrics].
func (m *Metrics) RunEnded(agent string, outcome orchestrator.RunStatus, d time.Duration) {
	agent = m.agents.value(agent)
	m.runsTotal.WithLabelValues(agent, string(outcome)).Inc()
	m.runDuration.WithLabelValues(agent, string(outcome)).Observe(d.Seconds())
}

// WebhookDelivery implements [coordinator.Metrics].
func (m *Metrics) WebhookDelivery(outcome string) { m.webhooks.WithLabelValues(outcome).Inc() }

// RunRetried implements [coordinator.RetryMetrics].
func (m *Metrics) RunRetried(agent, reason string) {
	m.retries.WithLabelValues(m.agents.value(agent), reason).Inc()
}

// Callback implements [coordinator.Metrics].
func (m *Metrics) Callback(outcome string) { m.callbacks.WithLabelValues(outcome).Inc() }

// Rerun implements [coordinator.RerunMetrics].
func (m *Metrics) Rerun(agent string) { m.reruns.WithLabelValues(m.agents.value(agent)).Inc() }

// StoreTx implements [coordinator.Metrics].
func (m *Metrics) StoreTx(op string, d time.Duration) {
	m.storeTx.WithLabelValues(op).Observe(d.Seconds())
}

// SlotsBusy implements [runner.Metrics].
func (m *Metrics) SlotsBusy(n int) {
	m.slotsOnce.Do(func() { m.reg.MustRegister(m.slotsBusy) })
	m.slotsBusy.Set(float64(n))
}
