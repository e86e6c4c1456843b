//go:build linux

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	// binDir holds the binaries TestMain built: coordinator, runner, ao-file-stats, ao-web-crawler,
	// testagent, echorunner, fakeclaude, ao.
	binDir string
	// buildErr is set when the build failed; every test then fails with it.
	buildErr error
	// coordinatorFlags are the flags the coordinator binary accepts (from its -h), so a test can use a flag
	// that is being added without breaking while it is not there yet.
	coordinatorFlags = map[string]bool{}
	// runMarker is in the environment of every process the tests start ("E2E_RUN=<value>"), so whatever
	// survives the whole run can be found and killed.
	runMarker string
)

// packages are built once per test binary, from the module root.
var packages = []string{
	"./examples/coordinator",
	"./examples/runner",
	"./examples/agents/...",
	"./e2e/internal/testagent",
	"./e2e/internal/echorunner",
	"./e2e/internal/fakeclaude",
	"./cmd/ao",
}

func TestMain(m *testing.M) {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "orchestrator-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = filepath.Join(tmp, "bin")
	runMarker = "E2E_RUN=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	buildErr = build()

	code := m.Run()

	// Every test kills its own processes and checks; this is the net under it.
	if left := killTagged(runMarker, 10*time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: processes survived the tests and were killed: %v\n", left)
		if code == 0 {
			code = 1
		}
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func build() error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the e2e tests build the binaries with the go command: %w", err)
	}
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "-o", binDir+string(filepath.Separator))
	args = append(args, packages...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = ".." // the module root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, out.String())
	}
	for _, name := range []string{"coordinator", "runner", "ao-file-stats", "ao-web-crawler", "testagent", "echorunner", "fakeclaude", "ao"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return fmt.Errorf("build did not produce %s: %v", name, err)
		}
	}
	help, _ := exec.Command(filepath.Join(binDir, "coordinator"), "-h").CombinedOutput()
	for _, line := range strings.Split(string(help), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") {
			coordinatorFlags[strings.TrimPrefix(f[0], "-")] = true
		}
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: built %d packages (race=%v) in %s\n", len(packages), raceEnabled, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
