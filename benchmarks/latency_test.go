package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// BenchmarkIdleDispatch measures, on an idle system, how long a run takes from its creation to its
// subprocess starting: the run is created through the HTTP API, the runner's parked long-poll is woken,
// it claims the run and spawns a program that prints the time it started running. Latency = that moment −
// the run's created_at (same clock). Runs are sequential, one at a time; p50 and p99 are reported in ms.
//
// Two programs: a static C program (built with cc when one is installed) whose main prints the clock at
// once, and `date +%s%N`, whose figure also includes about 0.8 ms of its own start-up (dynamic loading,
// locale) before it reads the clock. claimed-p50-ms is the first leg alone: created_at to claimed_at.
// bare-spawn-p50-ms is what the same program takes from exec.Command to its clock when the benchmark
// process spawns it itself, once after each run: the part of the latency that is the machine's.
func BenchmarkIdleDispatch(b *testing.B) {
	programs := []struct{ name, command string }{{"date", "date +%s%N"}}
	if clock, err := buildClock(b.TempDir()); err == nil {
		programs = append([]struct{ name, command string }{{"static-clock", clock}}, programs...)
	} else {
		b.Logf("no static clock program (%v): measuring with date only", err)
	}
	for _, p := range programs {
		b.Run(p.name, func(b *testing.B) {
			sys := startCoordinator(b, coordinator.Config{})
			startRunner(b, sys.url, 4, blueprint("clock", p.command))
			c := client(b, sys.url)
			ctx := context.Background()
			var lat, toClaim, bare []time.Duration
			b.ResetTimer()
			for range b.N {
				res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "clock"})
				if err != nil {
					b.Fatal(err)
				}
				s, err := c.WaitSession(ctx, res.SessionID, time.Minute)
				if err != nil || s.Status != orchestrator.SessionCompleted {
					b.Fatalf("session %s: %+v %v", res.SessionID, s, err)
				}
				run, err := c.GetRun(ctx, res.RunID)
				if err != nil {
					b.Fatal(err)
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(s.Result.ResultText), 10, 64)
				if err != nil {
					b.Fatalf("clock output %q: %v", s.Result.ResultText, err)
				}
				lat = append(lat, time.Unix(0, ns).Sub(run.CreatedAt))
				if run.ClaimedAt != nil {
					toClaim = append(toClaim, run.ClaimedAt.Sub(run.CreatedAt))
				}
				bare = append(bare, spawnLatency(b, p.command))
			}
			b.StopTimer()
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			// The first leg: the creation's commit, the wake-up of the parked poll and the claim's reads,
			// up to the moment the claim stamps claimed_at (before its own commit).
			b.ReportMetric(ms(percentile(toClaim, 50)), "claimed-p50-ms")
			b.ReportMetric(ms(percentile(bare, 50)), "bare-spawn-p50-ms")
		})
	}
}

// spawnLatency runs command (split on spaces) straight from this process and returns the time from just
// before the spawn to the clock the program prints.
func spawnLatency(b *testing.B, command string) time.Duration {
	args := strings.Fields(command)
	began := time.Now()
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		b.Fatalf("%s: %v", command, err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("%s printed %q: %v", command, out, err)
	}
	return time.Unix(0, ns).Sub(began)
}

// buildClock compiles a static C program that prints the wall clock in nanoseconds the moment it runs.
func buildClock(dir string) (string, error) {
	src := filepath.Join(dir, "clock.c")
	bin := filepath.Join(dir, "clock")
	code := "#include <stdio.h>\n#include <time.h>\nint main(void){struct timespec t;clock_gettime(CLOCK_REALTIME,&t);" +
		"printf(\"%lld%09ld\\n\",(long long)t.tv_sec,t.tv_nsec);return 0;}\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("cc", "-O2", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("cc: %v: %s", err, out)
	}
	return bin, nil
}

// BenchmarkStopLatency measures how long a stop takes from the request (POST /sessions/{id}/stop) until
// the run's process is gone: the agent is `sleep 300` behind a shell that first writes its pid to stderr
// (the stderr event tells the benchmark which process to watch). p50 and p99 in ms.
func BenchmarkStopLatency(b *testing.B) {
	sys := startCoordinator(b, coordinator.Config{})
	startRunner(b, sys.url, 4, blueprint("sleeper", `sh -c 'echo $$ >&2; exec sleep 300'`))
	c := client(b, sys.url)
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "sleeper"})
		if err != nil {
			b.Fatal(err)
		}
		pid := waitPid(b, c, res.SessionID)
		began := time.Now()
		if _, err := c.StopSession(ctx, res.SessionID); err != nil {
			b.Fatal(err)
		}
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Since(began) > 30*time.Second {
				b.Fatalf("process %d still alive 30s after the stop", pid)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(began))
		if s, err := c.WaitSession(ctx, res.SessionID, time.Minute); err != nil || s.Status != orchestrator.SessionStopped {
			b.Fatalf("session after stop: %+v %v", s, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
}

// waitPid follows the session's events until the agent's stderr line with its pid arrives.
func waitPid(b *testing.B, c orchestrator.Coordinator, sessionID string) int {
	b.Helper()
	var after int64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := c.ListEvents(context.Background(), sessionID, after, 100, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range evs {
			after = e.Seq
			if e.Type != orchestrator.EventStderr {
				continue
			}
			var d struct{ Line string }
			if json.Unmarshal(e.Data, &d) == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(d.Line)); err == nil {
					return pid
				}
			}
		}
	}
	b.Fatal("no pid on stderr")
	return 0
}

// zombie reports whether pid has exited but not been reaped (it counts as gone).
func zombie(pid int) bool {
	data, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, syscall.ENOENT)
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
