package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// Shell completion asks the coordinator (agent names, session ids, parameter names); it must answer
// quickly or not at all, so each lookup has this long.
const completeTimeout = 3 * time.Second

// completeCtx bounds a completion lookup.
func completeCtx(c *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completeTimeout)
}

// completeAgents completes an agent name (the first argument).
func (e *env) completeAgents(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return e.completeAgentsOfType("")(c, args, toComplete)
}

// completeAgentsOfType completes the name of an agent of type t (any when empty).
func (e *env) completeAgentsOfType(t orchestrator.AgentType) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && c.Flags().Lookup("agent") == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		coord, err := e.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completeCtx(c)
		defer cancel()
		list, err := coord.ListAgents(ctx, orchestrator.ListAgentsParams{Type: t})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, a := range list {
			if strings.HasPrefix(a.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(a.Name, cut(firstSentence(a.Description), 60)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// Which sessions an id completion offers.
const (
	sessionsAny       = iota // every session, newest first
	sessionsLive             // pending or running
	sessionsResumable        // ended AI sessions
)

// completeSessions completes a session id from one page of sessions, newest first: the live ones for
// stop, else all of them.
func (e *env) completeSessions(which int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && c.Flags().Lookup("parent") == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		coord, err := e.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completeCtx(c)
		defer cancel()
		f := orchestrator.SessionFilter{Limit: listPage, NewestFirst: true}
		if which == sessionsLive {
			f.Statuses = []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning}
		}
		page, err := coord.ListSessions(ctx, f)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := page.Sessions
		now := time.Now()
		var out []cobra.Completion
		for _, s := range list {
			if which == sessionsResumable && (s.AgentType != orchestrator.AgentTypeAgent || !s.Status.Ended()) {
				continue
			}
			if strings.HasPrefix(s.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.ID, fmt.Sprintf("%s %s %s", s.AgentName, s.Status, ago(now, s.CreatedAt))))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeParam completes -p: the agent's parameter names as "name=", then the allowed values of a
// parameter with an enum (or a boolean).
func (e *env) completeParam(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	coord, err := e.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := completeCtx(c)
	defer cancel()
	a, err := coord.GetAgent(ctx, args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	params, _ := a.Schemas()
	s, err := parseSchema(params)
	if err != nil || s == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	root := s.resolve(s.root)
	if key, _, ok := strings.Cut(toComplete, "="); ok {
		p := s.property(root, key)
		var values []string
		if enum, ok := p.get("enum").([]any); ok {
			for _, v := range enum {
				values = append(values, displayValue(v))
			}
		} else if slices.Contains(s.types(p), "boolean") {
			values = []string{"true", "false"}
		}
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(key+"="+v, toComplete) {
				out = append(out, key+"="+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, key := range root.obj("properties").keysOrNil() {
		if strings.HasPrefix(key, toComplete) {
			p := s.property(root, key)
			out = append(out, cobra.CompletionWithDesc(key+"=", s.typeText(p)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
