package benchmarks

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/endcount"
)

// BenchmarkBinTrue runs /bin/true as a deterministic agent end to end over HTTP — clients POST /runs
// (async) to a coordinator on loopback, a runner on the HTTP client claims the runs and spawns the
// subprocesses and reports; the clock stops when every run has completed — and, in the same run, the
// raw rate at which this machine spawns /bin/true with the same concurrency, measured first: the path's
// runs/s is also reported as a fraction of it (x-raw-spawn).
//
// Both report the CPU per run of the benchmark process (cpu-µs/run) and of its reaped children
// (child-cpu-µs/run: the subprocesses' own start-up and exit, which the kernel charges to them). The
// orchestrator's overhead-cpu-µs/run is its process's CPU per run less the raw spawner's per spawn: what
// the coordinator, the runner and the clients cost beyond starting the process. The cost of a spawn
// changes several-fold from one day to the next on a shared VM, this overhead much less, so x-raw-spawn
// moves with the day: where both are bound by CPU it is about spawn / (spawn + overhead), spawn being the
// raw spawner's CPU per spawn, its children's included.
// BENCH_PENDING_REPORTS sets the runner's MaxPendingReports (-1: a slot is held until its report is
// recorded). BENCH_PRODUCERS (default 16) and BENCH_CONCURRENCY (default 32: the runner's slots and the raw
// spawners) change the load. The defaults saturate the path (4 producers and 8 slots, the defaults until
// 2026-11-25, left the runner's slots waiting on round trips: 67 – 70% of the raw rate against 74 – 77%).
func BenchmarkBinTrue(b *testing.B) {
	concurrency := envInt("BENCH_CONCURRENCY", 32)
	var rawRate, rawCPU float64 // the raw spawn rate and CPU per spawn, measured first
	b.Run("raw-spawn", func(b *testing.B) {
		cpu := startCPU()
		began := time.Now()
		var wg sync.WaitGroup
		next := make(chan struct{})
		for range concurrency {
			wg.Go(func() {
				for range next {
					if err := exec.Command("/bin/true").Run(); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for range b.N {
			next <- struct{}{}
		}
		close(next)
		wg.Wait()
		rawRate = float64(b.N) / time.Since(began).Seconds()
		b.ReportMetric(rawRate, "spawns/s")
		rawCPU, _ = cpu.report(b)
	})
	// Ends are counted as e2e/scaleout's benchmarks and the River comparison count them, through the
	// coordinator's Metrics hook once committed (see internal/testkit/endcount): the raw spawner reads nothing back
	// either. orchestrator-read-back waits for every session over HTTP instead, a GET per run, as this
	// benchmark did until 2026-11-26.
	for _, readBack := range []bool{false, true} {
		name := "orchestrator"
		if readBack {
			name = "orchestrator-read-back"
		}
		b.Run(name, func(b *testing.B) {
			ends := &endcount.Counter{}
			sys := startCoordinator(b, coordinator.Config{Metrics: ends})
			startRunner(b, sys.url, concurrency, blueprint("true", "/bin/true"))
			ctx := context.Background()
			producers := envInt("BENCH_PRODUCERS", 16)
			ids := make([]string, b.N)
			b.ResetTimer()
			allEnded := ends.Arm(b.N)
			cpu := startCPU()
			began := time.Now()
			var wg sync.WaitGroup
			for p := range producers {
				c := client(b, sys.url)
				wg.Go(func() {
					for i := p; i < b.N; i += producers {
						res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "true"})
						if err != nil {
							b.Error(err)
							return
						}
						ids[i] = res.SessionID
					}
				})
			}
			wg.Wait()
			if readBack {
				c := client(b, sys.url)
				for _, id := range ids {
					s, err := c.WaitSession(ctx, id, time.Minute)
					if err != nil || s.Status != orchestrator.SessionCompleted {
						b.Fatalf("session %s: %+v %v", id, s, err)
					}
				}
			} else {
				select {
				case <-allEnded:
				case <-time.After(time.Minute):
					n, _ := ends.Counted()
					b.Fatalf("%d of %d runs ended after a minute", n, b.N)
				}
			}
			rate := float64(b.N) / time.Since(began).Seconds()
			b.ReportMetric(rate, "runs/s")
			self, _ := cpu.report(b)
			if rawRate > 0 {
				b.ReportMetric(rate/rawRate, "x-raw-spawn")
				b.ReportMetric(self-rawCPU, "overhead-cpu-µs/run")
			}
			b.StopTimer()
			if _, failed := ends.Counted(); failed > 0 {
				b.Fatalf("%d runs did not complete", failed)
			}
			if n, err := sys.store.CountRuns(ctx, orchestrator.RunCompleted); err != nil || n != b.N {
				b.Fatalf("%d of %d runs completed in the store (%v)", n, b.N, err)
			}
		})
	}
}
