package httpapi

import (
	"net/http"
	"net/url"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// startRun serves POST /runs. The body is [orchestrator.StartRunParams]: type says start or resume, mode
// how the caller learns the outcome. A sync run waits for the session to end up to ?wait= (default and
// cap: Config.MaxWait) and answers with its result; other modes answer at once. The legacy "mode":
// "resume" is a resume in sync mode when ?wait= is given, async_poll otherwise. The caller's
// X-Agent-Session-Id becomes parent_session_id when a new session names none.
func (s *server) startRun(w http.ResponseWriter, r *http.Request) error {
	var p orchestrator.StartRunParams
	if err := decodeBody(r, &p, false); err != nil {
		return err
	}
	wait, err := s.queryWait(r, "wait", 0)
	if err != nil {
		return err
	}
	// The legacy spelling, made explicit here so that whatever Coordinator serves the request (a remote
	// one through a Client too) sees the mode the caller asked for with ?wait=.
	if p.Mode == "resume" && (p.Type == "" || p.Type == orchestrator.RunTypeResume) {
		p.Type, p.Mode = orchestrator.RunTypeResume, ""
		if r.URL.Query().Has("wait") {
			p.Mode = orchestrator.ModeSync
		}
	}
	resume := p.Type == orchestrator.RunTypeResume || p.Mode == "resume"
	if p.ParentSessionID == "" && !resume {
		p.ParentSessionID = r.Header.Get(HeaderSessionID)
	}
	if p.Mode == orchestrator.ModeSync {
		if wait == 0 {
			wait = s.cfg.MaxWait
		}
		p.Wait = wait
		extendWriteDeadline(w, wait)
	}
	res, err := s.coord.StartRun(r.Context(), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/sessions/"+url.PathEscape(res.SessionID))
	writeJSON(w, http.StatusCreated, res)
	return nil
}

// runList is the body of GET /runs. NextCursor (the after parameter of the next page) is set when the
// page is full.
type runList struct {
	Runs       []*orchestrator.Run `json:"runs"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

func (s *server) listRuns(w http.ResponseWriter, r *http.Request) error {
	f, err := runFilter(r)
	if err != nil {
		return err
	}
	runs, err := s.coord.ListRuns(r.Context(), f)
	if err != nil {
		return err
	}
	out := runList{Runs: runs}
	if out.Runs == nil {
		out.Runs = []*orchestrator.Run{}
	}
	if f.Limit > 0 && len(runs) == f.Limit {
		out.NextCursor = runs[len(runs)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func runFilter(r *http.Request) (orchestrator.RunFilter, error) {
	q := r.URL.Query()
	statuses, err := queryRunStatuses(r)
	if err != nil {
		return orchestrator.RunFilter{}, err
	}
	limit, err := queryInt(r, "limit", 0, 0, maxLimit)
	if err != nil {
		return orchestrator.RunFilter{}, err
	}
	before, err := queryTime(r, "created_before")
	if err != nil {
		return orchestrator.RunFilter{}, err
	}
	return orchestrator.RunFilter{
		Statuses:       statuses,
		SessionID:      q.Get("session_id"),
		RunnerID:       q.Get("runner_id"),
		DemandRunnerID: q.Get("demand_runner_id"),
		AgentName:      q.Get("agent_name"),
		CreatedBefore:  before,
		AfterID:        q.Get("after"),
		Limit:          int(limit),
	}, nil
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	run, err := s.coord.GetRun(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

func (s *server) stopRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	run, err := s.coord.StopRun(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}
