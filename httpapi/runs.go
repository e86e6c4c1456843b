package httpapi

import (
	"net/http"
	"net/url"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// startRun serves POST /runs. The body is [orchestrator.StartRunParams]: type says start or resume, mode
// how the caller learns the outcome. A sync run waits for the session to end up to ?wait= (default and
// cap: Config.MaxWait) and answers with its result; other modes answer at once. The legacy "mode":
// "resume" is a resume in sync mode when ?wait= is given, async_poll otherwise. The caller's
// X-Agent-Session-Id becomes parent_session_id when a new session names none.
//
// An Idempotency-Key header (or the idempotency_key field; both must then agree) makes the request safe
// to retry: a repeat of the request answers 200 with the first answer instead of 201 with a new run, and a
// different request with the same key is refused with 422 idempotency_key_reused.
func (s *server) startRun(w http.ResponseWriter, r *http.Request) error {
	var body runRequest
	if err := decodeBody(r, &body, false); err != nil {
		return err
	}
	p, err := body.params()
	if err != nil {
		return err
	}
	if k := r.Header.Get(HeaderIdempotencyKey); k != "" {
		if p.IdempotencyKey != "" && p.IdempotencyKey != k {
			return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_idempotency_key", "the Idempotency-Key header and the idempotency_key field differ")
		}
		p.IdempotencyKey = k
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
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}

// HeaderIdempotencyKey carries a POST /runs request's idempotency key.
const HeaderIdempotencyKey = "Idempotency-Key"

// runRequest is the body of POST /runs: [orchestrator.StartRunParams], with the delay as a duration
// ("30s", "1h30m").
type runRequest struct {
	orchestrator.StartRunParams
	Delay string `json:"delay,omitempty"`
}

func (b *runRequest) params() (orchestrator.StartRunParams, error) {
	p := b.StartRunParams
	if b.Delay != "" {
		d, err := time.ParseDuration(b.Delay)
		if err != nil || d < 0 {
			return p, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_delay", "delay must be a duration such as \"30s\" or \"1h30m\", not %q", b.Delay)
		}
		p.Delay = d
	}
	return p, nil
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
