package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// grant is what one run's token may reach: its own session and the sessions it started.
type grant struct {
	sessionID string
	runID     string

	mu       sync.Mutex
	children map[string]bool
}

func (g *grant) addChild(id string) {
	g.mu.Lock()
	g.children[id] = true
	g.mu.Unlock()
}

func (g *grant) hasChild(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.children[id]
}

type grantKey struct{}

func grantFrom(ctx context.Context) (*grant, error) {
	gr, ok := ctx.Value(grantKey{}).(*grant)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.ErrUnauthorized, "unauthorized", "no gateway token")
	}
	return gr, nil
}

func outOfScope(id string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "session_out_of_scope",
		"session %q is neither this run's session nor one it started", id).With("session_id", id)
}

// runOutOfScope is the answer for a run the grant does not reach, whether it exists or not: an unknown
// id and another session's run must read alike, so that an executor cannot tell which ids exist.
func runOutOfScope(id string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "run_out_of_scope",
		"run %q is neither a run of this run's session nor of one it started", id).With("run_id", id)
}

func unavailable(what string) error {
	return orchestrator.Errorf(orchestrator.ErrForbidden, "not_available_through_gateway", "%s is not available through the gateway", what)
}

// up passes on what the runner's Coordinator answered, except that its credentials being refused is not
// the executor's fault: a 401 from the coordinator would read as "your gateway token is wrong", so it
// becomes an upstream failure (502).
func up[T any](v T, err error) (T, error) {
	if err != nil && (errors.Is(err, orchestrator.ErrUnauthorized) || errors.Is(err, orchestrator.ErrForbidden) && !isScopeError(err)) {
		return v, &orchestrator.Error{Kind: httpapi.ErrServer, Code: "upstream_refused",
			Message: "the coordinator refused the runner's credentials: " + err.Error()}
	}
	return v, err
}

func isScopeError(err error) bool {
	code := orchestrator.ErrorCode(err)
	return code == "session_out_of_scope" || code == "run_out_of_scope" || code == "parent_out_of_scope" ||
		code == "not_available_through_gateway" || code == "schedule_out_of_scope"
}

// scoped is the Coordinator the gateway's handler serves: it forwards to the runner's Coordinator what the
// request's grant allows and refuses the rest.
type scoped struct {
	inner orchestrator.Coordinator
}

var (
	_ orchestrator.Coordinator  = (*scoped)(nil)
	_ orchestrator.BatchStarter = (*scoped)(nil)
)

// child reports whether id is a session the grant's run started: one started through this gateway, or
// one whose parent is the run's session (started through the coordinator's MCP server with the session's
// X-Agent-Session-Id, say). A session that does not exist is out of scope, not "not found", so that the
// answer says nothing about other runs' sessions.
func (s *scoped) child(ctx context.Context, gr *grant, id string) error {
	if id == "" {
		return outOfScope(id)
	}
	if gr.hasChild(id) {
		return nil
	}
	sess, err := up(s.inner.GetSession(ctx, id))
	if errors.Is(err, orchestrator.ErrNotFound) {
		return outOfScope(id)
	}
	if err != nil {
		return err
	}
	if sess.ParentSessionID != gr.sessionID {
		return outOfScope(id)
	}
	gr.addChild(id)
	return nil
}

// readable checks that id is the run's session or one of its children.
func (s *scoped) readable(ctx context.Context, id string) error {
	gr, err := grantFrom(ctx)
	if err != nil {
		return err
	}
	if id == gr.sessionID {
		return nil
	}
	return s.child(ctx, gr, id)
}

func (s *scoped) ListAgents(ctx context.Context, p orchestrator.ListAgentsParams) ([]*orchestrator.AgentInfo, error) {
	if _, err := grantFrom(ctx); err != nil {
		return nil, err
	}
	return up(s.inner.ListAgents(ctx, p))
}

func (s *scoped) GetAgent(ctx context.Context, name string) (*orchestrator.AgentInfo, error) {
	if _, err := grantFrom(ctx); err != nil {
		return nil, err
	}
	return up(s.inner.GetAgent(ctx, name))
}

func (s *scoped) CreateAgent(context.Context, *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	return nil, unavailable("creating agents")
}

func (s *scoped) UpdateAgent(context.Context, string, *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	return nil, unavailable("changing agents")
}

func (s *scoped) DeleteAgent(context.Context, string) error { return unavailable("deleting agents") }

// StartRun starts a child of the run's session, or resumes one of its children.
func (s *scoped) StartRun(ctx context.Context, p orchestrator.StartRunParams) (*orchestrator.StartRunResult, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	if p.CallbackURL != "" {
		return nil, unavailable("callback_url")
	}
	resume := p.Type == orchestrator.RunTypeResume || p.Mode == "resume"
	if resume {
		// A resume keeps the session's parent; the session must be one of ours.
		if err := s.child(ctx, gr, p.SessionID); err != nil {
			return nil, err
		}
		return up(s.inner.StartRun(ctx, p))
	}
	if p.ParentSessionID != "" && p.ParentSessionID != gr.sessionID {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_out_of_scope",
			"sessions started through the gateway are children of session %s, not %s", gr.sessionID, p.ParentSessionID)
	}
	p.ParentSessionID = gr.sessionID
	res, err := up(s.inner.StartRun(ctx, p))
	if err != nil {
		return nil, err
	}
	gr.addChild(res.SessionID)
	return res, nil
}

// StartRuns starts a fan-out of children of the grant's session, as StartRun starts one, when the
// runner's Coordinator takes batches.
func (s *scoped) StartRuns(ctx context.Context, ps []orchestrator.StartRunParams) ([]*orchestrator.StartRunResult, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	bs, ok := s.inner.(orchestrator.BatchStarter)
	if !ok {
		return nil, unavailable("starting several runs at once")
	}
	ps = slices.Clone(ps)
	for i := range ps {
		p := &ps[i]
		if p.CallbackURL != "" {
			return nil, unavailable("callback_url")
		}
		if p.ParentSessionID != "" && p.ParentSessionID != gr.sessionID {
			return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_out_of_scope",
				"sessions started through the gateway are children of session %s, not %s", gr.sessionID, p.ParentSessionID)
		}
		p.ParentSessionID = gr.sessionID
	}
	res, err := up(bs.StartRuns(ctx, ps))
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		gr.addChild(r.SessionID)
	}
	return res, nil
}

func (s *scoped) GetRun(ctx context.Context, id string) (*orchestrator.Run, error) {
	if _, err := grantFrom(ctx); err != nil {
		return nil, err
	}
	run, err := up(s.inner.GetRun(ctx, id))
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, runOutOfScope(id)
	}
	if err != nil {
		return nil, err
	}
	if err := s.readable(ctx, run.SessionID); err != nil {
		if isScopeError(err) {
			return nil, runOutOfScope(id) // not the session's id: it would tell whose run this is
		}
		return nil, err
	}
	return run, nil
}

// WaitRun reaches the runs GetRun reaches, with the same answer for the others; the scope is checked
// before the wait.
func (s *scoped) WaitRun(ctx context.Context, id string, wait time.Duration) (*orchestrator.StartRunResult, error) {
	if _, err := s.GetRun(ctx, id); err != nil {
		return nil, err
	}
	return up(s.inner.WaitRun(ctx, id, wait))
}

func (s *scoped) ListRuns(context.Context, orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	return nil, unavailable("listing runs")
}

func (s *scoped) StopRun(context.Context, string) (*orchestrator.Run, error) {
	return nil, unavailable("stopping runs by id (stop a child session instead)")
}

func (s *scoped) GetSession(ctx context.Context, id string) (*orchestrator.Session, error) {
	if err := s.readable(ctx, id); err != nil {
		return nil, err
	}
	return up(s.inner.GetSession(ctx, id))
}

// ListSessions lists the run's children: parent_session_id is the run's session whether given or not.
func (s *scoped) ListSessions(ctx context.Context, f orchestrator.SessionFilter) (*orchestrator.SessionPage, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	if f.ParentSessionID != "" && f.ParentSessionID != gr.sessionID {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "parent_out_of_scope",
			"through the gateway only the children of session %s can be listed", gr.sessionID)
	}
	f.ParentSessionID = gr.sessionID
	return up(s.inner.ListSessions(ctx, f))
}

func (s *scoped) WaitSession(ctx context.Context, id string, wait time.Duration) (*orchestrator.Session, error) {
	if err := s.readable(ctx, id); err != nil {
		return nil, err
	}
	return up(s.inner.WaitSession(ctx, id, wait))
}

// StopSession stops a child; a run ends its own session by exiting.
func (s *scoped) StopSession(ctx context.Context, id string, opts ...orchestrator.StopOpts) (*orchestrator.Session, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.child(ctx, gr, id); err != nil {
		return nil, err
	}
	return up(s.inner.StopSession(ctx, id, opts...))
}

// SessionTree reads the tree of the run's session, or of one of its children.
func (s *scoped) SessionTree(ctx context.Context, id string, p orchestrator.TreeParams) (*orchestrator.SessionTree, error) {
	if err := s.readable(ctx, id); err != nil {
		return nil, err
	}
	return up(s.inner.SessionTree(ctx, id, p))
}

func (s *scoped) DeleteSession(context.Context, string) error {
	return unavailable("deleting sessions")
}

func (s *scoped) ListEvents(ctx context.Context, sessionID string, after int64, limit int, wait time.Duration) ([]*orchestrator.Event, error) {
	if err := s.readable(ctx, sessionID); err != nil {
		return nil, err
	}
	return up(s.inner.ListEvents(ctx, sessionID, after, limit, wait))
}

// AppendEvents appends to the run's own session only.
func (s *scoped) AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	if sessionID != gr.sessionID {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "session_out_of_scope",
			"events can be appended only to this run's session %s, not %s", gr.sessionID, sessionID).With("session_id", sessionID)
	}
	return up(s.inner.AppendEvents(ctx, sessionID, events))
}

func (s *scoped) RegisterRunner(context.Context, *orchestrator.RunnerRegistration) (*orchestrator.Registration, error) {
	return nil, unavailable("runner registration")
}

func (s *scoped) Heartbeat(context.Context, string) error { return unavailable("runner heartbeats") }

func (s *scoped) PollWork(context.Context, orchestrator.PollParams) (*orchestrator.Work, error) {
	return nil, unavailable("polling for work")
}

func (s *scoped) ReportRun(context.Context, orchestrator.RunReport) error {
	return unavailable("run reports")
}

func (s *scoped) DeregisterRunner(context.Context, string) error {
	return unavailable("runner deregistration")
}

func (s *scoped) ListRunners(context.Context) ([]*orchestrator.RunnerInfo, error) {
	return nil, unavailable("listing runners")
}
