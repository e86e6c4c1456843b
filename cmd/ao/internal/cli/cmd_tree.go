package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func (e *env) treeCommand() *cobra.Command {
	var p orchestrator.TreeParams
	c := &cobra.Command{
		Use:   "tree SESSION [--depth N]",
		Short: "Show a session and its descendants: status, duration and cost of each, and of each subtree",
		Long: `Show the tree of sessions a session started (children started through MCP or the gateway, theirs
in turn), indented, one line each: the session, its agent, its status, how long it ran, its own cost and
tokens, and — for a session with descendants — the cost, tokens and number of sessions of its whole
subtree. Subtree sums always count the whole tree, including the sessions not listed (a line "… n more"
says where some were left out). --depth bounds the generations listed, --max-nodes the lines.`,
		Example: `  ao tree ses_01…
  ao tree ses_01… --depth 1
  ao tree ses_01… --json`,
		Args: args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			if p.Depth < 0 || p.MaxNodes < 0 {
				return usageErrorf("--depth and --max-nodes are not negative")
			}
			return e.tree(c.Context(), a[0], p)
		},
		ValidArgsFunction: e.completeSessions(sessionsAny),
	}
	c.Flags().IntVar(&p.Depth, "depth", 0, "generations below the session to list (default all)")
	c.Flags().IntVar(&p.MaxNodes, "max-nodes", 0, "most sessions to list (default the coordinator's, 1,000)")
	return c
}

func (e *env) tree(ctx context.Context, id string, p orchestrator.TreeParams) error {
	coord, err := e.connect()
	if err != nil {
		return err
	}
	t, err := coord.SessionTree(ctx, id, p)
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, t)
		return nil
	}
	writeTree(e.app.Stdout, time.Now(), t.Root, "", "")
	if t.Truncated {
		fmt.Fprintf(e.app.Stdout, "(the tree has more than %d sessions: its sums count the first %d)\n",
			orchestrator.MaxTreeRead, orchestrator.MaxTreeRead)
	}
	return nil
}

// writeTree writes n and its children, one line each, drawn with box characters: first is the prefix of
// n's own line, rest the prefix of the lines below it.
func writeTree(w io.Writer, now time.Time, n *orchestrator.TreeNode, first, rest string) {
	took := formatElapsed(now.Sub(n.CreatedAt)) + "…"
	if n.EndedAt != nil {
		took = formatElapsed(n.EndedAt.Sub(n.CreatedAt))
	}
	line := fmt.Sprintf("%s%s  %s  %s  %s  %s", first, n.SessionID, n.AgentName, n.Status, took, usageText(n.Usage))
	if n.SubtreeUsage.Sessions > 1 {
		line += fmt.Sprintf("  [subtree: %d sessions, %s]", n.SubtreeUsage.Sessions, usageText(n.SubtreeUsage.Usage))
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
	for i, c := range n.Children {
		if i == len(n.Children)-1 && n.ChildrenOmitted == 0 {
			writeTree(w, now, c, rest+"└─ ", rest+"   ")
		} else {
			writeTree(w, now, c, rest+"├─ ", rest+"│  ")
		}
	}
	if n.ChildrenOmitted > 0 {
		fmt.Fprintf(w, "%s└─ … %d more\n", rest, n.ChildrenOmitted)
	}
}

// usageText is a usage in a few words: its cost and its tokens in and out.
func usageText(u orchestrator.Usage) string {
	return fmt.Sprintf("$%.4f %s in / %s out", u.CostUSD, tokens(u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens), tokens(u.OutputTokens))
}

// tokens writes a token count briefly: 950, 12.3k, 4.1M.
func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
