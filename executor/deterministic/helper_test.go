//go:build linux

package deterministic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/executortest"
	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// The tests run the test binary itself as the command (go-plugin's TestHelperProcess pattern): no shell,
// no scripts, every behaviour written in Go below.

const helperEnv = "GO_WANT_HELPER_PROCESS"

// TestHelperProcess is not a test: it is the child program, selected by helperEnv. Its mode and mode
// arguments come after "--", followed by the parameter flags the executor appended.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for the deterministic executor's tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(helperMain(args))
}

func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 64
	}
	mode, rest := args[0], args[1:]
	arg := func(i int) string {
		if i < len(rest) {
			return rest[i]
		}
		return ""
	}
	switch mode {
	case "echo": // stdin to stdout: the example echo-json
		_, _ = io.Copy(os.Stdout, os.Stdin)
	case "fail":
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, executortest.FailMessage)
		return 3
	case "stream":
		for i := 1; i <= executortest.StreamEvents; i++ {
			fmt.Fprintf(os.Stderr, "event %d\n", i)
		}
		_, _ = io.Copy(os.Stdout, os.Stdin)
	case "block":
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d\n", os.Getpid(), syscall.Getpgrp())
		proctest.SleepForever()
	case "ignoreterm": // ignores SIGTERM, so only SIGKILL ends it
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d\n", os.Getpid(), syscall.Getpgrp())
		proctest.SleepForever()
	case "grandchildren": // ignores SIGTERM and starts grandchildren that ignore it too, plus a plain sleep
		signal.Ignore(syscall.SIGTERM)
		self, _ := os.Executable()
		var pids []string
		for range 2 {
			c := exec.Command(self, "-test.run=^TestHelperProcess$", "--", "sleeper")
			c.Stdout, c.Stderr = os.Stdout, os.Stderr // the grandchildren hold the run's pipes open too
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "start sleeper:", err)
				return 1
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		c := exec.Command("sleep", "300")
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start sleep:", err)
			return 1
		}
		pids = append(pids, strconv.Itoa(c.Process.Pid))
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d children=%s\n", os.Getpid(), syscall.Getpgrp(), strings.Join(pids, ","))
		proctest.SleepForever()
	case "escape": // starts a grandchild in a new session (out of the group) that keeps the pipes open, then exits
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^TestHelperProcess$", "--", "sleeper")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start escapee:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d children=%d\n", os.Getpid(), syscall.Getpgrp(), c.Process.Pid)
		fmt.Println(`{"escaped":true}`)
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		proctest.SleepForever()
	case "fifo": // one line, then wait until the test writes to the FIFO, then another line
		fmt.Fprintln(os.Stderr, "first")
		f, err := os.Open(arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = io.Copy(io.Discard, f)
		fmt.Fprintln(os.Stderr, "second")
		fmt.Println(`{"done":true}`)
	case "env": // the named variables as a JSON object
		out := map[string]string{}
		for _, name := range strings.Split(arg(0), ",") {
			if v, ok := os.LookupEnv(name); ok {
				out[name] = v
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(out)
	case "args": // os.Args as a JSON array
		_ = json.NewEncoder(os.Stdout).Encode(os.Args)
	case "cwd":
		wd, _ := os.Getwd()
		_ = json.NewEncoder(os.Stdout).Encode(wd)
	case "flood": // n bytes of stdout
		n, _ := strconv.Atoi(arg(0))
		w := bufio.NewWriter(os.Stdout)
		for range n {
			_ = w.WriteByte('x')
		}
		_ = w.Flush()
	case "print":
		fmt.Print(arg(0))
	case "exit":
		n, _ := strconv.Atoi(arg(0))
		return n
	case "selfkill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		proctest.SleepForever()
	case "nostdin": // never reads stdin
		fmt.Println(`{"ok":true}`)
	case "longline": // one stderr line of n bytes, then a short one
		n, _ := strconv.Atoi(arg(0))
		fmt.Fprintln(os.Stderr, strings.Repeat("y", n))
		fmt.Fprintln(os.Stderr, "short")
	case "burst": // n lines in one write
		n, _ := strconv.Atoi(arg(0))
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		_, _ = os.Stderr.WriteString(b.String())
	case "chatty": // a ready line, then n lines one write at a time, then exit
		n, _ := strconv.Atoi(arg(0))
		fmt.Fprintf(os.Stderr, "ready pid=%d pgid=%d\n", os.Getpid(), syscall.Getpgrp())
		for i := range n {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
		}
	case "nonewline":
		fmt.Fprint(os.Stderr, "partial line")
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
		return 64
	}
	return 0
}

// helperCommand is a blueprint command that runs this test binary in the given helper mode.
func helperCommand(t testing.TB, mode ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	words := append([]string{self, "-test.run=^TestHelperProcess$", "--"}, mode...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// helperInvocation is an invocation of a helper-mode blueprint.
func helperInvocation(t testing.TB, params string, mode ...string) *orchestrator.Invocation {
	t.Helper()
	return &orchestrator.Invocation{
		Mode:      orchestrator.RunTypeStart,
		RunID:     ids.New(ids.Run),
		SessionID: ids.New(ids.Session),
		AgentName: "helper",
		Blueprint: &orchestrator.Blueprint{
			Name:    "helper",
			Type:    orchestrator.AgentTypeDeterministic,
			Command: helperCommand(t, mode...),
			Env:     helperEnvironment(),
		},
		Parameters: json.RawMessage(params),
	}
}

// helperEnvironment selects the helper and, in a -race build, spares each child the race runtime's 1s
// sleep at exit.
func helperEnvironment() map[string]string { return proctest.HelperEnvironment(helperEnv) }

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// readyInfo parses the "ready pid=… pgid=…" line a blocking helper writes first.
func readyInfo(t testing.TB, events []orchestrator.Event) (pgid int, children []int) {
	t.Helper()
	for _, ev := range events {
		var d struct{ Line string }
		_ = ev.DecodeData(&d)
		if !strings.HasPrefix(d.Line, "ready ") {
			continue
		}
		for _, f := range strings.Fields(d.Line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "pgid":
				pgid, _ = strconv.Atoi(v)
			case "children":
				for _, p := range strings.Split(v, ",") {
					n, _ := strconv.Atoi(p)
					children = append(children, n)
				}
			}
		}
		if pgid > 0 {
			return pgid, children
		}
	}
	t.Fatalf("no \"ready … pgid=N\" line among the events %v", events)
	return 0, nil
}
