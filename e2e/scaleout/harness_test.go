package scaleout

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
)

// postgresEnv names the PostgreSQL server the tests use.
const postgresEnv = "ORCHESTRATOR_TEST_POSTGRES_URL"

func requirePostgres(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		tb.Skipf("scale-out tests skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them", postgresEnv)
	}
	return dsn
}

// postgresSchema creates a schema for the test (dropped when it ends, after the processes that use it
// were stopped: register it before starting them) and returns a DSN whose search_path selects it — the
// isolation store/sqlstore's own tests use.
func postgresSchema(tb testing.TB) string {
	tb.Helper()
	return pgtest.Schema(tb, requirePostgres(tb), "scaleout")
}

// binaries builds the example coordinator and runner and the test agent once per test binary.
var binaries = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp("", "scaleout-bin-")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, pkg := range map[string]string{
		"coordinator": "github.com/agentorchestrator/orchestrator/examples/coordinator",
		"runner":      "github.com/agentorchestrator/orchestrator/examples/runner",
		"appendagent": "github.com/agentorchestrator/orchestrator/e2e/scaleout/internal/appendagent",
	} {
		path := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", path, pkg)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
		out[name] = path
	}
	binDir = dir
	return out, nil
})

var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func bin(tb testing.TB, name string) string {
	tb.Helper()
	bins, err := binaries()
	if err != nil {
		tb.Fatal(err)
	}
	return bins[name]
}

// proc is a process the test started; it is stopped when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func start(tb testing.TB, name, path string, args ...string) *proc {
	tb.Helper()
	logPath := filepath.Join(tb.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWithTest(&syscall.SysProcAttr{})
	if err := cmd.Start(); err != nil {
		f.Close()
		tb.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stop(5 * time.Second)
		if tb.Failed() {
			tb.Logf("--- %s log (last lines) ---\n%s", name, p.tail(40))
		}
	})
	return p
}

// stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var listeningRE = regexp.MustCompile(`msg="coordinator listening" addr=(\S+)`)

// startCoordinator starts an example coordinator on a free loopback port and returns it with its URL.
func startCoordinator(tb testing.TB, name, dsn string, extra ...string) (*proc, string) {
	tb.Helper()
	args := append([]string{"-addr", "127.0.0.1:0", "-db", dsn}, extra...)
	p := start(tb, name, bin(tb, "coordinator"), args...)
	var url string
	if !testkit.Until(30*time.Second, func() bool {
		b, _ := os.ReadFile(p.log)
		if m := listeningRE.FindSubmatch(b); m != nil {
			url = "http://" + string(m[1])
			return true
		}
		select {
		case <-p.done:
			tb.Fatalf("%s exited before listening:\n%s", name, p.tail(40))
		default:
		}
		return false
	}) {
		tb.Fatalf("%s did not listen within 30s:\n%s", name, p.tail(40))
	}
	return p, url
}

// readLines returns the lines of a file (none when it does not exist).
func readLines(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
