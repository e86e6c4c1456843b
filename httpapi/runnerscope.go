package httpapi

import (
	"context"
	"errors"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// runnerScoped is the Coordinator the handler serves. A request made with a registered runner's own
// credential (RoleRunnerInstance) reaches only what that runner needs; every other request passes through
// unchanged (the route table has decided which roles reach which method).
//
// A runner acts for itself only: a runner id other than its own is 403 runner_mismatch (its reports are
// further fenced by the coordinator: a run it does not hold is 409 run_not_held). Of sessions it reaches
// those in its scope: a session whose current or last run it holds or held, and the descendants of such a
// session (its runs' children, their children, …). Every other session — another runner's, or one that
// does not exist — is 404 session_not_found, the same answer in both cases, so that a runner learns
// nothing about ids outside its scope. This holds whatever the runner's gateway checked already: a runner
// process that is compromised, or that leaked its credential, still reaches no other runner's work.
type runnerScoped struct {
	inner orchestrator.Coordinator
}

var (
	_ orchestrator.Coordinator   = (*runnerScoped)(nil)
	_ orchestrator.BatchReporter = (*runnerScoped)(nil)
	_ orchestrator.BatchStarter  = (*runnerScoped)(nil)
)

// maxScopeDepth bounds the walk up a session's ancestors when looking for one in a runner's scope.
const maxScopeDepth = 32

// sessionNotFound is the coordinator's own answer for a session that does not exist.
func sessionNotFound(id string) error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, "session_not_found", "session %q not found", id)
}

func runnerForbidden(what string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "forbidden", "a runner's credential may not %s", what)
}

// runnerMismatch is the answer to a runner credential used for another runner.
func runnerMismatch(bound, named string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "runner_mismatch",
		"this credential is runner %s's; it cannot act for runner %s", bound, named).With("runner_id", named)
}

// sameRunner checks that id is the runner the request's credential is bound to, if it is bound.
func sameRunner(ctx context.Context, id string) error {
	if b := boundRunner(ctx); b != "" && id != b {
		return runnerMismatch(b, id)
	}
	return nil
}

// inScope checks that session id is in the scope of runner (see runnerScoped).
func (s *runnerScoped) inScope(ctx context.Context, runner, id string) error {
	if id == "" {
		return sessionNotFound(id)
	}
	cur := id
	for range maxScopeDepth {
		sess, err := s.inner.GetSession(ctx, cur)
		if errors.Is(err, orchestrator.ErrNotFound) {
			return sessionNotFound(id)
		}
		if err != nil {
			return err
		}
		held, err := s.held(ctx, runner, sess)
		if err != nil || held {
			return err
		}
		if sess.ParentSessionID == "" {
			break
		}
		cur = sess.ParentSessionID
	}
	return sessionNotFound(id)
}

// held reports whether runner holds or held the session's current (or last) run. The session's own
// runner_id is set only once a run reports it started, so the run itself decides.
func (s *runnerScoped) held(ctx context.Context, runner string, sess *orchestrator.Session) (bool, error) {
	if sess.CurrentRunID == "" {
		return sess.RunnerID == runner, nil
	}
	run, err := s.inner.GetRun(ctx, sess.CurrentRunID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return run.RunnerID == runner, nil
}

// sessionAccess checks a runner-bound request's access to session id; other requests pass.
func (s *runnerScoped) sessionAccess(ctx context.Context, id string) error {
	if b := boundRunner(ctx); b != "" {
		return s.inScope(ctx, b, id)
	}
	return nil
}

// notForRunners refuses a runner-bound request; other requests pass.
func notForRunners(ctx context.Context, what string) error {
	if boundRunner(ctx) != "" {
		return runnerForbidden(what)
	}
	return nil
}

func (s *runnerScoped) ListAgents(ctx context.Context, p orchestrator.ListAgentsParams) ([]*orchestrator.AgentInfo, error) {
	return s.inner.ListAgents(ctx, p)
}

func (s *runnerScoped) GetAgent(ctx context.Context, name string) (*orchestrator.AgentInfo, error) {
	return s.inner.GetAgent(ctx, name)
}

func (s *runnerScoped) CreateAgent(ctx context.Context, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	if err := notForRunners(ctx, "create agents"); err != nil {
		return nil, err
	}
	return s.inner.CreateAgent(ctx, b)
}

func (s *runnerScoped) UpdateAgent(ctx context.Context, name string, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	if err := notForRunners(ctx, "change agents"); err != nil {
		return nil, err
	}
	return s.inner.UpdateAgent(ctx, name, b)
}

func (s *runnerScoped) DeleteAgent(ctx context.Context, name string) error {
	if err := notForRunners(ctx, "delete agents"); err != nil {
		return err
	}
	return s.inner.DeleteAgent(ctx, name)
}

// StartRun: a runner starts children of a session in its scope (parent_session_id is required) or resumes
// one, without a callback_url (its runs' processes have no use for one, and a webhook would send the
// result wherever the caller said).
func (s *runnerScoped) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	if b := boundRunner(ctx); b != "" {
		if p.CallbackURL != "" {
			return nil, runnerForbidden("set a callback_url")
		}
		switch {
		case p.Type == orchestrator.RunTypeResume || p.Mode == "resume":
			if err := s.inScope(ctx, b, p.SessionID); err != nil {
				return nil, err
			}
		case p.ParentSessionID == "":
			return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_session_required",
				"a runner starts only children of its runs' sessions: parent_session_id is required")
		default:
			if err := s.inScope(ctx, b, p.ParentSessionID); err != nil {
				return nil, err
			}
		}
	}
	return s.inner.StartRun(ctx, p)
}

// StartRuns applies StartRun's scope checks to each run of a fan-out; the first refusal refuses the
// whole batch.
func (s *runnerScoped) StartRuns(ctx context.Context, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	bs, ok := s.inner.(orchestrator.BatchStarter)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "batch_unavailable", "this coordinator starts runs one at a time")
	}
	if b := boundRunner(ctx); b != "" {
		checked := map[string]bool{}
		for _, p := range ps {
			if p.CallbackURL != "" {
				return nil, runnerForbidden("set a callback_url")
			}
			if p.ParentSessionID == "" {
				return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_session_required",
					"a runner starts only children of its runs' sessions: parent_session_id is required")
			}
			if checked[p.ParentSessionID] {
				continue
			}
			if err := s.inScope(ctx, b, p.ParentSessionID); err != nil {
				return nil, err
			}
			checked[p.ParentSessionID] = true
		}
	}
	return bs.StartRuns(ctx, ps)
}

// GetRun: a run of a session outside the runner's scope is answered as an unknown run is.
func (s *runnerScoped) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	run, err := s.inner.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.sessionAccess(ctx, run.SessionID); err != nil {
		if errors.Is(err, orchestrator.ErrNotFound) {
			return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "run_not_found", "run %q not found", id)
		}
		return nil, err
	}
	return run, nil
}

// WaitRun: the run's session must be in the runner's scope, as for GetRun; the check comes before the
// wait, so an out-of-scope run is refused at once.
func (s *runnerScoped) WaitRun(ctx context.Context, id string, wait time.Duration) (*orchestrator.StartRunResult, error) {
	if boundRunner(ctx) != "" {
		if _, err := s.GetRun(ctx, id); err != nil {
			return nil, err
		}
	}
	return s.inner.WaitRun(ctx, id, wait)
}

func (s *runnerScoped) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	if err := notForRunners(ctx, "list runs"); err != nil {
		return nil, err
	}
	return s.inner.ListRuns(ctx, f)
}

func (s *runnerScoped) StopRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	if err := notForRunners(ctx, "stop runs by id"); err != nil {
		return nil, err
	}
	return s.inner.StopRun(ctx, id)
}

func (s *runnerScoped) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	if err := s.sessionAccess(ctx, id); err != nil {
		return nil, err
	}
	return s.inner.GetSession(ctx, id)
}

// ListSessions: a runner lists the children of a session in its scope (parent_session_id is required).
func (s *runnerScoped) ListSessions(ctx context.Context, f orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	if b := boundRunner(ctx); b != "" {
		if f.ParentSessionID == "" {
			return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_session_required",
				"a runner lists only the children of its runs' sessions: parent_session_id is required")
		}
		if err := s.inScope(ctx, b, f.ParentSessionID); err != nil {
			return nil, err
		}
	}
	return s.inner.ListSessions(ctx, f)
}

func (s *runnerScoped) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	if err := s.sessionAccess(ctx, id); err != nil {
		return nil, err
	}
	return s.inner.WaitSession(ctx, id, wait)
}

func (s *runnerScoped) StopSession(ctx context.Context, id string, opts ...orchestrator.StopOpts) (*orchestrator.Session, error) {
	if err := s.sessionAccess(ctx, id); err != nil {
		return nil, err
	}
	return s.inner.StopSession(ctx, id, opts...)
}

func (s *runnerScoped) DeleteSession(ctx context.Context, id string) error {
	if err := notForRunners(ctx, "delete sessions"); err != nil {
		return err
	}
	return s.inner.DeleteSession(ctx, id)
}

func (s *runnerScoped) ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*orchestrator.Event, error) {
	if err := s.sessionAccess(ctx, sessionID); err != nil {
		return nil, err
	}
	return s.inner.ListEvents(ctx, sessionID, after, limit, wait)
}

func (s *runnerScoped) AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error) {
	if err := s.sessionAccess(ctx, sessionID); err != nil {
		return nil, err
	}
	return s.inner.AppendEvents(ctx, sessionID, events)
}

func (s *runnerScoped) RegisterRunner(ctx context.Context, r *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	if err := notForRunners(ctx, "register a runner (registration takes the runner token)"); err != nil {
		return nil, err
	}
	return s.inner.RegisterRunner(ctx, r)
}

func (s *runnerScoped) Heartbeat(ctx context.Context, runnerID string) error {
	if err := sameRunner(ctx, runnerID); err != nil {
		return err
	}
	return s.inner.Heartbeat(ctx, runnerID)
}

func (s *runnerScoped) PollWork(ctx context.Context, p orchestrator.PollParams) (*orchestrator.Work, error) {
	if err := sameRunner(ctx, p.RunnerID); err != nil {
		return nil, err
	}
	return s.inner.PollWork(ctx, p)
}

func (s *runnerScoped) ReportRun(ctx context.Context, r orchestrator.RunReport) error {
	if err := sameRunner(ctx, r.RunnerID); err != nil {
		return err
	}
	return s.inner.ReportRun(ctx, r)
}

// ReportRuns checks every report's runner; the others go on together, through the inner Coordinator's
// own ReportRuns when it has one.
func (s *runnerScoped) ReportRuns(ctx context.Context, reps []orchestrator.RunReport) []error {
	errs := make([]error, len(reps))
	pass := reps
	var idx []int // positions in reps of the reports passed on, when some were refused
	if boundRunner(ctx) != "" {
		pass = make([]orchestrator.RunReport, 0, len(reps))
		for i, rep := range reps {
			if errs[i] = sameRunner(ctx, rep.RunnerID); errs[i] == nil {
				pass = append(pass, rep)
				idx = append(idx, i)
			}
		}
	}
	var out []error
	if br, ok := s.inner.(orchestrator.BatchReporter); ok {
		out = br.ReportRuns(ctx, pass)
	} else {
		out = make([]error, len(pass))
		for i, rep := range pass {
			out[i] = s.inner.ReportRun(ctx, rep)
		}
	}
	if idx == nil {
		copy(errs, out)
		return errs
	}
	for k, i := range idx {
		if k < len(out) {
			errs[i] = out[k]
		}
	}
	return errs
}

func (s *runnerScoped) DeregisterRunner(ctx context.Context, runnerID string) error {
	if err := sameRunner(ctx, runnerID); err != nil {
		return err
	}
	return s.inner.DeregisterRunner(ctx, runnerID)
}

func (s *runnerScoped) ListRunners(ctx context.Context) ([]*orchestrator.RunnerInfo, error) {
	if err := notForRunners(ctx, "list runners"); err != nil {
		return nil, err
	}
	return s.inner.ListRunners(ctx)
}

// CheckWrite forwards the readiness check (GET /ready) to the coordinator, which may not have one: then the
// store is assumed to write.
func (s *runnerScoped) CheckWrite(ctx context.Context) error {
	if wc, ok := s.inner.(store.WriteChecker); ok {
		return wc.CheckWrite(ctx)
	}
	return nil
}
