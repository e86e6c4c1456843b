package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// sessionStatuses are the values --status takes, with the two groups.
var sessionStatuses = []string{"pending", "waiting", "running", "completed", "failed", "stopped", "live", "ended"}

// parseStatuses reads --status: comma-separated statuses, where live is pending,running and ended is
// completed,failed,stopped.
func parseStatuses(values []string) ([]orchestrator.SessionStatus, error) {
	var out []orchestrator.SessionStatus
	add := func(s orchestrator.SessionStatus) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, v := range values {
		for _, one := range strings.Split(v, ",") {
			switch one = strings.ToLower(strings.TrimSpace(one)); one {
			case "":
			case "live":
				add(orchestrator.SessionPending)
				add(orchestrator.SessionWaiting)
				add(orchestrator.SessionRunning)
			case "ended":
				add(orchestrator.SessionCompleted)
				add(orchestrator.SessionFailed)
				add(orchestrator.SessionStopped)
			case "pending", "waiting", "running", "completed", "failed", "stopped":
				add(orchestrator.SessionStatus(one))
			default:
				return nil, usageErrorf("--status %q: want %s", one, strings.Join(sessionStatuses, ", "))
			}
		}
	}
	return out, nil
}

func (e *env) sessionsCommand() *cobra.Command {
	var (
		statuses      []string
		agent, parent string
		limit         int
	)
	c := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"ps"},
		Short:   "List sessions, newest last",
		Long: `List sessions, oldest first and newest last (the newest next to your prompt): the last --limit of those
that match the filters. --status takes pending, running, completed, failed, stopped, or live (pending and
running) and ended (the other three), comma-separated or repeated.`,
		Example: `  ao sessions --status live
  ao sessions --agent web-crawler --status failed --limit 5
  ao sessions --parent ses_01… --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := parseStatuses(statuses)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usageErrorf("--limit must be 0 (all) or more, not %d", limit)
			}
			return e.sessions(c.Context(), orchestrator.SessionFilter{Statuses: st, AgentName: agent, ParentSessionID: parent}, limit)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&statuses, "status", nil, "only sessions with these statuses (pending, running, completed, failed, stopped, live, ended)")
	fl.StringVar(&agent, "agent", "", "only the sessions of this agent")
	fl.StringVar(&parent, "parent", "", "only the sessions this session started")
	fl.IntVar(&limit, "limit", 20, "show the newest N (0: all)")
	_ = c.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(sessionStatuses, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("agent", e.completeAgents)
	_ = c.RegisterFlagCompletionFunc("parent", e.completeSessions(sessionsAny))
	return c
}

// listPage is how many sessions one request lists.
const listPage = 1000

// newestSessions lists the newest limit sessions matching f (all of them when limit is 0), oldest first,
// and reports whether older ones were left out. It reads the listing newest first, so a limit costs one
// request however many sessions the store holds.
func newestSessions(ctx context.Context, coord orchestrator.Coordinator, f orchestrator.SessionFilter, limit int) ([]*orchestrator.Session, bool, error) {
	f.NewestFirst = true
	f.Limit = listPage
	if limit > 0 {
		f.Limit = min(limit, listPage)
	}
	var keep []*orchestrator.Session
	for {
		page, err := coord.ListSessions(ctx, f)
		if err != nil {
			return nil, false, err
		}
		keep = append(keep, page.Sessions...)
		more := page.NextCursor != "" && len(page.Sessions) > 0
		if limit > 0 && len(keep) >= limit {
			more = more || len(keep) > limit
			keep = keep[:limit]
			slices.Reverse(keep)
			return keep, more, nil
		}
		if !more {
			slices.Reverse(keep)
			return keep, false, nil
		}
		f.AfterID = page.NextCursor
		if limit > 0 {
			f.Limit = min(limit-len(keep), listPage)
		}
	}
}

func (e *env) sessions(ctx context.Context, f orchestrator.SessionFilter, limit int) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	list, more, err := newestSessions(ctx, coord, f, limit)
	if err != nil {
		return err
	}
	if e.json {
		if list == nil {
			list = []*orchestrator.Session{}
		}
		writeJSON(e.app.Stdout, map[string]any{"sessions": list, "more": more})
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(e.app.Stderr, "no sessions")
		return nil
	}
	now := time.Now()
	// The error column only when there is an error to show.
	errors := slices.ContainsFunc(list, func(s *orchestrator.Session) bool { return s.Error != "" })
	tw := tabwriter.NewWriter(e.app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "SESSION\tAGENT\tSTATUS\tSTARTED\tDURATION")
	if errors {
		fmt.Fprint(tw, "\tERROR")
	}
	fmt.Fprintln(tw)
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", s.ID, s.AgentName, statusWithAttempts(now, s), ago(now, s.CreatedAt), duration(now, s))
		if errors {
			fmt.Fprintf(tw, "\t%s", cut(lastLine(s.Error), 60))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if more {
		fmt.Fprintf(e.app.Stderr, "(the newest %d; older ones match too: --limit 0 shows all)\n", len(list))
	}
	return nil
}

// duration is how long a session ran (or has been running).
func duration(now time.Time, s *orchestrator.Session) string {
	if s.EndedAt != nil {
		return formatElapsed(s.EndedAt.Sub(s.CreatedAt))
	}
	return formatElapsed(now.Sub(s.CreatedAt)) + "…"
}

// ago says how long before now t was: "12s ago", "3m ago", "2h ago", else the date.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "…"
	}
	return s
}

func (e *env) showCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session: its status, parameters, runs and result",
		Args:  args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.show(c.Context(), a[0])
		},
		ValidArgsFunction: e.completeSessions(sessionsAny),
	}
}

func (e *env) show(ctx context.Context, id string) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	s, err := coord.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, s)
		return nil
	}
	runs, err := coord.ListRuns(ctx, orchestrator.RunFilter{SessionID: id, Limit: 100})
	if err != nil {
		return err
	}
	now := time.Now()
	w := e.app.Stdout
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("Session", s.ID)
	row("Agent", s.AgentName+" ("+string(s.AgentType)+")")
	row("Status", string(s.Status))
	row("Error", s.Error)
	row("Attempts", attempts(now, s))
	row("Parent", s.ParentSessionID)
	row("Runner", s.RunnerID)
	row("Project", s.ProjectDir)
	row("Created", s.CreatedAt.Local().Format("2006-01-02 15:04:05")+" ("+ago(now, s.CreatedAt)+")")
	if s.EndedAt != nil {
		row("Ended", s.EndedAt.Local().Format("2006-01-02 15:04:05")+" (took "+duration(now, s)+")")
	} else {
		row("Running for", duration(now, s))
	}
	row("Events", fmt.Sprintf("%d (ao logs %s)", s.LastEventSeq, s.ID))
	tw.Flush()
	if len(s.Parameters) > 0 && string(s.Parameters) != "{}" {
		fmt.Fprintln(w, "\nParameters:")
		writeIndented(w, s.Parameters)
	}
	if len(runs) > 0 {
		fmt.Fprintln(w, "\nRuns:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range runs {
			took := ""
			if r.StartedAt != nil && r.EndedAt != nil {
				took = formatElapsed(r.EndedAt.Sub(*r.StartedAt))
			}
			kind := string(r.Type)
			if r.Attempt > 1 {
				kind += fmt.Sprintf(" (attempt %d)", r.Attempt)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.ID, kind, r.Status, took, cut(oneLine(r.Error), 60))
		}
		tw.Flush()
	}
	if r := s.Result; r != nil {
		fmt.Fprintf(w, "\nResult (%s):\n", strings.TrimPrefix(resultSummary(r), "result: "))
		printResult(w, e.app.Stderr, r)
	}
	return nil
}

// writeIndented writes a JSON document indented, each line two spaces in.
func writeIndented(w io.Writer, raw json.RawMessage) {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "  ", "  ") != nil {
		buf.Reset()
		buf.Write(raw)
	}
	fmt.Fprintf(w, "  %s\n", buf.Bytes())
}

func (e *env) logsCommand() *cobra.Command {
	var (
		follow bool
		after  int64
	)
	c := &cobra.Command{
		Use:   "logs SESSION [-f]",
		Short: "Print a session's events; -f follows them until the session ends",
		Long: `Print a session's events: one line each, with the time, the event type and its text (a stderr line,
a message, a tool call, …). With -f it follows new events until the session ends, then exits 0; a lost
connection is retried from the last event received, so nothing is missed or repeated.

--json prints the events as one JSON document ({"events": [...], "last_seq": N}), or with -f as JSON
Lines: one event per line, as the API sends them.`,
		Args: args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			if after < 0 {
				return usageErrorf("--after must be 0 or more")
			}
			return e.logs(c.Context(), a[0], follow, after)
		},
		ValidArgsFunction: e.completeSessions(sessionsAny),
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "follow new events until the session ends")
	c.Flags().Int64Var(&after, "after", 0, "start after this event sequence number")
	return c
}

func (e *env) logs(ctx context.Context, id string, follow bool, after int64) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	out := e.app.Stdout
	tty := e.terminal(out)
	color := e.color(out)
	if !follow {
		var all []*orchestrator.Event
		for {
			evs, err := coord.ListEvents(ctx, id, after, pageSize, 0)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				break
			}
			all = append(all, evs...)
			after = evs[len(evs)-1].Seq
		}
		if e.json {
			if all == nil {
				all = []*orchestrator.Event{}
			}
			writeJSON(out, map[string]any{"events": all, "last_seq": after})
			return nil
		}
		for _, ev := range all {
			writeLogLine(out, ev, tty, color)
		}
		return nil
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	troubled := false
	fol := &follower{
		coord: coord, sessionID: id, after: after,
		onEvent: func(ev *orchestrator.Event) {
			if e.json {
				_ = enc.Encode(ev)
				return
			}
			writeLogLine(out, ev, tty, color)
		},
		onTrouble: func(err error) {
			switch {
			case err != nil && !troubled:
				troubled = true
				fmt.Fprintf(e.app.Stderr, "ao: lost the coordinator (%v); retrying\n", e.redact(shortError(err)))
			case err == nil && troubled:
				troubled = false
				fmt.Fprintln(e.app.Stderr, "ao: reconnected")
			}
		},
	}
	s, err := fol.follow(ctx)
	if err != nil {
		return err
	}
	if !e.json {
		fmt.Fprintf(e.app.Stderr, "ao: session %s %s\n", s.ID, s.Status)
	}
	return nil
}

// writeLogLine writes one event as ao logs shows it: "15:04:05.000  stderr       text", the text's
// further lines indented under its first.
func writeLogLine(w io.Writer, ev *orchestrator.Event, tty, color bool) {
	stamp := ev.Time.Local().Format("15:04:05.000")
	head := fmt.Sprintf("%s  %-12s ", stamp, ev.Type)
	if color {
		head = ansiDim + head + ansiReset
	}
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimRight(describeEvent(ev), "\n"), "\n") {
		if tty {
			line = sanitize(line)
		}
		if i == 0 {
			b.WriteString(head)
		} else {
			b.WriteString(strings.Repeat(" ", len(stamp)+2+13))
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

func (e *env) stopCommand() *cobra.Command {
	var (
		wait      time.Duration
		noCascade bool
	)
	c := &cobra.Command{
		Use:   "stop SESSION",
		Short: "Stop a session's run and wait until it has stopped",
		Long: `Stop a session's current run: a queued run at once, a running one through its runner (the command
gets SIGTERM, then SIGKILL after the runner's grace period). ao stop waits up to --wait for the session to
end and exits 1 if it has not. A session that has already ended is left as it is.

The stop cascades: every live session below it in its tree (the sessions it started, theirs in turn) is
stopped too, except a detached child and the sessions below it, even when the session itself has already
ended. --no-cascade stops the session alone. ao stop waits for the session only, not its descendants.`,
		Args: args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.stop(c.Context(), a[0], wait, orchestrator.StopOpts{NoCascade: noCascade})
		},
		ValidArgsFunction: e.completeSessions(sessionsLive),
	}
	c.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for the session to end (0: do not wait)")
	c.Flags().BoolVar(&noCascade, "no-cascade", false, "stop this session only, leaving the sessions it started running")
	return c
}

func (e *env) stop(ctx context.Context, id string, wait time.Duration, opts orchestrator.StopOpts) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	before, err := coord.GetSession(ctx, id)
	if err != nil {
		return err
	}
	s := before
	if !before.Status.Ended() || !opts.NoCascade {
		if s, err = coord.StopSession(ctx, id, opts); err != nil {
			return err
		}
		if wait > 0 && !s.Status.Ended() {
			if s, err = coord.WaitSession(ctx, id, wait); err != nil {
				return err
			}
		}
	}
	if e.json {
		writeJSON(e.app.Stdout, s)
	} else {
		switch {
		case before.Status.Ended():
			fmt.Fprintf(e.app.Stdout, "session %s had already ended: %s\n", id, s.Status)
		case s.Status.Ended():
			fmt.Fprintf(e.app.Stdout, "session %s %s\n", id, s.Status)
		case wait > 0:
			fmt.Fprintf(e.app.Stderr, "ao: asked to stop session %s, which is still %s after %s\n", id, s.Status, wait)
		default:
			fmt.Fprintf(e.app.Stdout, "asked to stop session %s\n", id)
		}
	}
	if wait > 0 && !s.Status.Ended() {
		return &exitError{code: ExitFailed}
	}
	return nil
}

// attempts describes a session's attempts under its retry policy — "2 of 3, next in 8s" — or nothing for
// a session that allows one attempt and made it.
func attempts(now time.Time, s *orchestrator.Session) string {
	if s.MaxAttempts <= 1 && s.Attempt <= 1 {
		return ""
	}
	out := fmt.Sprintf("%d of %d", max(s.Attempt, 1), max(s.MaxAttempts, s.Attempt))
	if s.NextAttemptAt != nil && s.Status == orchestrator.SessionPending {
		if wait := s.NextAttemptAt.Sub(now); wait > 0 {
			out += fmt.Sprintf(", next at %s (in %s)", s.NextAttemptAt.Local().Format("15:04:05"), formatElapsed(wait))
		} else {
			out += ", next due now"
		}
	}
	return out
}

// statusWithAttempts is a session's status, with its attempt while a retry waits: "pending (retry 2/3 in
// 8s)".
func statusWithAttempts(now time.Time, s *orchestrator.Session) string {
	if s.Status != orchestrator.SessionPending || s.NextAttemptAt == nil || s.Attempt <= 1 {
		return string(s.Status)
	}
	wait := max(s.NextAttemptAt.Sub(now), 0)
	return fmt.Sprintf("%s (retry %d/%d in %s)", s.Status, s.Attempt, max(s.MaxAttempts, s.Attempt), formatElapsed(wait))
}
