package gateway

import (
	"context"
	"errors"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// Human input through the gateway: a run's process asks questions for its own session and reads the
// requests of its session and of the sessions it started. It never answers one — not even its own
// question: an answer is a person's, and a process that could answer could approve its own children's
// gated runs.

var _ orchestrator.HumanInput = (*scoped)(nil)

func (s *scoped) humanInput() (orchestrator.HumanInput, error) {
	h, ok := s.inner.(orchestrator.HumanInput)
	if !ok {
		return nil, unavailable("human input")
	}
	return h, nil
}

// requestNotFound is the answer for a request the grant does not reach, whether it exists or not.
func requestNotFound(id string) error {
	return orchestrator.Errorf(orchestrator.ErrNotFound, "input_request_not_found", "input request %q not found", id)
}

// AskHuman asks a question for the run's own session.
func (s *scoped) AskHuman(ctx context.Context, p orchestrator.AskParams) (*orchestrator.InputRequest, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	if p.SessionID != gr.sessionID {
		return nil, outOfScope(p.SessionID)
	}
	return up(h.AskHuman(ctx, p))
}

// GetInputRequest reads a request of the run's session or of one it started.
func (s *scoped) GetInputRequest(ctx context.Context, id string, wait time.Duration) (*orchestrator.InputRequest, error) {
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	if _, err := grantFrom(ctx); err != nil {
		return nil, err
	}
	r, err := up(h.GetInputRequest(ctx, id, 0))
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, requestNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	if s.readable(ctx, r.SessionID) != nil {
		return nil, requestNotFound(id)
	}
	if wait <= 0 || r.Status != orchestrator.InputOpen {
		return r, nil
	}
	return up(h.GetInputRequest(ctx, id, wait))
}

// ListInputRequests lists the requests of the run's session or of one it started: the filter must name
// it.
func (s *scoped) ListInputRequests(ctx context.Context, f orchestrator.InputRequestFilter) ([]*orchestrator.InputRequest, error) {
	h, err := s.humanInput()
	if err != nil {
		return nil, err
	}
	if err := s.readable(ctx, f.SessionID); err != nil {
		return nil, err
	}
	return up(h.ListInputRequests(ctx, f))
}

// AnswerInputRequest is refused: people answer, processes ask.
func (s *scoped) AnswerInputRequest(context.Context, string, orchestrator.AnswerParams) (*orchestrator.InputRequest, error) {
	return nil, unavailable("answering an input request")
}
