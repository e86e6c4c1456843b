package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// humanInput is the coordinator as an [orchestrator.HumanInput].
func (e *env) humanInput() (orchestrator.HumanInput, error) {
	coord, err := e.connect()
	if err != nil {
		return nil, err
	}
	h, ok := coord.(orchestrator.HumanInput)
	if !ok {
		return nil, fmt.Errorf("this coordinator takes no input requests")
	}
	return h, nil
}

func (e *env) inboxCommand() *cobra.Command {
	var all bool
	var session string
	c := &cobra.Command{
		Use:   "inbox [--session SESSION] [--all]",
		Short: "List what waits for a person: approvals and agents' questions",
		Long: `List the open input requests, oldest first: approval gates (a run held until someone approves it)
and questions agents asked while they run. Answer them with ao approve, ao reject and ao answer.
--all lists closed requests too (answered, expired, cancelled); --session narrows to one session.`,
		Example: `  ao inbox
  ao inbox --session ses_01… --all --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			h, err := e.humanInput()
			if err != nil {
				return err
			}
			f := orchestrator.InputRequestFilter{SessionID: session, Limit: 1000}
			if !all {
				f.Statuses = []orchestrator.InputRequestStatus{orchestrator.InputOpen}
			}
			list, err := h.ListInputRequests(c.Context(), f)
			if err != nil {
				return err
			}
			if e.json {
				if list == nil {
					list = []*orchestrator.InputRequest{}
				}
				writeJSON(e.app.Stdout, map[string]any{"input_requests": list})
				return nil
			}
			if len(list) == 0 {
				fmt.Fprintln(e.app.Stdout, "Nothing waits for an answer.")
				return nil
			}
			for _, r := range list {
				fmt.Fprintf(e.app.Stdout, "%s  %-8s  %-9s  %s  %s\n    %s\n", r.ID, r.Kind, r.Status, r.SessionID, r.AgentName, promptLine(r.Prompt))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "list answered, expired and cancelled requests too")
	c.Flags().StringVar(&session, "session", "", "only the requests of this session")
	return c
}

// promptLine shortens a prompt to one line of a listing.
func promptLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// approveCommand is ao approve (approve true) or ao reject.
func (e *env) approveCommand(approve bool) *cobra.Command {
	var comment string
	verb, short := "approve", "Approve a run held at its approval gate"
	if !approve {
		verb, short = "reject", "Refuse a run held at its approval gate: its session fails, its command never runs"
	}
	c := &cobra.Command{
		Use:   verb + " SESSION|REQUEST [--comment TEXT]",
		Short: short,
		Long: short + `. SESSION is a waiting session's id (its open approval is answered), REQUEST an
approval request's id (inp_…, from ao inbox). --comment says why; a refusal's comment becomes the
session's error. An approval already answered is refused (exit status 1): each is answered once.`,
		Example: "  ao " + verb + " ses_01… --comment \"checked the diff\"",
		Args:    args(1, "a session or request id"),
		RunE: func(c *cobra.Command, a []string) error {
			h, err := e.humanInput()
			if err != nil {
				return err
			}
			id, err := approvalRequest(c.Context(), h, a[0])
			if err != nil {
				return err
			}
			answer, _ := json.Marshal(orchestrator.Approval{Approved: approve, Comment: comment})
			r, err := h.AnswerInputRequest(c.Context(), id, orchestrator.AnswerParams{Answer: answer})
			if err != nil {
				return err
			}
			return e.answered(r)
		},
	}
	c.Flags().StringVar(&comment, "comment", "", "why (a refusal's comment becomes the session's error)")
	return c
}

// approvalRequest resolves a session id to its open approval request; a request id passes as it is.
func approvalRequest(ctx context.Context, h orchestrator.HumanInput, id string) (string, error) {
	if !strings.HasPrefix(id, "ses_") {
		return id, nil
	}
	open, err := h.ListInputRequests(ctx, orchestrator.InputRequestFilter{SessionID: id, Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen}})
	if err != nil {
		return "", err
	}
	for _, r := range open {
		if r.Kind == orchestrator.InputApproval {
			return r.ID, nil
		}
	}
	return "", fmt.Errorf("session %s has no open approval (ao inbox --session %s lists its requests)", id, id)
}

func (e *env) answered(r *orchestrator.InputRequest) error {
	if e.json {
		writeJSON(e.app.Stdout, r)
		return nil
	}
	fmt.Fprintf(e.app.Stdout, "%s %s: %s\n", r.ID, r.Status, r.Answer)
	return nil
}

func (e *env) answerCommand() *cobra.Command {
	var pairs []string
	var raw string
	c := &cobra.Command{
		Use:   "answer REQUEST -p key=value ... | --answer JSON",
		Short: "Answer an agent's question (or any input request)",
		Long: `Answer an open input request. -p key=value sets one field of the answer, typed from the request's
schema as ao run types parameters (numbers, booleans, arrays, objects); --answer gives the whole answer
as JSON, or @FILE (@- reads stdin). An answer that does not match the schema is refused with every error
and changes nothing.`,
		Example: `  ao answer inp_01… -p region=eu
  ao answer inp_01… --answer '{"approved": true}'`,
		Args: args(1, "a request id"),
		RunE: func(c *cobra.Command, a []string) error {
			h, err := e.humanInput()
			if err != nil {
				return err
			}
			r, err := h.GetInputRequest(c.Context(), a[0], 0)
			if err != nil {
				return err
			}
			base, err := e.readParams(raw)
			if err != nil {
				return err
			}
			if len(base) == 0 && len(pairs) == 0 {
				return usageErrorf("give the answer: -p key=value (fields of %s) or --answer JSON", r.Schema)
			}
			answer, err := buildParams(r.Schema, base, pairs)
			if err != nil {
				return err
			}
			out, err := h.AnswerInputRequest(c.Context(), r.ID, orchestrator.AnswerParams{Answer: answer})
			if err != nil {
				return err
			}
			return e.answered(out)
		},
	}
	c.Flags().StringArrayVarP(&pairs, "param", "p", nil, "set a field of the answer, key=value (repeatable)")
	c.Flags().StringVar(&raw, "answer", "", "the whole answer as JSON, or @FILE (@- reads stdin)")
	return c
}
