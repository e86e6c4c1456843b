package gateway

import (
	"context"
	"io"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// Artifacts through the gateway: a run uploads to its own session (recorded as the run's), and reads the
// artifacts of its session and of the sessions it started — the scope it reads sessions in.

var _ orchestrator.ArtifactKeeper = (*scoped)(nil)

func (s *scoped) keeper() (orchestrator.ArtifactKeeper, error) {
	if k, ok := s.inner.(orchestrator.ArtifactKeeper); ok {
		return k, nil
	}
	return nil, unavailable("artifacts")
}

// PutArtifact stores an artifact of the run's own session.
func (s *scoped) PutArtifact(ctx context.Context, p orchestrator.PutArtifactParams, body io.Reader) (*orchestrator.Artifact, error) {
	gr, err := grantFrom(ctx)
	if err != nil {
		return nil, err
	}
	if p.SessionID != gr.sessionID {
		return nil, orchestrator.Errorf(orchestrator.ErrForbidden, "session_out_of_scope",
			"a run uploads artifacts to its own session only (%s), not %q", gr.sessionID, p.SessionID).With("session_id", p.SessionID)
	}
	k, err := s.keeper()
	if err != nil {
		return nil, err
	}
	p.RunID = gr.runID
	return up(k.PutArtifact(ctx, p, body))
}

func (s *scoped) ListArtifacts(ctx context.Context, sessionID string) ([]*orchestrator.Artifact, error) {
	if err := s.readable(ctx, sessionID); err != nil {
		return nil, err
	}
	k, err := s.keeper()
	if err != nil {
		return nil, err
	}
	return up(k.ListArtifacts(ctx, sessionID))
}

func (s *scoped) OpenArtifact(ctx context.Context, sessionID, name string) (*orchestrator.Artifact, io.ReadCloser, error) {
	if err := s.readable(ctx, sessionID); err != nil {
		return nil, nil, err
	}
	k, err := s.keeper()
	if err != nil {
		return nil, nil, err
	}
	a, rc, err := k.OpenArtifact(ctx, sessionID, name)
	if _, err := up(a, err); err != nil {
		return nil, nil, err
	}
	return a, rc, nil
}
