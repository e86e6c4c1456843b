package benchmarks

import (
	"context"
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
	"github.com/agentorchestrator/orchestrator/internal/testkit"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// build compiles a package of this module into dir and returns the binary's path.
func build(tb testing.TB, dir, pkg string) string {
	tb.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// startProcess starts a binary in its own process group and kills the group when the benchmark ends.
func startProcess(tb testing.TB, bin string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = dieWithTest(&syscall.SysProcAttr{Setpgid: true})
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

func writeBlueprint(tb testing.TB, dir string, b *orchestrator.Blueprint) {
	tb.Helper()
	data := `{"name":"` + b.Name + `","command":` + strconv.Quote(b.Command) + `}`
	if err := os.WriteFile(filepath.Join(dir, b.Name+".json"), []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// waitRegistered waits until n runners are online.
func waitRegistered(tb testing.TB, c orchestrator.Coordinator, n int) {
	tb.Helper()
	testkit.WaitFor(tb, 30*time.Second, fmt.Sprintf("%d runners to be online", n), func() bool {
		rs, err := c.ListRunners(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		online := 0
		for _, r := range rs {
			if r.Status == orchestrator.RunnerOnline {
				online++
			}
		}
		return online >= n
	})
}

// BenchmarkIdleRunnerRSS measures the resident memory of the examples/runner binary, registered with a
// coordinator and idle (parked in its long-poll) for two seconds, as the kernel reports it (VmRSS).
func BenchmarkIdleRunnerRSS(b *testing.B) {
	sys := startCoordinator(b, coordinator.Config{})
	bin := build(b, b.TempDir(), "./examples/runner")
	dir := b.TempDir()
	writeBlueprint(b, dir, blueprint("true", "/bin/true"))
	var rss float64
	for i := range b.N {
		cmd := startProcess(b, bin, "-coordinator", sys.url, "-blueprints-dir", dir, "-project-dir", dir,
			"-hostname", "rss-"+strconv.Itoa(i))
		waitRegistered(b, sys.coord, i+1)
		time.Sleep(2 * time.Second) // idle: what an idle runner holds, not a start-up peak
		rss = max(rss, vmRSS(b, cmd.Process.Pid))
	}
	b.ReportMetric(rss, "MB-rss")
}

func vmRSS(tb testing.TB, pid int) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

// BenchmarkFailureDetection measures how long after a runner dies (SIGKILL, mid-run) its running session
// is failed with "Runner disconnected during execution", next to the configured offline threshold
// (-offline-after 1s, heartbeat every 200ms). Reported: p50/p99 of kill → failed, in ms.
func BenchmarkFailureDetection(b *testing.B) {
	const offline = time.Second
	sys := startCoordinator(b, coordinator.Config{HeartbeatInterval: 200 * time.Millisecond,
		StaleAfter: 600 * time.Millisecond, OfflineAfter: offline, SweepInterval: 100 * time.Millisecond})
	bin := build(b, b.TempDir(), "./examples/runner")
	c := client(b, sys.url)
	ctx := context.Background()
	var lat []time.Duration
	for i := range b.N {
		dir := b.TempDir()
		writeBlueprint(b, dir, blueprint("sleeper", `sh -c 'echo $$ >&2; exec sleep 300'`))
		cmd := startProcess(b, bin, "-coordinator", sys.url, "-blueprints-dir", dir, "-project-dir", dir,
			"-hostname", "fd-"+strconv.Itoa(i))
		waitRegistered(b, sys.coord, 1)
		res, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "sleeper"})
		if err != nil {
			b.Fatal(err)
		}
		pid := waitPid(b, c, res.SessionID)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		killed := time.Now()
		_ = cmd.Wait()
		_ = syscall.Kill(pid, syscall.SIGKILL) // the orphaned agent, in its own group
		s, err := c.WaitSession(ctx, res.SessionID, time.Minute)
		if err != nil || s.Status != orchestrator.SessionFailed || s.Error != "Runner disconnected during execution" {
			b.Fatalf("session after the runner died: %+v %v", s, err)
		}
		lat = append(lat, time.Since(killed))
	}
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(offline), "threshold-ms")
}
