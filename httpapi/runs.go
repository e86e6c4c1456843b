package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// startRun serves POST /runs. The body is [orchestrator.StartRunParams]: type says start or resume, mode
// how the caller learns the outcome. A sync run waits for the run to end up to ?wait= (default and
// cap: Config.MaxWait) and answers with its own result (see [orchestrator.Coordinator.WaitRun]); other
// modes answer at once. The legacy "mode": "resume" is a resume in sync mode when ?wait= is given,
// async_poll otherwise. The caller's X-Agent-Session-Id becomes parent_session_id when a new session
// names none.
//
// An Idempotency-Key header (or the idempotency_key field; both must then agree) makes the request safe
// to retry: a repeat of the request answers 200 with the first answer instead of 201 with a new run, and a
// different request with the same key is refused with 422 idempotency_key_reused.
//
// A body {"runs": [...]} is a fan-out instead: see [server.startRuns].
func (s *server) startRun(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if batch, err := batchBody(data); err != nil {
		return err
	} else if batch != nil {
		return s.startRuns(w, r, batch)
	}
	if int64(len(data)) > s.cfg.MaxBodyBytes {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "body_too_large", "request body exceeds %d bytes", s.cfg.MaxBodyBytes)
	}
	var body runRequest
	if err := decodeObject(data, &body, false); err != nil {
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

// runBatch is the body of a fan-out: POST /runs with {"runs": [...]}, and its answer.
type runBatch struct {
	Runs []runRequest `json:"runs"`
}

type runBatchResult struct {
	Runs []*orchestrator.StartRunResult `json:"runs"`
}

// batchBody returns the runs of a fan-out body, or nil when data is not one (it has no "runs" key).
func batchBody(data []byte) ([]orchestrator.StartRunParams, error) {
	var probe struct {
		Runs json.RawMessage `json:"runs"`
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &probe) != nil || probe.Runs == nil {
		return nil, nil // not a batch: the single run's decoding says what is wrong
	}
	var b runBatch
	if err := decodeObject(data, &b, false); err != nil {
		return nil, err
	}
	if b.Runs == nil {
		return nil, badBody("runs must be an array of runs")
	}
	ps := make([]orchestrator.StartRunParams, len(b.Runs))
	for i := range b.Runs {
		var err error
		if ps[i], err = b.Runs[i].params(); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// startRuns serves a fan-out: every run is validated first; when any is invalid nothing is created and
// the answer is 400 invalid_runs, listing each invalid run's index and error; else all are created in
// one transaction and the answer is 201 with their run and session ids, in order. A batch does not wait
// (no ?wait=, no sync mode); X-Agent-Session-Id is the parent of each run that names none.
func (s *server) startRuns(w http.ResponseWriter, r *http.Request, runs []orchestrator.StartRunParams) error {
	if len(runs) > s.cfg.MaxBatchRuns {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "too_many_runs", "a batch holds at most %d runs, not %d", s.cfg.MaxBatchRuns, len(runs))
	}
	if r.URL.Query().Has("wait") {
		return badQuery("a batch does not wait: wait on each session instead")
	}
	if parent := r.Header.Get(HeaderSessionID); parent != "" {
		for i := range runs {
			if runs[i].ParentSessionID == "" && runs[i].Type != orchestrator.RunTypeResume && runs[i].Mode != "resume" {
				runs[i].ParentSessionID = parent
			}
		}
	}
	res, err := s.coord.(orchestrator.BatchStarter).StartRuns(r.Context(), runs) // runnerScoped is one
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, runBatchResult{Runs: res})
	return nil
}

// HeaderIdempotencyKey carries a POST /runs request's idempotency key.
const HeaderIdempotencyKey = "Idempotency-Key"

// runRequest is the body of POST /runs: [orchestrator.StartRunParams], with the delay as a duration
// ("30s", "1h30m").
type runRequest struct {
	orchestrator.StartRunParams
	Delay string `json:"delay,omitempty"`
	// RateLimit is read only to be refused: a run takes its agent's rate limit and cannot set or loosen it.
	RateLimit json.RawMessage `json:"rate_limit,omitempty"`
}

func (b *runRequest) params() (orchestrator.StartRunParams, error) {
	p := b.StartRunParams
	if len(b.RateLimit) > 0 {
		return p, orchestrator.Errorf(orchestrator.ErrInvalid, "rate_limit_not_allowed",
			"rate_limit belongs to the agent's blueprint; a run cannot set or loosen it")
	}
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

// getRunResult serves GET /runs/{id}/result[?wait=]: the run's outcome once it has ended, or its
// session's current status when the wait elapses first (see [orchestrator.Coordinator.WaitRun]). It is
// 200 either way; the caller looks at status to see which happened.
func (s *server) getRunResult(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	wait, err := s.queryWait(r, "wait", 0)
	if err != nil {
		return err
	}
	if wait > 0 {
		extendWriteDeadline(w, wait)
	}
	res, err := s.coord.WaitRun(r.Context(), id, wait)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
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
