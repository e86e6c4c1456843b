package httpapi

import (
	"net/http"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) error {
	f, err := sessionFilter(r)
	if err != nil {
		return err
	}
	page, err := s.coord.ListSessions(r.Context(), f)
	if err != nil {
		return err
	}
	if page.Sessions == nil {
		page.Sessions = []*orchestrator.Session{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func sessionFilter(r *http.Request) (orchestrator.SessionFilter, error) {
	q := r.URL.Query()
	statuses, err := querySessionStatuses(r)
	if err != nil {
		return orchestrator.SessionFilter{}, err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return orchestrator.SessionFilter{}, err
	}
	before, err := queryTime(r, "ended_before")
	if err != nil {
		return orchestrator.SessionFilter{}, err
	}
	var newest bool
	switch o := q.Get("order"); o {
	case "", "oldest":
	case "newest":
		newest = true
	default:
		return orchestrator.SessionFilter{}, badQuery("order must be oldest or newest, not %q", o)
	}
	return orchestrator.SessionFilter{
		NewestFirst:     newest,
		Statuses:        statuses,
		AgentName:       q.Get("agent_name"),
		ParentSessionID: q.Get("parent_session_id"),
		AfterID:         q.Get("cursor"),
		Limit:           int(limit),
		EndedBefore:     before,
	}, nil
}

// session reads a session, long-polling until it has ended when the request has ?wait=.
func (s *server) session(w http.ResponseWriter, r *http.Request) (*orchestrator.Session, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	wait, err := s.queryWait(r, "wait", 0)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		extendWriteDeadline(w, wait)
		return s.coord.WaitSession(r.Context(), id, wait)
	}
	return s.coord.GetSession(r.Context(), id)
}

// getSession serves GET /sessions/{id}[?wait=]: the session, once it has ended or the wait elapsed.
func (s *server) getSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.session(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

// sessionResult is the body of GET /sessions/{id}/result: the session's status and, once it has ended,
// its result and error. It is 200 whether or not the session has ended; a caller that long-polls with
// ?wait= looks at status to see which happened.
type sessionResult struct {
	SessionID string                     `json:"session_id"`
	Status    orchestrator.SessionStatus `json:"status"`
	Result    *orchestrator.Result       `json:"result,omitempty"`
	Error     string                     `json:"error,omitempty"`
}

func (s *server) getSessionResult(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.session(w, r)
	if err != nil {
		return err
	}
	out := sessionResult{SessionID: sess.ID, Status: sess.Status}
	if sess.Status.Ended() {
		out.Result, out.Error = sess.Result, sess.Error
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) stopSession(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	cascade, err := queryBool(r, "cascade", true)
	if err != nil {
		return err
	}
	sess, err := s.coord.StopSession(r.Context(), id, orchestrator.StopOpts{NoCascade: !cascade})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

func (s *server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.coord.DeleteSession(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
