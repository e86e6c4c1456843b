package httpapi

import (
	"encoding/json"
	"net/http"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// runnerList is the body of GET /runners.
type runnerList struct {
	Runners []*orchestrator.RunnerInfo `json:"runners"`
}

func (s *server) listRunners(w http.ResponseWriter, r *http.Request) error {
	list, err := s.coord.ListRunners(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []*orchestrator.RunnerInfo{}
	}
	writeJSON(w, http.StatusOK, runnerList{list})
	return nil
}

// deleteRunner serves DELETE /runners/{id} (admin) and deregister DELETE /runner/{id} (the runner itself):
// both remove the runner and its blueprints.
func (s *server) deleteRunner(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.coord.DeregisterRunner(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) deregister(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := sameRunner(r.Context(), id); err != nil {
		return err
	}
	return s.deleteRunner(w, r)
}

// actingRunner returns the runner a /runner/* request acts for: the runner its credential is bound to —
// named names it too, or nothing — or, for an admin and on an open API, the runner named, which bad
// (badBody or badQuery) says is then required.
func actingRunner(r *http.Request, named string, bad func(format string, args ...any) error) (string, error) {
	if b := boundRunner(r.Context()); b != "" {
		if named != "" && named != b {
			return "", runnerMismatch(b, named)
		}
		return b, nil
	}
	if named == "" {
		return "", bad("runner_id is required")
	}
	return named, nil
}

func (s *server) register(w http.ResponseWriter, r *http.Request) error {
	var reg orchestrator.RunnerRegistration
	if err := decodeBody(r, &reg, false); err != nil {
		return err
	}
	out, err := s.coord.RegisterRunner(r.Context(), &reg)
	if err != nil {
		return err
	}
	if out.Blueprints == nil {
		out.Blueprints = []orchestrator.RegisteredBlueprint{}
	}
	// The runner must cut its results to what both the coordinator and this handler's body limit accept.
	if out.MaxResultBytes <= 0 || out.MaxResultBytes > s.maxResult {
		out.MaxResultBytes = s.maxResult
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// runnerRef is the body of POST /runner/heartbeat.
type runnerRef struct {
	RunnerID string `json:"runner_id"`
}

func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	var ref runnerRef
	if err := decodeBody(r, &ref, false); err != nil {
		return err
	}
	id, err := actingRunner(r, ref.RunnerID, badBody)
	if err != nil {
		return err
	}
	if err := s.coord.Heartbeat(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pollWork serves GET /runner/runs?runner_id=&max=&wait=: the runner's work ({runs, stop}) as soon as
// there is some, or 204 No Content when the wait (default Config.PollWait) elapsed with none. max (default
// 1) is how many runs the runner can take; 0 asks for stop requests only.
func (s *server) pollWork(w http.ResponseWriter, r *http.Request) error {
	id, err := actingRunner(r, r.URL.Query().Get("runner_id"), badQuery)
	if err != nil {
		return err
	}
	maxRuns, err := queryInt(r, "max", 1, 0, 10000)
	if err != nil {
		return err
	}
	wait, err := s.queryWait(r, "wait", s.cfg.PollWait)
	if err != nil {
		return err
	}
	extendWriteDeadline(w, wait)
	work, err := s.coord.PollWork(r.Context(), orchestrator.PollParams{RunnerID: id, Wait: wait, Max: int(maxRuns)})
	if err != nil {
		return err
	}
	if work.Empty() {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeJSON(w, http.StatusOK, work)
	return nil
}

// reportBody is the body of POST /runner/runs/{id}/{started,completed,failed,stopped}. The run and the
// status come from the path; a run_id in the body must agree with it.
type reportBody struct {
	RunnerID string               `json:"runner_id"`
	RunID    string               `json:"run_id,omitempty"`
	Result   *orchestrator.Result `json:"result,omitempty"`
	Error    string               `json:"error,omitempty"`
}

func (s *server) report(w http.ResponseWriter, r *http.Request, status orchestrator.RunStatus) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var b reportBody
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	if b.RunID != "" && b.RunID != id {
		return badBody("run_id %q in the body does not match run %q in the path", b.RunID, id)
	}
	runner, err := actingRunner(r, b.RunnerID, badBody)
	if err != nil {
		return err
	}
	rep := orchestrator.RunReport{RunnerID: runner, RunID: id, Status: status, Result: b.Result, Error: b.Error}
	if err := s.coord.ReportRun(r.Context(), rep); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) reportStarted(w http.ResponseWriter, r *http.Request) error {
	return s.report(w, r, orchestrator.RunRunning)
}

func (s *server) reportCompleted(w http.ResponseWriter, r *http.Request) error {
	return s.report(w, r, orchestrator.RunCompleted)
}

func (s *server) reportFailed(w http.ResponseWriter, r *http.Request) error {
	return s.report(w, r, orchestrator.RunFailed)
}

func (s *server) reportStopped(w http.ResponseWriter, r *http.Request) error {
	return s.report(w, r, orchestrator.RunStopped)
}

// MaxReportsPerRequest bounds the reports of one POST /runner/reports.
const MaxReportsPerRequest = 1000

// reportsBody is the body of POST /runner/reports: several reports, each as the single-report endpoints
// take one plus its run_id and status (running, completed, failed or stopped).
type reportsBody struct {
	Reports []orchestrator.RunReport `json:"reports"`
}

// reportsAnswer is the answer of POST /runner/reports: one result per report, in order. Each carries the
// report's run_id and the status that report alone would have got from its own endpoint — 204 when it was
// applied — and, when it was refused, the fields of that endpoint's error body ("error", "message", …).
type reportsAnswer struct {
	Results []map[string]any `json:"results"`
}

// reportRuns serves POST /runner/reports, the batch form of the report endpoints that a runner uses for
// reports that become ready together (see orchestrator.BatchReporter). The request fails as a whole only
// when it is malformed; each report is then applied or refused on its own.
func (s *server) reportRuns(w http.ResponseWriter, r *http.Request) error {
	var b reportsBody
	if err := decodeBody(r, &b, false); err != nil {
		return err
	}
	if len(b.Reports) == 0 {
		return badBody("reports is required: a list of at least one report")
	}
	if len(b.Reports) > MaxReportsPerRequest {
		return badBody("%d reports; at most %d per request", len(b.Reports), MaxReportsPerRequest)
	}
	if runner := boundRunner(r.Context()); runner != "" {
		for i := range b.Reports { // each report is the credential's runner's; a mismatch is refused below
			if b.Reports[i].RunnerID == "" {
				b.Reports[i].RunnerID = runner
			}
		}
	}
	var errs []error
	if br, ok := s.coord.(orchestrator.BatchReporter); ok {
		errs = br.ReportRuns(r.Context(), b.Reports)
	} else {
		errs = make([]error, len(b.Reports))
		for i, rep := range b.Reports {
			errs[i] = s.coord.ReportRun(r.Context(), rep)
		}
	}
	out := reportsAnswer{Results: make([]map[string]any, len(b.Reports))}
	for i, rep := range b.Reports {
		item := map[string]any{}
		status := http.StatusNoContent
		if i < len(errs) && errs[i] != nil {
			var body []byte
			status, body = renderError(r, s.log, errs[i])
			if err := json.Unmarshal(body, &item); err != nil {
				return err
			}
		}
		item["run_id"], item["status"] = rep.RunID, status
		out.Results[i] = item
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// reportPath maps a report's status to the last element of its path.
func reportPath(st orchestrator.RunStatus) (string, bool) {
	switch st {
	case orchestrator.RunRunning:
		return "started", true
	case orchestrator.RunCompleted, orchestrator.RunFailed, orchestrator.RunStopped:
		return string(st), true
	}
	return "", false
}
