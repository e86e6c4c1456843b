package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// EventCallCancelled is the type of the event a sync start_agent_session or resume_agent_session writes to
// the session it started when its client cancels the call, just before it stops the run:
// {"message": …, "tool": …, "run_id": …, "reason": …}. Reason is the client's, when it gave one.
const EventCallCancelled = "mcp_call_cancelled"

// progress sends the progress notifications of one waiting call: to clients that sent a progress token,
// nothing otherwise. Every message begins with "session <session_id>", so that a client that gives up
// can still find the session (and stop it).
type progress struct {
	req       *mcp.CallToolRequest
	token     any
	sessionID string
	n         int
	start     time.Time
}

func (s *server) progress(req *mcp.CallToolRequest, sessionID string) *progress {
	p := &progress{req: req, sessionID: sessionID, start: time.Now()}
	if req != nil && req.Params != nil && req.Session != nil {
		p.token = req.Params.GetProgressToken()
	}
	return p
}

func (p *progress) send(ctx context.Context, msg string) {
	if p.token == nil {
		return
	}
	p.n++
	// A failed notification (the client went away) is not the call's failure.
	_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token,
		Progress:      float64(p.n),
		Message:       fmt.Sprintf("session %s %s", p.sessionID, msg),
	})
}

// wait waits up to d for the session to end (WaitSession), with progress notifications (see waitWith).
func (s *server) wait(ctx context.Context, prog *progress, sessionID string, d time.Duration) (*orchestrator.Session, error) {
	return waitWith(s, ctx, prog, func() (*orchestrator.Session, error) { return s.coord.WaitSession(ctx, sessionID, d) })
}

// waitRun waits up to d for a run the call started to end (WaitRun), with progress notifications (see
// waitWith). It waits for the run, not its session: a callback can resume the session the moment the run
// ends, and the call's answer is its own run's outcome.
func (s *server) waitRun(ctx context.Context, prog *progress, runID string, d time.Duration) (*orchestrator.StartRunResult, error) {
	return waitWith(s, ctx, prog, func() (*orchestrator.StartRunResult, error) { return s.coord.WaitRun(ctx, runID, d) })
}

// waitWith runs wait, sending a progress notification every ProgressInterval meanwhile, which keeps
// clients that reset their timeout on progress waiting.
func waitWith[T any](s *server, ctx context.Context, prog *progress, wait func() (T, error)) (T, error) {
	if prog.token == nil {
		return wait()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := wait()
		done <- result{v, err}
	}()
	tick := time.NewTicker(s.cfg.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-tick.C:
			prog.send(ctx, fmt.Sprintf("waiting for it to end (%s)", time.Since(prog.start).Round(time.Second)))
		}
	}
}

// interrupted handles a sync call whose wait was cut short by its client. A cancellation stops the run the
// call started — after writing an EventCallCancelled to its session, so that the session's history says
// why — unless the session has moved on (ended, or another run). A client that merely went away leaves the
// session running. Either way the answer (which the client will not read) names the session.
func (s *server) interrupted(ctx context.Context, req *mcp.CallToolRequest, c caller, res *orchestrator.StartRunResult) error {
	cancelled, reason := cancellation(ctx)
	tool := req.Params.Name
	if !cancelled {
		s.log.Info("mcp client went away during a sync call; the session keeps running",
			"tool", tool, "session_id", res.SessionID, "run_id", res.RunID, "cause", context.Cause(ctx))
		return orchestrator.Errorf(orchestrator.ErrInvalid, "client_gone",
			"the client went away; session %s keeps running", res.SessionID).With("session_id", res.SessionID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	s.stopCancelled(ctx, c, tool, res, reason)
	return orchestrator.Errorf(orchestrator.ErrInvalid, "cancelled",
		"the call was cancelled; its run %s of session %s is stopped", res.RunID, res.SessionID).
		With("session_id", res.SessionID).With("run_id", res.RunID)
}

func (s *server) stopCancelled(ctx context.Context, c caller, tool string, res *orchestrator.StartRunResult, reason string) {
	log := s.log.With("tool", tool, "session_id", res.SessionID, "run_id", res.RunID)
	sess, err := s.coord.GetSession(ctx, res.SessionID)
	if err != nil {
		log.Error("mcp call cancelled: cannot read the session to stop it", "err", err)
		return
	}
	if sess.Status.Ended() || sess.CurrentRunID != res.RunID {
		return // nothing of this call's left to stop
	}
	data, _ := json.Marshal(map[string]string{
		"message": fmt.Sprintf("the MCP client cancelled its sync %s call: stopping the run", tool),
		"tool":    tool, "run_id": res.RunID, "reason": cleanReason(reason),
	})
	ev := []orchestrator.Event{{Type: EventCallCancelled, Data: data}}
	if _, err := s.coord.AppendEvents(ctx, res.SessionID, ev); err != nil {
		// A runner's gateway lets a run write events to its own session only: the caller's own session
		// then records which child it cancelled.
		log.Warn("mcp call cancelled: cannot record it in the session", "err", err)
		if c.sessionID != "" && c.sessionID != res.SessionID {
			data, _ = json.Marshal(map[string]string{
				"message": fmt.Sprintf("cancelled the sync %s call of session %s: stopping its run", tool, res.SessionID),
				"tool":    tool, "run_id": res.RunID, "reason": cleanReason(reason),
				"child_session_id": res.SessionID,
			})
			if _, err := s.coord.AppendEvents(ctx, c.sessionID, []orchestrator.Event{{Type: EventCallCancelled, Data: data}}); err != nil {
				log.Warn("mcp call cancelled: cannot record it in the calling session", "err", err)
			}
		}
	}
	if _, err := s.coord.StopSession(ctx, res.SessionID); err != nil {
		log.Error("mcp call cancelled: cannot stop the session", "err", err)
		return
	}
	log.Info("mcp call cancelled: run stopped", "reason", reason)
}

// cleanReason keeps a client's reason fit for an event: valid UTF-8 text without NULs, at most 500 bytes.
func cleanReason(r string) string {
	r = strings.ReplaceAll(strings.ToValidUTF8(r, "\uFFFD"), "\x00", "")
	if len(r) > 500 {
		r = strings.ToValidUTF8(r[:500], "")
	}
	return r
}
