package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// runFlags are the flags of ao run and ao resume.
type runFlags struct {
	pairs           []string
	params          string
	prompt          string
	async           bool
	stopOnInterrupt bool
	// Submission control (ao run only).
	priority       int
	delay          time.Duration
	runAt          string
	idempotencyKey string
	concurrencyKey string
	jsonl          string
	tree           treeFlags
}

// submission fills p's submission control fields from the flags.
func (f *runFlags) submission(p *orchestrator.StartRunParams) error {
	p.Priority, p.Delay, p.IdempotencyKey, p.ConcurrencyKey = f.priority, f.delay, f.idempotencyKey, f.concurrencyKey
	if f.runAt != "" {
		t, err := time.Parse(time.RFC3339, f.runAt)
		if err != nil {
			return usageErrorf("--run-at takes an RFC 3339 time such as 2026-01-02T15:04:05Z, not %q", f.runAt)
		}
		p.RunAt = &t
	}
	return nil
}

func (e *env) runCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run AGENT [-p key=value ...] [--params JSON|@FILE] [--prompt TEXT]",
		Short: "Run an agent and follow it until it ends",
		Long: `Run an agent and follow the session until it ends: its stderr lines and other events appear as they
come (on a terminal with the elapsed time and a spinner), then the result: result_data as indented JSON,
else result_text. Progress goes to stderr, the result to stdout.

Parameters: -p key=value, typed from the agent's parameters_schema — integers, numbers and booleans
(true/false, yes/no, on/off, 1/0) become JSON values, arrays take a comma-separated list (or a JSON
array) whose items are typed from the item schema, objects take JSON; a value that does not fit, and a
key the schema does not know, is sent as a string and the coordinator's validation says what is wrong.
An array parameter may be given several times. --params takes the parameters as a JSON object (or @FILE,
@- for stdin); -p values are set on top of it. --prompt is the prompt of an AI agent.

Exit status: 0 when the session completed; the command's exit code when it failed with one; 1 when it
failed otherwise or was stopped; 2 when the parameters were refused (each error with its $.path); 130
after Ctrl-C. With --async, 0 once the session is queued.

Ctrl-C on a terminal asks whether to stop the session; --stop-on-interrupt stops it without asking.
Otherwise (piped) Ctrl-C leaves it running and says how to follow or stop it.

--jsonl FILE (- for stdin) starts one session per line instead, each line a JSON object of parameters
(-p values and --prompt are set on each), in batches of up to 1,000 sessions per request: a batch starts
all its sessions or none, and a refused batch names each refused line with its errors (exit status 2).
It does not follow them: it prints one session id per line, in the order of the file (with --json, one
{"line", "session_id", "run_id", "status"} object per line).`,
		Example: `  ao run web-crawler -p url=https://example.com -p depth=1
  ao run web-crawler -p url=https://example.com -p patterns='*.html,/docs/*'
  ao run file-stats --params '{"path": "."}' --json | jq .result.result_data
  ao run reviewer --prompt "review the last commit" --async
  ao run web-crawler -p url=https://example.com --delay 10m --priority 3 --idempotency-key nightly-2026-01-02
  ao run web-crawler --jsonl urls.jsonl > sessions.txt`,
		Args: args(1, "one agent name"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.run(c.Context(), a[0], f)
		},
		ValidArgsFunction: e.completeAgents,
	}
	fl := c.Flags()
	fl.StringArrayVarP(&f.pairs, "param", "p", nil, "a parameter, key=value (repeatable)")
	fl.StringVar(&f.params, "params", "", "the parameters as a JSON object, or @FILE (@- reads stdin)")
	fl.StringVar(&f.prompt, "prompt", "", "the prompt (AI agents)")
	fl.BoolVar(&f.async, "async", false, "start the run and print its session id without following it")
	fl.BoolVar(&f.stopOnInterrupt, "stop-on-interrupt", false, "on Ctrl-C, stop the session without asking")
	fl.StringVar(&f.jsonl, "jsonl", "", "start one session per line of this JSON Lines file of parameters (- for stdin), without following them")
	fl.IntVar(&f.priority, "priority", 0, "1 (the highest, the default) to 4: claims take higher priorities first")
	fl.DurationVar(&f.delay, "delay", 0, "start the run no sooner than this from now (30s, 1h)")
	fl.StringVar(&f.runAt, "run-at", "", "start the run no sooner than this RFC 3339 time")
	fl.StringVar(&f.idempotencyKey, "idempotency-key", "", "a key that makes repeating this command return the first run instead of starting another")
	fl.StringVar(&f.concurrencyKey, "concurrency-key", "", "count the run under the agent's max_concurrent_per_key with its other runs of this key")
	f.tree.register(c)
	_ = c.RegisterFlagCompletionFunc("param", e.completeParam)
	return c
}

func (e *env) resumeCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "resume SESSION --prompt TEXT",
		Short: "Resume an AI agent's session with a new prompt and follow it",
		Long: `Resume an ended AI agent's session with a new prompt, then follow it like ao run (unless --async):
its new events as they come, then its result. Deterministic sessions cannot be resumed. Exit status as
for ao run.`,
		Args: args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.resume(c.Context(), a[0], f)
		},
		ValidArgsFunction: e.completeSessions(sessionsResumable),
	}
	fl := c.Flags()
	fl.StringVar(&f.prompt, "prompt", "", "the new prompt (required)")
	fl.BoolVar(&f.async, "async", false, "queue the resume and return without following it")
	fl.BoolVar(&f.stopOnInterrupt, "stop-on-interrupt", false, "on Ctrl-C, stop the session without asking")
	return c
}

// readParams reads the --params flag: JSON, or @FILE, or @- for stdin.
func (e *env) readParams(v string) ([]byte, error) {
	if !strings.HasPrefix(v, "@") {
		return []byte(v), nil
	}
	var (
		b   []byte
		err error
	)
	if v == "@-" {
		b, err = io.ReadAll(e.app.Stdin)
	} else {
		b, err = os.ReadFile(v[1:])
	}
	if err != nil {
		return nil, usageErrorf("--params %s: %v", v, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, usageErrorf("--params %s is empty", v)
	}
	return b, nil
}

func (e *env) run(ctx context.Context, agent string, f runFlags) error {
	if f.jsonl != "" {
		return e.runMany(ctx, agent, f)
	}
	coord, err := e.connect()
	if err != nil {
		return err
	}
	params, err := e.params(ctx, coord, agent, f.params, f.pairs)
	if err != nil {
		return err
	}
	begin := time.Now()
	p := orchestrator.StartRunParams{AgentName: agent, Parameters: params, Prompt: f.prompt}
	f.tree.apply(&p)
	if err := f.submission(&p); err != nil {
		return err
	}
	res, err := coord.StartRun(ctx, p)
	if err != nil {
		return err
	}
	if f.async {
		return e.started(res)
	}
	return e.followRun(ctx, coord, res, 0, agent, begin, f.stopOnInterrupt)
}

func (e *env) resume(ctx context.Context, id string, f runFlags) error {
	if f.prompt == "" {
		return usageErrorf("ao resume needs --prompt TEXT: what to tell the agent")
	}
	coord, err := e.connect()
	if err != nil {
		return err
	}
	s, err := coord.GetSession(ctx, id)
	if err != nil {
		return err
	}
	begin := time.Now()
	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
		Type: orchestrator.RunTypeResume, SessionID: id, AgentName: s.AgentName, Prompt: f.prompt,
	})
	if err != nil {
		return err
	}
	if f.async {
		return e.started(res)
	}
	// The events of the earlier runs were seen already: follow from the last one before the resume.
	return e.followRun(ctx, coord, res, s.LastEventSeq, s.AgentName, begin, f.stopOnInterrupt)
}

// started reports a run queued with --async: the session id on stdout (for scripts), how to follow it
// on stderr.
func (e *env) started(res *orchestrator.StartRunResult) error {
	if e.json {
		writeJSON(e.app.Stdout, res)
		return nil
	}
	fmt.Fprintln(e.app.Stdout, res.SessionID)
	fmt.Fprintf(e.app.Stderr, "ao: session %s is %s; follow it with: ao logs -f %[1]s\n", res.SessionID, res.Status)
	return nil
}

// followRun follows a started run's session until it ends, then prints the outcome. after is where its
// events begin (0 for a new session).
func (e *env) followRun(ctx context.Context, coord orchestrator.Coordinator, res *orchestrator.StartRunResult, after int64, agent string, begin time.Time, stopOnInterrupt bool) error {
	a := e.app
	tty := e.terminal(a.Stderr)
	view := newLiveView(a.Stderr, tty, e.color(a.Stderr), agent+"  "+res.SessionID, begin)
	if !tty {
		view.note(fmt.Sprintf("session %s (%s)", res.SessionID, agent))
	}
	var (
		stopping atomic.Bool // set here, read by the follower's callbacks
		troubled bool        // the follower's own
	)
	fol := &follower{
		coord:     coord,
		sessionID: res.SessionID,
		after:     after,
		onEvent:   view.event,
		onSession: func(s *orchestrator.Session) {
			if !stopping.Load() && !s.Status.Ended() {
				view.setStatus(string(s.Status))
			}
		},
		onTrouble: func(err error) {
			switch {
			case err != nil && !troubled:
				troubled = true
				view.setStatus("reconnecting")
				view.note(fmt.Sprintf("lost the coordinator (%v); retrying", e.redact(shortError(err))))
			case err == nil && troubled:
				troubled = false
				view.note("reconnected")
			}
		},
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan followOutcome, 1)
	go func() {
		s, err := fol.follow(fctx)
		done <- followOutcome{s, err}
	}()
	view.start()
	sigs, stopSignals := a.Interrupts()
	defer stopSignals()
	interrupted := false
	// leave stops following, says how to pick the session up again, and ends ao with 130.
	leave := func() error {
		cancel()
		<-done
		view.close()
		e.leftRunning(res)
		return &exitError{code: ExitInterrupted}
	}
	stop := func() {
		stopping.Store(true)
		interrupted = true
		view.setStatus("stopping")
		if _, err := coord.StopSession(ctx, res.SessionID); err != nil {
			view.note(fmt.Sprintf("could not stop session %s: %v", res.SessionID, e.redact(shortError(err))))
		} else {
			view.note("stopping session " + res.SessionID)
		}
	}
	for {
		select {
		case o := <-done:
			view.close()
			if o.err != nil {
				return o.err
			}
			return e.finishRun(res.RunID, o.s, begin, interrupted)
		case <-sigs:
			switch {
			case interrupted: // a second Ctrl-C: stop waiting
				return leave()
			case stopOnInterrupt:
				stop()
			case tty && a.Terminal(a.Stdin):
				yes, ended := e.askStop(view, res.SessionID, sigs, done)
				switch {
				case ended != nil:
					done <- *ended // it ended while we asked: finish normally
				case yes:
					stop()
				default:
					return leave()
				}
			default:
				return leave()
			}
		}
	}
}

// followOutcome is how following a session ended: the ended session, or why it could not be followed.
type followOutcome struct {
	s   *orchestrator.Session
	err error
}

// askStop asks on the terminal whether to stop the session. It returns the answer, or the follower's
// outcome if the session ended while the question was on the screen. A second Ctrl-C means no.
func (e *env) askStop(view *liveView, id string, sigs <-chan os.Signal, done <-chan followOutcome) (bool, *followOutcome) {
	view.pause()
	defer view.resume()
	fmt.Fprintf(e.app.Stderr, "\r\x1b[KStop session %s? [y/N] ", id)
	answer := make(chan string, 1)
	go func() {
		s, _ := e.app.line()
		answer <- s
	}()
	select {
	case s := <-answer:
		s = strings.ToLower(strings.TrimSpace(s))
		return s == "y" || s == "yes", nil
	case <-sigs:
		fmt.Fprintln(e.app.Stderr)
		return false, nil
	case o := <-done:
		fmt.Fprintln(e.app.Stderr)
		return false, &o
	}
}

// leftRunning tells how to get back to a session ao stopped following.
func (e *env) leftRunning(res *orchestrator.StartRunResult) {
	if e.json {
		writeJSON(e.app.Stdout, map[string]any{"run_id": res.RunID, "session_id": res.SessionID, "status": "running", "interrupted": true})
	}
	fmt.Fprintf(e.app.Stderr, "ao: session %s is still running\n  follow it: ao logs -f %[1]s\n  stop it:   ao stop %[1]s\n", res.SessionID)
}

// finishRun prints a session's outcome — a summary line on stderr, the result on stdout (or one JSON
// document with --json) — and returns its exit code as an error when it is not 0.
func (e *env) finishRun(runID string, s *orchestrator.Session, begin time.Time, interrupted bool) error {
	code := RunExitCode(s.Status, s.Result)
	if interrupted {
		code = ExitInterrupted
	}
	if e.json {
		writeJSON(e.app.Stdout, orchestrator.StartRunResult{RunID: runID, SessionID: s.ID, Status: s.Status, Result: s.Result, Error: s.Error})
	} else {
		e.summary(s, time.Since(begin))
		printResult(e.app.Stdout, e.app.Stderr, s.Result)
	}
	if code != ExitOK {
		return &exitError{code: code}
	}
	return nil
}

// summary writes the line that ends a followed run: "✓ completed in 2.1s", "✗ failed in 0.4s: exit
// status 3", "■ stopped after 3.0s".
func (e *env) summary(s *orchestrator.Session, took time.Duration) {
	w := e.app.Stderr
	color := e.color(w)
	paint := func(style, text string) string {
		if !color {
			return text
		}
		return style + text + ansiReset
	}
	var head string
	switch s.Status {
	case orchestrator.SessionCompleted:
		head = paint(ansiGreen, "✓ completed") + " in " + formatElapsed(took)
	case orchestrator.SessionFailed:
		head = paint(ansiRed, "✗ failed") + " in " + formatElapsed(took)
	default:
		head = paint(ansiYell, "■ "+string(s.Status)) + " after " + formatElapsed(took)
	}
	if r := s.Result; r != nil && r.ExitCode != nil && *r.ExitCode > 0 {
		head += fmt.Sprintf(" (exit %d)", *r.ExitCode)
	}
	if msg := lastLine(s.Error); msg != "" && msg != string(s.Status) {
		head += ": " + msg
	}
	fmt.Fprintf(w, "%s  %s\n", head, paint(ansiDim, "(session "+s.ID+")"))
}

// lastLine is the last non-empty line of an error: a failed command's error is the tail of its stderr,
// whose lines were shown as they came, and whose last line usually says what went wrong.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// printResult writes a result for people: result_data as indented JSON, else result_text, on out; what
// is wrong with it (truncated, output validation errors) on errw.
func printResult(out, errw io.Writer, r *orchestrator.Result) {
	if r == nil {
		return
	}
	switch {
	case len(r.ResultData) > 0:
		var buf bytes.Buffer
		if json.Indent(&buf, r.ResultData, "", "  ") == nil {
			buf.WriteByte('\n')
			out.Write(buf.Bytes())
		} else {
			fmt.Fprintf(out, "%s\n", r.ResultData)
		}
	case r.ResultText != "":
		io.WriteString(out, r.ResultText)
		if !strings.HasSuffix(r.ResultText, "\n") {
			io.WriteString(out, "\n")
		}
	}
	if r.Truncated {
		fmt.Fprintln(errw, "ao: the output was cut to fit a limit (see the session's output_truncated event)")
	}
	if len(r.ValidationErrors) > 0 {
		fmt.Fprintln(errw, "ao: the output does not match the output_schema:")
		for _, fe := range r.ValidationErrors {
			fmt.Fprintf(errw, "  %s: %s\n", fe.Path, fe.Message)
		}
	}
}

// shortError is an error's message without the client's "httpapi: METHOD /path:" prefix; for a
// request that got no answer, the network error alone ("dial tcp …: connection refused").
func shortError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	msg := strings.TrimPrefix(err.Error(), "httpapi: ")
	if i := strings.Index(msg, ": "); i > 0 && strings.Contains(msg[:i], " /") {
		msg = msg[i+2:]
	}
	return msg
}
