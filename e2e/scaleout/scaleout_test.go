package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

// maxWakeLatency bounds created → claimed for a run created through one coordinator for a runner parked on
// the other: the NOTIFY, the claim, the poll response, the start report.
const maxWakeLatency = 500 * time.Millisecond

// TestTwoCoordinators runs two coordinator processes on one PostgreSQL schema, a runner parked on each
// (given both URLs, its own first) with an agent of its own, and clients sending runs through both:
//
//  1. a run created through one coordinator for the runner parked on the other starts within
//     maxWakeLatency (LISTEN/NOTIFY; without it the runner would sleep through its 30 s poll);
//  2. under load through both, every run completes exactly once (the agent logs AGENT_RUN_ID);
//  3. one coordinator is SIGKILLed under load: every run a coordinator acknowledged (201) completes, none
//     twice, and the killed coordinator's runner carries on through the other.
func TestTwoCoordinators(t *testing.T) {
	dsn := postgresSchema(t)
	work := t.TempDir()
	flags := []string{"-heartbeat-interval", "1s", "-stale-after", "5s", "-offline-after", "10s", "-redeliver-after", "2s"}
	coordA, urlA := startCoordinator(t, "coordinator-a", dsn, flags...)
	coordB, urlB := startCoordinator(t, "coordinator-b", dsn, flags...)
	t.Logf("coordinators at %s and %s", urlA, urlB)

	logs := map[string]string{"append-a": filepath.Join(work, "runs-a.log"), "append-b": filepath.Join(work, "runs-b.log")}
	startRunner(t, "runner-a", "append-a", logs["append-a"], urlA+","+urlB, work)
	startRunner(t, "runner-b", "append-b", logs["append-b"], urlB+","+urlA, work)

	clientA, clientB := newClient(t, urlA), newClient(t, urlB)
	waitAgents(t, clientB, "append-a", "append-b")

	// 1. Wake-ups across coordinators.
	t.Log("phase 1: runs created through one coordinator for the runner parked on the other")
	var lat []time.Duration
	for i := range 10 {
		for _, tc := range []struct {
			agent string
			via   *httpapi.Client
		}{{"append-a", clientB}, {"append-b", clientA}} {
			// The runner is parked: it polls again as soon as a poll hands it a run (it has eight slots),
			// before it executes the run, so it has long been parked when the previous session ends.
			res, err := tc.via.StartRun(t.Context(), orchestrator.StartRunParams{AgentName: tc.agent, Parameters: json.RawMessage(`{"sleep_ms":0}`)})
			if err != nil {
				t.Fatalf("StartRun %s: %v", tc.agent, err)
			}
			s, err := tc.via.WaitSession(t.Context(), res.SessionID, 30*time.Second)
			if err != nil || s.Status != orchestrator.SessionCompleted {
				t.Fatalf("run %d of %s: session %+v, %v", i, tc.agent, s, err)
			}
			run, err := tc.via.GetRun(t.Context(), res.RunID)
			if err != nil || run.ClaimedAt == nil {
				t.Fatalf("GetRun: %+v, %v", run, err)
			}
			// Claimed is when the woken runner took the run (a run this short is never reported started:
			// runner.Config.StartedDelay).
			d := run.ClaimedAt.Sub(run.CreatedAt)
			lat = append(lat, d)
			if d > maxWakeLatency {
				t.Errorf("%s created through the other coordinator was claimed after %s, want ≤ %s", tc.agent, d, maxWakeLatency)
			}
		}
	}
	t.Logf("created → claimed across coordinators: %s", summary(lat))

	// 2. Load through both coordinators.
	t.Log("phase 2: load through both coordinators")
	acked := produce(t, []*httpapi.Client{clientA, clientB}, 8, 300, 0, nil)
	waitTerminal(t, clientB, acked, 90*time.Second)
	checkExactlyOnce(t, []*httpapi.Client{clientB}, acked, logs)

	// 3. SIGKILL one coordinator under load. Clients, like runners, are given both URLs.
	t.Log("phase 3: coordinator A killed under load")
	failA, failB := newClient(t, urlA+","+urlB), newClient(t, urlB+","+urlA)
	var killedAt atomic.Int64
	kill := func() {
		coordA.kill()
		killedAt.Store(time.Now().UnixNano())
		t.Logf("coordinator A killed")
	}
	acked3 := produce(t, []*httpapi.Client{failA, failB}, 8, 0, 4*time.Second, &killSpec{after: 1500 * time.Millisecond, kill: kill})
	if killedAt.Load() == 0 {
		t.Fatal("coordinator A was not killed")
	}
	waitTerminal(t, clientB, acked3, 120*time.Second)
	checkExactlyOnce(t, []*httpapi.Client{clientB}, acked3, logs)

	// The killed coordinator's runner carried on through the other: its runs created after the kill ran,
	// and it is still online.
	killed := time.Unix(0, killedAt.Load())
	var after []time.Duration
	for _, a := range acked3 {
		if a.agent != "append-a" {
			continue
		}
		run, err := clientB.GetRun(t.Context(), a.runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.CreatedAt.After(killed.Add(100*time.Millisecond)) && run.ClaimedAt != nil {
			after = append(after, run.ClaimedAt.Sub(run.CreatedAt))
		}
	}
	if len(after) == 0 {
		t.Error("runner A ran nothing created after its coordinator was killed")
	}
	t.Logf("runner A after the kill, under load (queueing included): %d runs, created → claimed %s", len(after), summary(after))
	// Idle again, runner A (now parked on B) starts a new run at once, whichever URL the client used.
	var idle []time.Duration
	for _, c := range []*httpapi.Client{clientB, failA, clientB, failA, clientB} {
		res, err := c.StartRun(t.Context(), orchestrator.StartRunParams{AgentName: "append-a", Parameters: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatalf("StartRun after the kill: %v", err)
		}
		if s, err := c.WaitSession(t.Context(), res.SessionID, 30*time.Second); err != nil || s.Status != orchestrator.SessionCompleted {
			t.Fatalf("run after the kill: %+v, %v", s, err)
		}
		run, err := c.GetRun(t.Context(), res.RunID)
		if err != nil || run.ClaimedAt == nil {
			t.Fatalf("GetRun: %+v, %v", run, err)
		}
		idle = append(idle, run.ClaimedAt.Sub(run.CreatedAt))
		if d := run.ClaimedAt.Sub(run.CreatedAt); d > maxWakeLatency {
			t.Errorf("a run for runner A after the kill was claimed after %s", d)
		}
	}
	t.Logf("runner A after the kill, idle: created → claimed %s", summary(idle))
	if b, err := os.ReadFile(coordB.log); err == nil {
		t.Logf("coordinator B redelivered %d claimed runs (poll responses lost with A)", strings.Count(string(b), "redelivering a claimed run"))
	}
	runners, err := clientB.ListRunners(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runners {
		if r.Status != orchestrator.RunnerOnline {
			t.Errorf("runner %s (%s) is %s after the kill, want online", r.ID, r.Hostname, r.Status)
		}
	}
}

func startRunner(t *testing.T, name, agent, logPath, urls, work string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "blueprints")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bp := map[string]any{
		"name":        agent,
		"description": "appends AGENT_RUN_ID to a log",
		"command":     fmt.Sprintf("%s --log %s", bin(t, "appendagent"), logPath),
		"parameters_schema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"sleep_ms": map[string]any{"type": "integer", "minimum": 0}},
		},
	}
	b, _ := json.Marshal(bp)
	if err := os.WriteFile(filepath.Join(dir, agent+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, name, bin(t, "runner"), "-coordinator", urls, "-blueprints-dir", dir, "-hostname", "host-"+name,
		"-project-dir", work, "-max-concurrent", "8", "-shutdown-grace", "2s")
}

func newClient(t *testing.T, urls string) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(urls, httpapi.ClientConfig{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitAgents waits until the coordinator lists every agent.
func waitAgents(t *testing.T, c *httpapi.Client, names ...string) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("agents %v to be registered", names), func() bool {
		agents, err := c.ListAgents(t.Context(), orchestrator.ListAgentsParams{})
		if err != nil {
			return false
		}
		have := 0
		for _, a := range agents {
			if slices.Contains(names, a.Name) {
				have++
			}
		}
		return have == len(names)
	})
}

// ack is a run a coordinator acknowledged (201).
type ack struct {
	runID, agent string
}

type killSpec struct {
	after time.Duration
	kill  func()
}

// produce sends runs from workers goroutines, each through clients[i%len], alternating the two agents:
// total runs, or (total 0) for the duration. It returns the runs acknowledged; a StartRun that failed
// (its coordinator died) is not acknowledged and not returned. ks, when set, is called after ks.after.
func produce(t *testing.T, clients []*httpapi.Client, workers, total int, duration time.Duration, ks *killSpec) []ack {
	t.Helper()
	var (
		mu     sync.Mutex
		acked  []ack
		failed int
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	stopAt := time.Now().Add(duration)
	if ks != nil {
		time.AfterFunc(ks.after, ks.kill)
	}
	for w := range workers {
		wg.Go(func() {
			c := clients[w%len(clients)]
			for {
				i := int(next.Add(1)) - 1
				if total > 0 && i >= total || total == 0 && time.Now().After(stopAt) {
					return
				}
				agent := []string{"append-a", "append-b"}[i%2]
				res, err := c.StartRun(context.Background(), orchestrator.StartRunParams{
					AgentName: agent, Parameters: json.RawMessage(`{"sleep_ms":20}`),
				})
				mu.Lock()
				if err != nil {
					failed++
				} else {
					acked = append(acked, ack{res.RunID, agent})
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if ks != nil && duration < ks.after {
		t.Fatal("the load ended before the kill")
	}
	t.Logf("%d runs acknowledged, %d StartRun calls failed", len(acked), failed)
	if total > 0 && failed > 0 {
		t.Errorf("%d StartRun calls failed with both coordinators up", failed)
	}
	return acked
}

// waitTerminal waits until every run has ended.
func waitTerminal(t *testing.T, c *httpapi.Client, acked []ack, timeout time.Duration) {
	t.Helper()
	testkit.WaitForState(t, timeout, "every run to end", func() (bool, string) {
		open, err := c.ListRuns(t.Context(), orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{
			orchestrator.RunPending, orchestrator.RunClaimed, orchestrator.RunRunning}})
		return err == nil && len(open) == 0, fmt.Sprintf("%d runs open (%v)", len(open), err)
	})
}

// checkExactlyOnce checks that every acknowledged run completed and its agent logged it exactly once, and
// that no run at all was executed twice.
func checkExactlyOnce(t *testing.T, clients []*httpapi.Client, acked []ack, logs map[string]string) {
	t.Helper()
	count := map[string]int{}
	for _, path := range logs {
		for _, id := range readLines(t, path) {
			count[id]++
		}
	}
	for id, n := range count {
		if n > 1 {
			t.Errorf("run %s executed %d times", id, n)
		}
	}
	c := clients[0]
	bad := 0
	for _, a := range acked {
		run, err := c.GetRun(t.Context(), a.runID)
		if err != nil {
			t.Errorf("GetRun %s: %v", a.runID, err)
			continue
		}
		if run.Status != orchestrator.RunCompleted || count[a.runID] != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("acknowledged run %s (%s): status %s (%s), executed %d times", a.runID, a.agent, run.Status, run.Error, count[a.runID])
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d acknowledged runs in all did not complete exactly once", bad)
	}
	t.Logf("%d acknowledged runs checked; %d executions logged in all", len(acked), len(count))
}

// summary renders min / median / p95 / max.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("n=%d min %s median %s p95 %s max %s", len(s), s[0].Round(time.Microsecond),
		q(0.5).Round(time.Microsecond), q(0.95).Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
}
