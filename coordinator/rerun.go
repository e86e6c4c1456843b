package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/mergepatch"
)

var _ orchestrator.Rerunner = (*Coordinator)(nil)

// rerunPage is how many sessions RerunSessions reads from the store at a time while it selects.
const rerunPage = 200

// RerunSession starts the ended session id again as a new session (see [orchestrator.Rerunner]).
//
// The new session is started as POST /runs would start it, in async_poll mode, with the original's
// parameters (p.Parameters merged over them), metadata, output schema, retry policy, project directory
// and demands, and its last run's priority and concurrency key. It is validated again: a schema that changed since
// refuses parameters that no longer fit, exactly as a new start would. It is a top-level session — an
// operator asked for it, not the original's parent — so it has no parent and calls nobody back, and
// the original's callback_url is not copied: its receiver expects one call per session it started.
func (c *Coordinator) RerunSession(ctx context.Context, id string, p orchestrator.RerunParams) (*orchestrator.StartRunResult, error) {
	orig, err := lookup(c.store.GetSession(ctx, id)).as("session", id)
	if err != nil {
		return nil, err
	}
	if !orig.Status.Ended() {
		return nil, orchestrator.Errorf(orchestrator.ErrConflict, "session_active",
			"session %s is %s; only an ended session can be re-run (stop it first)", id, orig.Status)
	}
	params, err := mergeParameters(orig.Parameters, p.Parameters)
	if err != nil {
		return nil, err
	}
	start := orchestrator.StartRunParams{
		AgentName:    orig.AgentName,
		Parameters:   params,
		Mode:         orchestrator.ModeAsyncPoll,
		ProjectDir:   orig.ProjectDir,
		OutputSchema: orig.OutputSchema,
		Metadata:     orig.Metadata,
		Retry:        orig.Retry,
	}
	if !orig.Demands.IsZero() {
		d := orig.Demands
		// The owning runner is the agent's current one, which the start adds itself: a runner that
		// registered again under another id still runs the re-run.
		d.RunnerID = ""
		d.Tags = slices.Clone(d.Tags)
		start.Demands = &d
	}
	if orig.CurrentRunID != "" {
		if last, err := c.store.GetRun(ctx, orig.CurrentRunID); err == nil {
			start.Priority, start.ConcurrencyKey = last.Priority, last.ConcurrencyKey
		}
	}
	res, err := c.startRun(ctx, start, orig.ID)
	if err == nil {
		if m, ok := c.metrics.(RerunMetrics); ok {
			m.Rerun(orig.AgentName)
		}
	}
	return res, err
}

// RerunMetrics is a [Metrics] that also counts re-runs; package prommetrics implements it. It is an
// interface of its own so that a Metrics written before re-runs existed keeps compiling.
type RerunMetrics interface {
	// Rerun counts a session of agent started again by RerunSession or RerunSessions.
	Rerun(agent string)
}

// RerunSessions re-runs the sessions f selects (see [orchestrator.Rerunner]). It selects the newest
// first, so that a limit keeps the most recent failures, and re-runs them one at a time: each re-run is
// its own transaction, and one that is refused does not undo the others.
func (c *Coordinator) RerunSessions(ctx context.Context, f orchestrator.RerunFilter) (*orchestrator.RerunBatch, error) {
	statuses, limit, err := checkRerunFilter(f)
	if err != nil {
		return nil, err
	}
	var selected []*orchestrator.Session
	cursor := ""
selecting:
	for len(selected) < limit {
		page, err := c.store.ListSessions(ctx, orchestrator.SessionFilter{
			Statuses: statuses, AgentName: f.AgentName, NewestFirst: true, AfterID: cursor, Limit: rerunPage,
		})
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if f.CreatedAfter != nil && !s.CreatedAt.After(*f.CreatedAfter) {
				break selecting // newest first: every later one is older still
			}
			selected = append(selected, s)
			if len(selected) == limit {
				break selecting
			}
		}
		if len(page) < rerunPage {
			break
		}
		cursor = page[len(page)-1].ID
	}
	out := &orchestrator.RerunBatch{SessionIDs: []string{}}
	for _, s := range selected {
		if f.DryRun {
			out.SessionIDs = append(out.SessionIDs, s.ID)
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := c.RerunSession(ctx, s.ID, orchestrator.RerunParams{})
		if err != nil {
			out.Errors = append(out.Errors, &orchestrator.RerunFailure{
				SessionID: s.ID, Code: orchestrator.ErrorCode(err), Message: err.Error(),
			})
			continue
		}
		out.SessionIDs = append(out.SessionIDs, s.ID)
		out.Reruns = append(out.Reruns, &orchestrator.RerunOutcome{RerunOf: s.ID, SessionID: res.SessionID, RunID: res.RunID})
	}
	out.Count = len(out.SessionIDs)
	return out, nil
}

// checkRerunFilter returns the statuses and the limit f selects with, its defaults applied.
func checkRerunFilter(f orchestrator.RerunFilter) ([]orchestrator.SessionStatus, int, error) {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []orchestrator.SessionStatus{orchestrator.SessionFailed}
	}
	for _, st := range statuses {
		if !st.Ended() {
			return nil, 0, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
				"status %q is not an ended status; only completed, failed and stopped sessions can be re-run", st).With("field", "status")
		}
	}
	switch {
	case f.Limit == 0:
		return statuses, orchestrator.MaxRerunBatch, nil
	case f.Limit < 0 || f.Limit > orchestrator.MaxRerunBatch:
		return nil, 0, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"limit must be between 1 and %d, not %d", orchestrator.MaxRerunBatch, f.Limit).With("field", "limit")
	}
	return statuses, f.Limit, nil
}

// mergeParameters applies patch, an RFC 7386 JSON merge patch, to the original parameters.
func mergeParameters(orig, patch json.RawMessage) (json.RawMessage, error) {
	patch = bytes.TrimSpace(patch)
	if len(patch) == 0 || bytes.Equal(patch, []byte("null")) {
		return orig, nil
	}
	var p any
	if err := decodeNumbers(patch, &p); err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_json", "parameters: %v", err).With("field", "parameters")
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request",
			"parameters must be a JSON object: a merge patch over the original session's parameters").With("field", "parameters")
	}
	var target any = map[string]any{}
	if len(bytes.TrimSpace(orig)) > 0 {
		if err := decodeNumbers(orig, &target); err != nil {
			return nil, err
		}
	}
	return json.Marshal(mergepatch.Apply(target, p))
}

// decodeNumbers decodes JSON keeping numbers as written (json.Number), so that a merge does not turn a
// large integer into a float.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
