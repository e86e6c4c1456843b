package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// rerunFlags are the flags of ao rerun.
type rerunFlags struct {
	runFlags
	// Bulk selection.
	failed   bool
	statuses []string
	agent    string
	since    time.Duration
	limit    int
	dryRun   bool
}

// bulk reports whether the flags select sessions in bulk.
func (f *rerunFlags) bulk() bool {
	return f.failed || len(f.statuses) > 0 || f.agent != "" || f.since != 0 || f.limit != 0 || f.dryRun
}

func (e *env) rerunCommand() *cobra.Command {
	var f rerunFlags
	c := &cobra.Command{
		Use:   "rerun SESSION [-p key=value ...] | rerun --failed [--agent NAME] [--since 1h] [--dry-run]",
		Short: "Run an ended session again, or many",
		Long: `Run an ended session again as a new session of the same agent, with the same parameters: -p key=value
and --params (typed as for ao run) change some of them — a JSON merge patch over the original's, where
null removes one. The new session is validated again and names the original (rerun_of). ao rerun then
follows it like ao run, with the same exit status, unless --async.

In bulk, with no SESSION: --failed (or --status) selects ended sessions, --agent one agent's, --since
those created within that long; the newest first, at most --limit (default and most 1,000). It prints
each re-run as "ORIGINAL -> NEW" and does not follow them; --dry-run only lists the sessions it would
re-run. A session that could not be re-run (its agent is gone, its parameters no longer validate) is
reported and the others still run; the exit status is then 1.`,
		Example: `  ao rerun ses_01…
  ao rerun ses_01… -p depth=1 --async
  ao rerun --failed --agent web-crawler --since 1h --dry-run
  ao rerun --failed --agent web-crawler --since 1h`,
		Args: func(c *cobra.Command, a []string) error {
			switch {
			case f.bulk() && len(a) > 0:
				return usageErrorf("ao rerun takes a SESSION or selection flags (--failed, --status, --agent, --since, --limit, --dry-run), not both")
			case !f.bulk() && len(a) != 1:
				return usageErrorf("ao rerun takes one session id, or --failed (or --status) to select sessions in bulk")
			case f.bulk() && (len(f.pairs) > 0 || f.params != "" || f.async):
				return usageErrorf("-p, --params and --async are for one session: a bulk re-run keeps each session's parameters and never follows")
			case f.bulk() && !f.failed && len(f.statuses) == 0:
				return usageErrorf("say which sessions to re-run: --failed, or --status completed,failed,stopped")
			}
			return nil
		},
		RunE: func(c *cobra.Command, a []string) error {
			if f.bulk() {
				return e.rerunBulk(c.Context(), f)
			}
			return e.rerun(c.Context(), a[0], f.runFlags)
		},
		ValidArgsFunction: e.completeSessions(sessionsAny),
	}
	fl := c.Flags()
	fl.StringArrayVarP(&f.pairs, "param", "p", nil, "change a parameter, key=value (repeatable; key=null removes it)")
	fl.StringVar(&f.params, "params", "", "a JSON merge patch over the parameters, or @FILE (@- reads stdin)")
	fl.BoolVar(&f.async, "async", false, "start the re-run and print its session id without following it")
	fl.BoolVar(&f.stopOnInterrupt, "stop-on-interrupt", false, "on Ctrl-C, stop the session without asking")
	fl.BoolVar(&f.failed, "failed", false, "re-run failed sessions (bulk)")
	fl.StringSliceVar(&f.statuses, "status", nil, "re-run sessions with these ended statuses: completed, failed, stopped, ended (bulk)")
	fl.StringVar(&f.agent, "agent", "", "only this agent's sessions (bulk)")
	fl.DurationVar(&f.since, "since", 0, "only sessions created within this long, such as 1h (bulk)")
	fl.IntVar(&f.limit, "limit", 0, "re-run at most the newest N (bulk; default and most 1000)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list the sessions that would be re-run, and re-run none (bulk)")
	_ = c.RegisterFlagCompletionFunc("agent", e.completeAgents)
	return c
}

// rerunner is the coordinator as an [orchestrator.Rerunner].
func (e *env) rerunner() (orchestrator.Coordinator, orchestrator.Rerunner, error) {
	coord, err := e.connect()
	if err != nil {
		return nil, nil, err
	}
	rr, ok := coord.(orchestrator.Rerunner)
	if !ok {
		return nil, nil, fmt.Errorf("this coordinator cannot re-run sessions")
	}
	return coord, rr, nil
}

func (e *env) rerun(ctx context.Context, id string, f runFlags) error {
	coord, rr, err := e.rerunner()
	if err != nil {
		return err
	}
	orig, err := coord.GetSession(ctx, id)
	if err != nil {
		return err
	}
	patch, err := e.params(ctx, coord, orig.AgentName, f.params, f.pairs)
	if err != nil {
		return err
	}
	begin := time.Now()
	res, err := rr.RerunSession(ctx, id, orchestrator.RerunParams{Parameters: patch})
	if err != nil {
		return err
	}
	if f.async {
		return e.started(res)
	}
	return e.followRun(ctx, coord, res, 0, orig.AgentName, begin, f.stopOnInterrupt)
}

func (e *env) rerunBulk(ctx context.Context, f rerunFlags) error {
	if f.limit < 0 || f.limit > orchestrator.MaxRerunBatch {
		return usageErrorf("--limit must be between 1 and %d, not %d", orchestrator.MaxRerunBatch, f.limit)
	}
	if f.since < 0 {
		return usageErrorf("--since must be a positive duration such as 1h, not %s", f.since)
	}
	statuses, err := parseStatuses(f.statuses)
	if err != nil {
		return err
	}
	for _, st := range statuses {
		if !st.Ended() {
			return usageErrorf("--status %s: only ended sessions (completed, failed, stopped) can be re-run", st)
		}
	}
	if f.failed {
		statuses = append(statuses, orchestrator.SessionFailed)
	}
	filter := orchestrator.RerunFilter{Statuses: statuses, AgentName: f.agent, Limit: f.limit, DryRun: f.dryRun}
	if f.since > 0 {
		after := time.Now().Add(-f.since)
		filter.CreatedAfter = &after
	}
	_, rr, err := e.rerunner()
	if err != nil {
		return err
	}
	out, err := rr.RerunSessions(ctx, filter)
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, out)
	} else {
		for i, id := range out.SessionIDs {
			if f.dryRun {
				fmt.Fprintln(e.app.Stdout, id)
			} else {
				fmt.Fprintf(e.app.Stdout, "%s -> %s\n", id, out.Reruns[i].SessionID)
			}
		}
		for _, fail := range out.Errors {
			fmt.Fprintf(e.app.Stderr, "ao: %s not re-run: %s\n", fail.SessionID, fail.Message)
		}
		switch {
		case f.dryRun:
			fmt.Fprintf(e.app.Stderr, "ao: %d sessions would be re-run (dry run: none was)\n", out.Count)
		default:
			fmt.Fprintf(e.app.Stderr, "ao: %d sessions re-run\n", out.Count)
		}
	}
	if len(out.Errors) > 0 {
		return &exitError{code: ExitFailed}
	}
	return nil
}
