package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func (e *env) schedulesCommand() *cobra.Command {
	var agent string
	c := &cobra.Command{
		Use:     "schedules",
		Aliases: []string{"schedule"},
		Short:   "List the schedules (recurring runs); add, pause, resume or remove one",
		Example: `  ao schedules
  ao schedule add web-crawler --cron '0 * * * *' -p url=https://example.com
  ao schedule add reviewer --cron '@daily' --timezone Europe/Paris --prompt "review yesterday's commits"
  ao schedule pause sch_01jd…
  ao schedule rm sch_01jd…`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return e.schedules(c.Context(), agent)
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "only the schedules of this agent")
	c.AddCommand(e.scheduleAddCommand(), e.schedulePauseCommand(true), e.schedulePauseCommand(false), e.scheduleRmCommand())
	return c
}

// scheduler connects to the coordinator as an [orchestrator.Scheduler].
func (e *env) scheduler() (orchestrator.Scheduler, orchestrator.Coordinator, error) {
	coord, err := e.connect()
	if err != nil {
		return nil, nil, err
	}
	sc, ok := coord.(orchestrator.Scheduler)
	if !ok {
		return nil, nil, fmt.Errorf("this coordinator keeps no schedules")
	}
	return sc, coord, nil
}

func (e *env) schedules(ctx context.Context, agent string) error {
	sc, _, err := e.scheduler()
	if err != nil {
		return err
	}
	list, err := sc.ListSchedules(ctx, orchestrator.ScheduleFilter{AgentName: agent})
	if err != nil {
		return err
	}
	if e.json {
		if list == nil {
			list = []*orchestrator.Schedule{}
		}
		writeJSON(e.app.Stdout, map[string]any{"schedules": list})
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(e.app.Stderr, "no schedules (ao schedule add AGENT --cron EXPR adds one)")
		return nil
	}
	tw := tabwriter.NewWriter(e.app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tCRON\tTIMEZONE\tOVERLAP\tNEXT\tLAST SESSION")
	for _, s := range list {
		next := s.NextFireAt.Local().Format(time.DateTime)
		if s.Paused {
			next = "paused"
		} else if s.Queued {
			next += " (+1 queued)"
		}
		last := s.LastSessionID
		if last == "" {
			last = "-"
		}
		if s.LastError != "" {
			last += " (" + cut(oneLine(s.LastError), 40) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.AgentName, s.Cron, s.Timezone, s.Overlap, next, last)
	}
	return tw.Flush()
}

type scheduleFlags struct {
	runFlags
	cron, timezone, overlap string
	paused                  bool
}

func (e *env) scheduleAddCommand() *cobra.Command {
	var f scheduleFlags
	c := &cobra.Command{
		Use:   "add AGENT --cron EXPR",
		Short: "Add a schedule: run the agent at every tick of a cron expression",
		Long: `Add a schedule: the coordinator starts a run of AGENT at every tick of --cron, as ao run --async would
(its session's metadata carries the schedule id). --cron takes five cron fields ("*/15 * * * *"), six with
a leading seconds field ("*/2 * * * * *"), or a descriptor ("@hourly", "@daily", "@every 90s"), read in
--timezone (an IANA zone, default UTC). --overlap says what a tick does while the previous session still
runs: skip it (the default), allow a second one, or queue one run for when the previous ends. Parameters
as for ao run (-p key=value, --params, --prompt); the coordinator checks them now, against the agent's
schema. Ticks missed while no coordinator ran fire once, not once each.`,
		Args: args(1, "one agent name"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.scheduleAdd(c.Context(), a[0], f)
		},
		ValidArgsFunction: e.completeAgents,
	}
	fl := c.Flags()
	fl.StringVar(&f.cron, "cron", "", "when to run: a cron expression or a descriptor such as @hourly (required)")
	fl.StringVar(&f.timezone, "timezone", "", "the IANA zone the cron fields are read in (default UTC)")
	fl.StringVar(&f.overlap, "overlap", "", "while the previous session runs: skip (default), allow or queue")
	fl.BoolVar(&f.paused, "paused", false, "create the schedule paused")
	fl.StringArrayVarP(&f.pairs, "param", "p", nil, "a parameter, key=value (repeatable)")
	fl.StringVar(&f.params, "params", "", "the parameters as a JSON object, or @FILE (@- reads stdin)")
	fl.StringVar(&f.prompt, "prompt", "", "the prompt (AI agents)")
	_ = c.RegisterFlagCompletionFunc("param", e.completeParam)
	_ = c.RegisterFlagCompletionFunc("overlap", cobra.FixedCompletions([]string{"skip", "allow", "queue"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func (e *env) scheduleAdd(ctx context.Context, agent string, f scheduleFlags) error {
	if f.cron == "" {
		return usageErrorf("ao schedule add needs --cron EXPR: when to run (\"0 * * * *\", \"@daily\", \"@every 10m\")")
	}
	sc, coord, err := e.scheduler()
	if err != nil {
		return err
	}
	params, err := e.params(ctx, coord, agent, f.params, f.pairs)
	if err != nil {
		return err
	}
	if f.prompt != "" {
		if len(params) > 0 {
			return usageErrorf("give either --prompt or parameters, not both")
		}
		params, _ = json.Marshal(map[string]string{"prompt": f.prompt})
	}
	s, err := sc.CreateSchedule(ctx, orchestrator.ScheduleParams{
		AgentName: agent, Parameters: params, Cron: f.cron, Timezone: f.timezone,
		Overlap: orchestrator.OverlapPolicy(f.overlap), Paused: &f.paused,
	})
	if err != nil {
		return err
	}
	return e.scheduleDone(s, "added")
}

// scheduleDone reports a schedule a command created or changed.
func (e *env) scheduleDone(s *orchestrator.Schedule, what string) error {
	if e.json {
		writeJSON(e.app.Stdout, s)
		return nil
	}
	if s.Paused {
		fmt.Fprintf(e.app.Stdout, "%s schedule %s (%s %q, paused)\n", what, s.ID, s.AgentName, s.Cron)
		return nil
	}
	fmt.Fprintf(e.app.Stdout, "%s schedule %s (%s %q); next run %s\n", what, s.ID, s.AgentName, s.Cron,
		s.NextFireAt.Local().Format(time.DateTime+" MST"))
	return nil
}

func (e *env) schedulePauseCommand(pause bool) *cobra.Command {
	use, short, done := "pause ID", "Pause a schedule: it starts no runs until resumed", "paused"
	if !pause {
		use, short, done = "resume ID", "Resume a paused schedule from its next tick (missed ticks are not made up)", "resumed"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(1, "one schedule id"),
		RunE: func(c *cobra.Command, a []string) error {
			sc, _, err := e.scheduler()
			if err != nil {
				return err
			}
			s, err := sc.UpdateSchedule(c.Context(), a[0], orchestrator.ScheduleParams{Paused: &pause})
			if err != nil {
				return err
			}
			return e.scheduleDone(s, done)
		},
	}
}

func (e *env) scheduleRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a schedule (the sessions it started stay)",
		Args:    args(1, "one schedule id"),
		RunE: func(c *cobra.Command, a []string) error {
			sc, _, err := e.scheduler()
			if err != nil {
				return err
			}
			if err := sc.DeleteSchedule(c.Context(), a[0]); err != nil {
				return err
			}
			if e.json {
				writeJSON(e.app.Stdout, map[string]any{"id": a[0], "deleted": true})
				return nil
			}
			fmt.Fprintf(e.app.Stdout, "removed schedule %s\n", a[0])
			return nil
		},
	}
}
