// Package cli is ao, the command line for people: it lists agents, sessions and runners, starts runs and
// follows them live, shows their logs and results, stops and resumes sessions, and manages the registry's
// AI agents — all through a coordinator's HTTP API ([httpapi.Client]).
//
// The binary (cmd/ao) only calls [Main]; everything else is here, so it can be tested without a process:
// an [App] takes its standard streams, environment, coordinator and interrupts as values.
package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// DefaultURL is the coordinator ao talks to when neither --url nor ORCHESTRATOR_URL names one: the
// address the example coordinator and the quickstart listen on.
const DefaultURL = "http://127.0.0.1:8765"

// App is one ao invocation's world. The zero value of each field means the process's own.
type App struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (ORCHESTRATOR_URL, ORCHESTRATOR_TOKEN, NO_COLOR, TERM, COLUMNS).
	Getenv func(string) string
	// Connect returns the coordinator at url. Default: an [httpapi.Client].
	Connect func(url, token string) (orchestrator.Coordinator, error)
	// Interrupts delivers the interrupts (Ctrl-C) that ao run handles itself until stop is called.
	// Default: os.Interrupt through os/signal.
	Interrupts func() (ch <-chan os.Signal, stop func())
	// Terminal reports whether a stream is a terminal. Default: an *os.File that is a terminal.
	Terminal func(stream any) bool

	stdinOnce sync.Once
	stdin     *bufio.Reader
}

// Main runs ao with the process's arguments, streams and environment, and returns its exit code.
func Main() int {
	return (&App{}).Run(context.Background(), os.Args[1:])
}

// Run runs ao with args (without the program name) and returns its exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	a.defaults()
	e := &env{app: a}
	root := e.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	_, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") { // cobra's own, for a misspelt command
		err = &usageError{msg: err.Error()}
	}
	var silent *exitError // the command has said what it had to
	var msg bytes.Buffer
	if e.json {
		if !errors.As(err, &silent) {
			writeJSON(&msg, errorDocument(err))
		}
		io.WriteString(a.Stdout, e.redact(msg.String()))
	} else {
		reportError(&msg, err, e.url())
		io.WriteString(a.Stderr, e.redact(msg.String()))
	}
	return exitCode(err)
}

func (a *App) defaults() {
	if a.Stdin == nil {
		a.Stdin = os.Stdin
	}
	if a.Stdout == nil {
		a.Stdout = os.Stdout
	}
	if a.Stderr == nil {
		a.Stderr = os.Stderr
	}
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if a.Connect == nil {
		a.Connect = connectHTTP
	}
	if a.Interrupts == nil {
		a.Interrupts = func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt)
			return ch, func() { signal.Stop(ch) }
		}
	}
	if a.Terminal == nil {
		a.Terminal = func(stream any) bool {
			f, ok := stream.(interface{ Fd() uintptr })
			return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
		}
	}
}

// connectHTTP is the default Connect: an httpapi.Client that gives up on an unreachable coordinator
// within a few seconds (a person is waiting), where a runner's client keeps trying longer.
func connectHTTP(url, token string) (orchestrator.Coordinator, error) {
	return httpapi.NewClient(url, httpapi.ClientConfig{
		Token:        token,
		RetryMax:     2,
		RetryWaitMin: 100 * time.Millisecond,
		RetryWaitMax: time.Second,
		UserAgent:    "ao",
	})
}

// line reads one line from stdin (an answer to a question), without the line break.
func (a *App) line() (string, error) {
	a.stdinOnce.Do(func() { a.stdin = bufio.NewReader(a.Stdin) })
	s, err := a.stdin.ReadString('\n')
	if err != nil && s == "" {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// env is the state of one invocation: the global flags and the coordinator.
type env struct {
	app     *App
	urlFlag string
	token   string
	json    bool
	coordMu sync.Mutex
	coord   orchestrator.Coordinator
}

// url is the coordinator's URL: --url, else ORCHESTRATOR_URL, else DefaultURL.
func (e *env) url() string {
	if e.urlFlag != "" {
		return e.urlFlag
	}
	if u := e.app.Getenv("ORCHESTRATOR_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// redact hides the passwords of the coordinator's URL in msg, as url.URL.Redacted does
// (httpapi.RedactURL): every message ao prints that may name the URL goes through it, whether the URL came
// from --url or ORCHESTRATOR_URL, as written or as the client spells it.
func (e *env) redact(msg string) string {
	for _, part := range strings.Split(e.url(), ",") {
		part = strings.TrimSpace(part)
		red := httpapi.RedactURL(part)
		if red == part {
			continue
		}
		msg = strings.ReplaceAll(msg, part, red)
		if u, err := url.Parse(part); err == nil {
			msg = strings.ReplaceAll(msg, u.String(), red)
		}
	}
	return msg
}

// connect returns the coordinator, connecting on first use.
func (e *env) connect() (orchestrator.Coordinator, error) {
	e.coordMu.Lock()
	defer e.coordMu.Unlock()
	if e.coord != nil {
		return e.coord, nil
	}
	token := e.token
	if token == "" {
		token = e.app.Getenv("ORCHESTRATOR_TOKEN")
	}
	c, err := e.app.Connect(e.url(), token)
	if err != nil {
		return nil, usageErrorf("%v", strings.TrimPrefix(err.Error(), "httpapi: "))
	}
	e.coord = c
	return c, nil
}

// terminal reports whether stream is a terminal ao may draw on (not TERM=dumb).
func (e *env) terminal(stream any) bool {
	return e.app.Getenv("TERM") != "dumb" && e.app.Terminal(stream)
}

// color reports whether ao may colour what it writes to stream.
func (e *env) color(stream any) bool {
	return e.terminal(stream) && e.app.Getenv("NO_COLOR") == ""
}

// width is the width text is wrapped to: $COLUMNS, else 100.
func (e *env) width() int {
	var n int
	if _, err := fmt.Sscan(e.app.Getenv("COLUMNS"), &n); err == nil && n >= 40 {
		return min(n, 160)
	}
	return 100
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(w, "{\"error\":\"failed\",\"message\":%q}\n", err.Error())
	}
}

// rootCommand builds the command tree.
func (e *env) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ao",
		Short: "Run and watch agents on an Agent Orchestrator coordinator",
		Long: `ao runs agents on an Agent Orchestrator coordinator and shows what is running.

  ao agents                       the agents you can run
  ao run AGENT -p key=value       run one and follow it live until it ends
  ao sessions                     what ran and what is running
  ao logs -f SESSION              follow a session's events

It talks to the coordinator at --url (or $ORCHESTRATOR_URL, default ` + DefaultURL + `) with the bearer
token --token (or $ORCHESTRATOR_TOKEN). --json prints one JSON document instead of text (JSON Lines for
ao logs -f).

Exit status: 0 on success; for ao run and ao resume, 0 when the session completed, the command's own
exit code when it failed with one, 1 otherwise; 2 for invalid flags, arguments or parameters; 130 after
Ctrl-C.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (ao %s --help shows the flags)", err, strings.TrimPrefix(c.CommandPath(), "ao "))
	})
	pf := root.PersistentFlags()
	pf.StringVar(&e.urlFlag, "url", "", "coordinator URL (default $ORCHESTRATOR_URL, else "+DefaultURL+")")
	pf.StringVar(&e.token, "token", "", "bearer token (default $ORCHESTRATOR_TOKEN)")
	pf.BoolVar(&e.json, "json", false, "print machine-readable JSON")
	root.AddCommand(
		e.agentsCommand(), e.runCommand(), e.resumeCommand(),
		e.sessionsCommand(), e.showCommand(), e.logsCommand(), e.stopCommand(), e.runnersCommand(),
		e.schedulesCommand(), e.rerunCommand(), e.treeCommand(), e.artifactsCommand(),
		e.inboxCommand(), e.approveCommand(true), e.approveCommand(false), e.answerCommand(),
	)
	return root
}

// args returns a cobra argument check that reports a usage error naming the arguments.
func args(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, got []string) error {
		if len(got) != n {
			return usageErrorf("ao %s takes %s (got %d arguments)", strings.TrimPrefix(c.CommandPath(), "ao "), names, len(got))
		}
		return nil
	}
}

func noArgs(c *cobra.Command, got []string) error {
	if len(got) > 0 {
		return usageErrorf("ao %s takes no arguments (got %q)", strings.TrimPrefix(c.CommandPath(), "ao "), got[0])
	}
	return nil
}
