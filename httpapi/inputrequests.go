package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// inputRequestList is the body of GET /input-requests.
type inputRequestList struct {
	InputRequests []*orchestrator.InputRequest `json:"input_requests"`
	NextCursor    string                       `json:"next_cursor,omitempty"`
}

// humanInput is the coordinator's [orchestrator.HumanInput], or an error when it has none.
func (s *server) humanInput() (orchestrator.HumanInput, error) {
	if h, ok := s.coord.(*runnerScoped).inner.(orchestrator.HumanInput); ok {
		return h, nil
	}
	return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "input_requests_unavailable", "this coordinator takes no input requests")
}

func inputRequestNotFound(id string) error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, "input_request_not_found", "input request %q not found", id)
}

// askHuman serves POST /sessions/{id}/input-requests: an agent's question (a runner's credential: for a
// session in its scope only).
func (s *server) askHuman(w http.ResponseWriter, r *http.Request) error {
	h, err := s.humanInput()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.coord.(*runnerScoped).sessionAccess(r.Context(), id); err != nil {
		return err
	}
	var p orchestrator.AskParams
	if err := decodeBody(r, &p, true); err != nil {
		return err
	}
	p.SessionID = id
	out, err := h.AskHuman(r.Context(), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/input-requests/"+url.PathEscape(out.ID))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *server) listInputRequests(w http.ResponseWriter, r *http.Request) error {
	h, err := s.humanInput()
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return err
	}
	f := orchestrator.InputRequestFilter{SessionID: r.URL.Query().Get("session_id"), AfterID: r.URL.Query().Get("after"), Limit: int(limit)}
	for _, v := range queryList(r, "status") {
		f.Statuses = append(f.Statuses, orchestrator.InputRequestStatus(v))
	}
	if boundRunner(r.Context()) != "" {
		// A runner reads its own sessions' requests only: it names the session, which must be in its scope.
		if f.SessionID == "" {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "session_id_required", "a runner's credential lists the input requests of one session of its own: give session_id")
		}
		if err := s.coord.(*runnerScoped).sessionAccess(r.Context(), f.SessionID); err != nil {
			return err
		}
	}
	list, err := h.ListInputRequests(r.Context(), f)
	if err != nil {
		return err
	}
	out := inputRequestList{InputRequests: list}
	if out.InputRequests == nil {
		out.InputRequests = []*orchestrator.InputRequest{}
	}
	if f.Limit > 0 && len(list) == f.Limit {
		out.NextCursor = list[len(list)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getInputRequest serves GET /input-requests/{id}[?wait=]: the request, long-polled while it is open. A
// runner's credential reads the requests of sessions in its scope only; any other is 404, the same
// answer as for a request that does not exist.
func (s *server) getInputRequest(w http.ResponseWriter, r *http.Request) error {
	h, err := s.humanInput()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	wait, err := s.queryWait(r, "wait", 0)
	if err != nil {
		return err
	}
	if boundRunner(r.Context()) != "" {
		first, err := h.GetInputRequest(r.Context(), id, 0)
		if errors.Is(err, orchestrator.ErrNotFound) {
			return inputRequestNotFound(id)
		}
		if err != nil {
			return err
		}
		if err := s.coord.(*runnerScoped).sessionAccess(r.Context(), first.SessionID); err != nil {
			if errors.Is(err, orchestrator.ErrNotFound) {
				return inputRequestNotFound(id)
			}
			return err
		}
	}
	if wait > 0 {
		extendWriteDeadline(w, wait)
	}
	out, err := h.GetInputRequest(r.Context(), id, wait)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// answerInputRequest serves POST /input-requests/{id}/answer. answered_by records the caller's role.
func (s *server) answerInputRequest(w http.ResponseWriter, r *http.Request) error {
	h, err := s.humanInput()
	if err != nil {
		return err
	}
	if err := notForRunners(r.Context(), "answer input requests"); err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var body struct {
		Answer json.RawMessage `json:"answer"`
	}
	if err := decodeBody(r, &body, true); err != nil {
		return err
	}
	by := "api"
	if role, ok := RoleFromContext(r.Context()); ok && role != "" {
		by = string(role)
	}
	out, err := h.AnswerInputRequest(r.Context(), id, orchestrator.AnswerParams{Answer: body.Answer, AnsweredBy: by})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

var _ orchestrator.HumanInput = (*Client)(nil)

// AskHuman implements [orchestrator.HumanInput]. It is not retried once the request may have reached the
// coordinator: a retry could ask twice.
func (c *Client) AskHuman(ctx context.Context, p orchestrator.AskParams) (*orchestrator.InputRequest, error) {
	var out orchestrator.InputRequest
	if _, err := c.do(ctx, call{method: "POST", path: "/sessions/" + seg(p.SessionID) + "/input-requests", body: p, unsafe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetInputRequest implements [orchestrator.HumanInput], long-polling in requests of at most MaxWait.
func (c *Client) GetInputRequest(ctx context.Context, id string, wait time.Duration) (*orchestrator.InputRequest, error) {
	return waitUntilEnded(ctx, c, "/input-requests/"+seg(id), wait, func(r *orchestrator.InputRequest) bool {
		return r.Status != orchestrator.InputOpen
	})
}

// ListInputRequests implements [orchestrator.HumanInput].
func (c *Client) ListInputRequests(ctx context.Context, f orchestrator.InputRequestFilter) ([]*orchestrator.InputRequest, error) {
	q := url.Values{}
	setq(q, "session_id", f.SessionID)
	setq(q, "after", f.AfterID)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	for _, st := range f.Statuses {
		q.Add("status", string(st))
	}
	var out inputRequestList
	if _, err := c.do(ctx, call{method: "GET", path: "/input-requests", query: q}, &out); err != nil {
		return nil, err
	}
	return out.InputRequests, nil
}

// AnswerInputRequest implements [orchestrator.HumanInput]. A retry after a lost answer is harmless: the
// second answer is refused with request_closed and the first stands. p.AnsweredBy is not sent: the
// coordinator records the role of the credential.
func (c *Client) AnswerInputRequest(ctx context.Context, id string, p orchestrator.AnswerParams) (*orchestrator.InputRequest, error) {
	var out orchestrator.InputRequest
	body := map[string]json.RawMessage{"answer": p.Answer}
	if _, err := c.do(ctx, call{method: "POST", path: "/input-requests/" + seg(id) + "/answer", body: body, unsafe: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
