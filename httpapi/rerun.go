package httpapi

import (
	"context"
	"net/http"
	"net/url"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// rerunner is the coordinator's [orchestrator.Rerunner], or an error that says it has none.
func (s *server) rerunner() (orchestrator.Rerunner, error) {
	if rr, ok := s.coord.(orchestrator.Rerunner); ok {
		return rr, nil
	}
	return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "rerun_unavailable", "this coordinator cannot re-run sessions")
}

// rerunSession serves POST /sessions/{id}/rerun {"parameters": merge patch}: 201 with the new session's
// run, as POST /runs answers.
func (s *server) rerunSession(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var p orchestrator.RerunParams
	if len(data) > 0 {
		if err := decodeObject(data, &p, true); err != nil {
			return err
		}
	}
	rr, err := s.rerunner()
	if err != nil {
		return err
	}
	res, err := rr.RerunSession(r.Context(), id, p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/sessions/"+url.PathEscape(res.SessionID))
	writeJSON(w, http.StatusCreated, res)
	return nil
}

// rerunSessions serves POST /sessions/rerun {status, agent_name, created_after, limit, dry_run}: 200
// with {count, session_ids, reruns, errors}.
func (s *server) rerunSessions(w http.ResponseWriter, r *http.Request) error {
	var f orchestrator.RerunFilter
	if err := decodeBody(r, &f, true); err != nil {
		return err
	}
	rr, err := s.rerunner()
	if err != nil {
		return err
	}
	out, err := rr.RerunSessions(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// RerunSession implements [orchestrator.Rerunner]: a runner's credential may not re-run (the route table
// refuses it before this).
func (s *runnerScoped) RerunSession(ctx context.Context, id string, p orchestrator.RerunParams) (*orchestrator.StartRunResult, error) {
	if boundRunner(ctx) != "" {
		return nil, runnerForbidden("re-run sessions")
	}
	rr, ok := s.inner.(orchestrator.Rerunner)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "rerun_unavailable", "this coordinator cannot re-run sessions")
	}
	return rr.RerunSession(ctx, id, p)
}

// RerunSessions implements [orchestrator.Rerunner], as RerunSession.
func (s *runnerScoped) RerunSessions(ctx context.Context, f orchestrator.RerunFilter) (*orchestrator.RerunBatch, error) {
	if boundRunner(ctx) != "" {
		return nil, runnerForbidden("re-run sessions")
	}
	rr, ok := s.inner.(orchestrator.Rerunner)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "rerun_unavailable", "this coordinator cannot re-run sessions")
	}
	return rr.RerunSessions(ctx, f)
}

var (
	_ orchestrator.Rerunner = (*runnerScoped)(nil)
	_ orchestrator.Rerunner = (*Client)(nil)
)

// RerunSession implements [orchestrator.Rerunner] with POST /sessions/{id}/rerun. It is not repeated
// once it may have reached the server: a repeat would start a second re-run.
func (c *Client) RerunSession(ctx context.Context, id string, p orchestrator.RerunParams) (*orchestrator.StartRunResult, error) {
	var out orchestrator.StartRunResult
	if _, err := c.do(ctx, call{method: "POST", path: "/sessions/" + seg(id) + "/rerun", body: p, unsafe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RerunSessions implements [orchestrator.Rerunner] with POST /sessions/rerun, not repeated once it may
// have reached the server (unless it is a dry run, which changes nothing).
func (c *Client) RerunSessions(ctx context.Context, f orchestrator.RerunFilter) (*orchestrator.RerunBatch, error) {
	var out orchestrator.RerunBatch
	if _, err := c.do(ctx, call{method: "POST", path: "/sessions/rerun", body: f, unsafe: !f.DryRun}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
