package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func (e *env) agentsCommand() *cobra.Command {
	var (
		typ  string
		tags []string
	)
	c := &cobra.Command{
		Use:     "agents",
		Aliases: []string{"agent"},
		Short:   "List the agents; show one, add or remove AI agents",
		Example: `  ao agents
  ao agents --type deterministic --tag web
  ao agents show web-crawler
  ao agent add reviewer.json
  ao agent rm reviewer`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			t, err := orchestrator.ParseAgentType(typ)
			if err != nil {
				return usageErrorf("--type: %v", err)
			}
			return e.agents(c.Context(), orchestrator.ListAgentsParams{Type: t, Tags: tags})
		},
	}
	c.Flags().StringVar(&typ, "type", "", "only agents of this type: agent (AI) or deterministic")
	c.Flags().StringSliceVar(&tags, "tag", nil, "only agents with all these tags")
	_ = c.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"agent", "deterministic"}, cobra.ShellCompDirectiveNoFileComp))
	c.AddCommand(e.agentShowCommand(), e.agentAddCommand(), e.agentRmCommand())
	return c
}

func (e *env) agents(ctx context.Context, p orchestrator.ListAgentsParams) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	list, err := coord.ListAgents(ctx, p)
	if err != nil {
		return err
	}
	if e.json {
		if list == nil {
			list = []*orchestrator.AgentInfo{}
		}
		writeJSON(e.app.Stdout, map[string]any{"agents": list})
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(e.app.Stderr, "no agents (runners announce deterministic agents; ao agent add FILE adds an AI agent)")
		return nil
	}
	tw := tabwriter.NewWriter(e.app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tRUNNER\tDESCRIPTION")
	for _, a := range list {
		typ := string(a.Type)
		if a.Type == orchestrator.AgentTypeAgent {
			typ = "AI"
		}
		if a.Disabled {
			typ += " (disabled)"
		}
		runner := a.RunnerID
		if runner == "" {
			runner = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, typ, runner, cut(firstSentence(a.Description), 70))
	}
	return tw.Flush()
}

// firstSentence is the description's first sentence (or line).
func firstSentence(s string) string {
	s = oneLine(strings.TrimSpace(s))
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

func (e *env) agentShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show AGENT",
		Short: "Show an agent: its description and parameters, for people (--json: the agent with its schemas)",
		Args:  args(1, "one agent name"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.agentShow(c.Context(), a[0])
		},
		ValidArgsFunction: e.completeAgents,
	}
}

func (e *env) agentShow(ctx context.Context, name string) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	a, err := coord.GetAgent(ctx, name)
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, a)
		return nil
	}
	return renderAgent(e.app.Stdout, a, e.width())
}

// renderAgent writes an agent for people: what it is, its description, its parameters (each with type,
// whether required, default, allowed values, description and rules), its output, and how to run it.
func renderAgent(w io.Writer, a *orchestrator.AgentInfo, width int) error {
	kind := "deterministic agent"
	if a.Type == orchestrator.AgentTypeAgent {
		kind = "AI agent"
	}
	if a.RunnerID != "" {
		kind += " on runner " + a.RunnerID
	}
	if a.Disabled {
		kind += ", disabled"
	}
	fmt.Fprintf(w, "%s (%s)\n", a.Name, kind)
	if d := strings.TrimSpace(a.Description); d != "" {
		fmt.Fprintln(w)
		for _, l := range wrap(d, width) {
			fmt.Fprintln(w, l)
		}
	}
	if len(a.Tags) > 0 {
		fmt.Fprintf(w, "\nTags: %s\n", strings.Join(a.Tags, ", "))
	}
	if len(a.AllowedEnv) > 0 {
		fmt.Fprintf(w, "Environment a run may set (metadata.env): %s\n", strings.Join(a.AllowedEnv, ", "))
	}
	params, output := a.Schemas()
	fmt.Fprintln(w)
	if err := renderSchema(w, "Parameters", params, width); err != nil {
		return fmt.Errorf("parameters_schema: %w", err)
	}
	if len(a.OutputSchema) > 0 && string(a.OutputSchema) != "null" {
		fmt.Fprintln(w)
		if err := renderSchema(w, "Output (result_data)", output, width); err != nil {
			return fmt.Errorf("output_schema: %w", err)
		}
	}
	fmt.Fprintf(w, "\nRun it: %s\n", runExample(a.Name, params))
	return nil
}

// runExample is an ao run command line with the agent's required parameters.
func runExample(name string, params []byte) string {
	cmd := "ao run " + name
	s, err := parseSchema(params)
	if err != nil || s == nil {
		return cmd
	}
	root := s.resolve(s.root)
	for _, key := range required(root) {
		if key == "prompt" && len(required(root)) == 1 {
			return cmd + ` --prompt "…"`
		}
		p := s.property(root, key)
		t := "value"
		if types := s.types(p); len(types) > 0 {
			t = types[0]
		}
		cmd += " -p " + key + "=<" + t + ">"
	}
	return cmd
}

func (e *env) agentAddCommand() *cobra.Command {
	var replace bool
	c := &cobra.Command{
		Use:   "add FILE",
		Short: "Add an AI agent to the coordinator's registry from a blueprint file (admin token)",
		Long: `Add an AI agent to the coordinator's registry from a blueprint: a JSON file (- reads stdin) with its
name, description, system_prompt, parameters_schema, output_schema, demands, … as the coordinator's
POST /agents takes it. A misspelt key is an error. --replace replaces an agent of that name. Deterministic
agents are not added here: runners announce them from their blueprint folders. Needs an admin token.`,
		Args: args(1, "one blueprint file"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.agentAdd(c.Context(), a[0], replace)
		},
	}
	c.Flags().BoolVar(&replace, "replace", false, "replace the agent if one of that name exists")
	return c
}

func (e *env) agentAdd(ctx context.Context, file string, replace bool) error {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(e.app.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	b, err := orchestrator.ParseBlueprint(data, orchestrator.AgentTypeAgent)
	if err != nil {
		return usageErrorf("%s: %v", file, err)
	}
	if b.Type != orchestrator.AgentTypeAgent {
		return usageErrorf("%s: %s is a deterministic agent: runners announce those from their blueprint folders (-blueprints-dir)", file, b.Name)
	}
	coord, err := e.connect()
	if err != nil {
		return err
	}
	verb := "added"
	a, err := coord.CreateAgent(ctx, b)
	if errors.Is(err, orchestrator.ErrConflict) && replace {
		verb = "replaced"
		a, err = coord.UpdateAgent(ctx, b.Name, b)
	}
	if errors.Is(err, orchestrator.ErrConflict) && !replace {
		return fmt.Errorf("%w (--replace replaces it)", err)
	}
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, a)
		return nil
	}
	fmt.Fprintf(e.app.Stdout, "%s agent %s\n", verb, a.Name)
	return nil
}

func (e *env) agentRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "rm AGENT",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove an AI agent from the coordinator's registry (admin token)",
		Args:    args(1, "one agent name"),
		RunE: func(c *cobra.Command, a []string) error {
			coord, err := e.connect()
			if err != nil {
				return err
			}
			if err := coord.DeleteAgent(c.Context(), a[0]); err != nil {
				return err
			}
			if e.json {
				writeJSON(e.app.Stdout, map[string]any{"name": a[0], "deleted": true})
				return nil
			}
			fmt.Fprintf(e.app.Stdout, "removed agent %s\n", a[0])
			return nil
		},
		ValidArgsFunction: e.completeAgentsOfType(orchestrator.AgentTypeAgent),
	}
}

func (e *env) runnersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "runners",
		Short: "List the runners (admin token)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			coord, err := e.connect()
			if err != nil {
				return err
			}
			list, err := coord.ListRunners(c.Context())
			if err != nil {
				return err
			}
			if e.json {
				if list == nil {
					list = []*orchestrator.RunnerInfo{}
				}
				writeJSON(e.app.Stdout, map[string]any{"runners": list})
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintln(e.app.Stderr, "no runners")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(e.app.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUNNER\tSTATUS\tHOST\tSLOTS\tEXECUTOR\tHEARTBEAT\tTAGS\tPROJECT")
			for _, r := range list {
				exec := r.ExecutorType
				if r.ExecutorProfile != "" {
					exec += "/" + r.ExecutorProfile
				}
				if exec == "" {
					exec = "-"
				}
				tags := strings.Join(r.Tags, ",")
				if tags == "" {
					tags = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Hostname, r.MaxConcurrent, exec,
					ago(now, r.LastHeartbeatAt), tags, r.ProjectDir)
			}
			return tw.Flush()
		},
	}
}
