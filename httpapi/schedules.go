package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// scheduleList is the body of GET /schedules.
type scheduleList struct {
	Schedules  []*orchestrator.Schedule `json:"schedules"`
	NextCursor string                   `json:"next_cursor,omitempty"`
}

// scheduler is the coordinator's [orchestrator.Scheduler] — scoped to a runner's trees for a request made
// with a runner's credential (runnerSchedules) — or an error when it keeps no schedules.
func (s *server) scheduler(ctx context.Context) (orchestrator.Scheduler, error) {
	rs := s.coord.(*runnerScoped)
	sc, ok := rs.inner.(orchestrator.Scheduler)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "schedules_unavailable", "this coordinator keeps no schedules")
	}
	if b := boundRunner(ctx); b != "" {
		return &runnerSchedules{Scheduler: sc, scope: rs, runner: b}, nil
	}
	return sc, nil
}

// Schedule bodies are decoded strictly: a misspelt "overlap" would otherwise become the default policy.
func decodeScheduleParams(r *http.Request) (orchestrator.ScheduleParams, error) {
	var p orchestrator.ScheduleParams
	err := decodeBody(r, &p, true)
	return p, err
}

func (s *server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduler(r.Context())
	if err != nil {
		return err
	}
	p, err := decodeScheduleParams(r)
	if err != nil {
		return err
	}
	out, err := sc.CreateSchedule(r.Context(), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/schedules/"+url.PathEscape(out.ID))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduler(r.Context())
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := orchestrator.ScheduleFilter{AgentName: q.Get("agent_name"), AfterID: q.Get("after"), TreeOf: q.Get("tree_of"), Limit: int(limit)}
	list, err := sc.ListSchedules(r.Context(), f)
	if err != nil {
		return err
	}
	out := scheduleList{Schedules: list}
	if out.Schedules == nil {
		out.Schedules = []*orchestrator.Schedule{}
	}
	if f.Limit > 0 && len(list) == f.Limit {
		out.NextCursor = list[len(list)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduler(r.Context())
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	out, err := sc.GetSchedule(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) patchSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduler(r.Context())
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	p, err := decodeScheduleParams(r)
	if err != nil {
		return err
	}
	out, err := sc.UpdateSchedule(r.Context(), id, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduler(r.Context())
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := sc.DeleteSchedule(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var _ orchestrator.Scheduler = (*Client)(nil)

// CreateSchedule implements [orchestrator.Scheduler]. It is not retried once the request may have
// reached the coordinator: a retry could make a second schedule.
func (c *Client) CreateSchedule(ctx context.Context, p orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	var out orchestrator.Schedule
	if _, err := c.do(ctx, call{method: "POST", path: "/schedules", body: p, unsafe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSchedule implements [orchestrator.Scheduler].
func (c *Client) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	var out orchestrator.Schedule
	if _, err := c.do(ctx, call{method: "GET", path: "/schedules/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSchedules implements [orchestrator.Scheduler] (AgentName, TreeOf, AfterID and Limit; the API lists
// oldest first).
func (c *Client) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	q := url.Values{}
	setq(q, "agent_name", f.AgentName)
	setq(q, "after", f.AfterID)
	setq(q, "tree_of", f.TreeOf)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out scheduleList
	if _, err := c.do(ctx, call{method: "GET", path: "/schedules", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Schedules, nil
}

// UpdateSchedule implements [orchestrator.Scheduler] (PATCH /schedules/{id}).
func (c *Client) UpdateSchedule(ctx context.Context, id string, p orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	var out orchestrator.Schedule
	if _, err := c.do(ctx, call{method: "PATCH", path: "/schedules/" + seg(id), body: p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSchedule implements [orchestrator.Scheduler].
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: "/schedules/" + seg(id)}, nil)
	return err
}
