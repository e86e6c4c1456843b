package prommetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/prommetrics"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// clock is the coordinator's clock, moved by hand so that every latency and duration is known exactly.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestScrape runs a known set of runs — two completed, one failed, one child calling its parent back,
// one webhook — through a coordinator on a hand-moved clock, scrapes GET /metrics as Prometheus would,
// and checks every counter, gauge and histogram count and sum exactly.
func TestScrape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(receiver.Close)

	m := prommetrics.New()
	clk := &clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	c, err := coordinator.New(coordinator.Config{
		Store: store, Metrics: m, Now: clk.Now,
		WebhookSecret: []byte("test-secret"), WebhookAllowHosts: []string{"127.0.0.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.WatchCoordinator(c)
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "planner"}); err != nil {
		t.Fatal(err)
	}
	reg, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "h", ProjectDir: "/w", ExecutorType: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	start := func(p orchestrator.StartRunParams) *orchestrator.StartRunResult {
		t.Helper()
		p.AgentName, p.Prompt = "planner", "go"
		res, err := c.StartRun(ctx, p)
		if err != nil {
			t.Fatalf("StartRun: %v", err)
		}
		return res
	}
	claim := func(runID string) {
		t.Helper()
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1})
		if err != nil || len(w.Runs) != 1 || w.Runs[0].Run.ID != runID {
			t.Fatalf("PollWork = %+v, %v; want run %s", w, err, runID)
		}
	}
	end := func(runID string, status orchestrator.RunStatus) {
		t.Helper()
		if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: runID, Status: status,
			Result: &orchestrator.Result{ResultText: "done"}}); err != nil {
			t.Fatalf("ReportRun(%s, %s): %v", runID, status, err)
		}
	}

	// a: created, claimed 1s later, completed 2s after that (3s in all).
	a := start(orchestrator.StartRunParams{})
	clk.Advance(time.Second)
	claim(a.RunID)
	clk.Advance(2 * time.Second)
	end(a.RunID, orchestrator.RunCompleted)
	// b: claimed 2s after its creation, failed 4s after that (6s), with a webhook.
	b := start(orchestrator.StartRunParams{CallbackURL: receiver.URL + "/hook"})
	clk.Advance(2 * time.Second)
	claim(b.RunID)
	clk.Advance(4 * time.Second)
	end(b.RunID, orchestrator.RunFailed)
	c.DeliverWebhooks(ctx)
	// child: a's child in async_callback mode, claimed at once, completed 1s later; its end calls a back,
	// which queues a resume of a that stays pending.
	child := start(orchestrator.StartRunParams{Mode: orchestrator.ModeAsyncCallback, ParentSessionID: a.SessionID})
	claim(child.RunID)
	clk.Advance(time.Second)
	end(child.RunID, orchestrator.RunCompleted)

	tokens := map[string]httpapi.Role{"scrape-token": httpapi.RoleMetrics, "client-token": httpapi.RoleClient}
	api := httpapi.NewHandler(c, httpapi.Config{Tokens: tokens, Metrics: m.Handler()})
	for tok, want := range map[string]int{"": 401, "client-token": 403} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		api.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("GET /metrics with token %q: %d, want %d", tok, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer scrape-token")
	api.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, rec.Body)
	}

	// Counters and gauges: name{labels} → value.
	want := map[string]float64{
		`orchestrator_runs_created_total{agent="planner"}`:                             4, // a, b, child, a's resume
		`orchestrator_runs_total{agent="planner",outcome="completed"}`:                 2,
		`orchestrator_runs_total{agent="planner",outcome="failed"}`:                    1,
		`orchestrator_runs_pending`:                                                    1, // a's resume
		`orchestrator_runners_online`:                                                  1,
		`orchestrator_webhook_deliveries_total{outcome="delivered"}`:                   1,
		`orchestrator_callbacks_total{outcome="recorded"}`:                             1,
		`orchestrator_callbacks_total{outcome="delivered"}`:                            1,
		`orchestrator_dispatch_latency_seconds_count`:                                  3,
		`orchestrator_dispatch_latency_seconds_sum`:                                    3, // 1 + 2 + 0
		`orchestrator_run_duration_seconds_count{agent="planner",outcome="completed"}`: 2,
		`orchestrator_run_duration_seconds_sum{agent="planner",outcome="completed"}`:   4, // 3 + 1
		`orchestrator_run_duration_seconds_count{agent="planner",outcome="failed"}`:    1,
		`orchestrator_run_duration_seconds_sum{agent="planner",outcome="failed"}`:      6,
		`orchestrator_store_tx_seconds_count{op="start_run"}`:                          3,
		`orchestrator_store_tx_seconds_count{op="claim"}`:                              3,
		`orchestrator_store_tx_seconds_count{op="run_end"}`:                            3,
	}
	got := flatten(families)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// Nothing else of ours: no outcome, agent or op that the runs above did not cause.
	for k, v := range got {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "orchestrator_") && !strings.Contains(k, "_bucket") &&
			!strings.HasPrefix(k, "orchestrator_store_tx_seconds") {
			t.Errorf("unexpected %s = %v", k, v)
		}
	}
	// The dispatch latencies fall into their buckets: 0s, 1s and 2s.
	for le, n := range map[string]float64{"0.0005": 1, "1": 2, "2.5": 3} {
		k := `orchestrator_dispatch_latency_seconds_bucket{le="` + le + `"}`
		if got[k] != n {
			t.Errorf("%s = %v, want %v", k, got[k], n)
		}
	}
}

// flatten turns the parsed families into "name{label="value",…}" → value, histograms as _count, _sum
// and _bucket{le=…} series.
func flatten(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := func(suffix string, extra ...string) string {
				ls := append(append([]string(nil), labels...), extra...)
				if len(ls) == 0 {
					return name + suffix
				}
				return name + suffix + "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key("")] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key("")] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				out[key("_count")] = float64(h.GetSampleCount())
				out[key("_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[key("_bucket", `le="`+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)+`"`)] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// Past MaxAgentLabels distinct agent names, new names are counted as "other": the series stay bounded and
// the totals stay right.
func TestAgentLabelsBounded(t *testing.T) {
	m := prommetrics.New()
	for i := range prommetrics.MaxAgentLabels + 50 {
		m.RunCreated(fmt.Sprintf("agent-%d", i))
	}
	m.RunCreated("agent-0") // admitted before the bound: still its own series
	m.Usage("agent-9999", "model-x", orchestrator.Usage{InputTokens: 7})
	text := scrape(t, m)
	if n := strings.Count(text, "orchestrator_runs_created_total{"); n != prommetrics.MaxAgentLabels+1 {
		t.Errorf("%d runs_created series, want %d (the admitted names and other)", n, prommetrics.MaxAgentLabels+1)
	}
	for _, want := range []string{
		`orchestrator_runs_created_total{agent="other"} 50`,
		`orchestrator_runs_created_total{agent="agent-0"} 2`,
		`orchestrator_tokens_total{agent="other",kind="input",model="model-x"} 7`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

// scrape returns m's metrics in the text format.
func scrape(t *testing.T, m *prommetrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}
