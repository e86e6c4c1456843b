package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// artifactKeeper returns the served Coordinator's artifact calls, or an error saying it has none.
func (s *server) artifactKeeper() (orchestrator.ArtifactKeeper, error) {
	if k, ok := s.coord.(orchestrator.ArtifactKeeper); ok {
		return k, nil
	}
	return nil, noArtifacts()
}

func noArtifacts() error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "artifacts_not_configured", "this coordinator keeps no artifacts")
}

// artifactPath reads the session id and the artifact name of a request; the name is validated by the
// coordinator (400 invalid_artifact_name).
func artifactPath(r *http.Request) (id, name string, err error) {
	if id, err = pathID(r, "id"); err != nil {
		return "", "", err
	}
	name = r.PathValue("name")
	if err := orchestrator.ValidArtifactName(name); err != nil {
		return "", "", err
	}
	return id, name, nil
}

type artifactList struct {
	Artifacts []*orchestrator.Artifact `json:"artifacts"`
}

// putArtifact stores the request body, as it is, as the artifact: the body streams to the bucket.
func (s *server) putArtifact(w http.ResponseWriter, r *http.Request) error {
	k, err := s.artifactKeeper()
	if err != nil {
		return err
	}
	id, name, err := artifactPath(r)
	if err != nil {
		return err
	}
	ct := r.Header.Get("Content-Type")
	if ct == "application/x-www-form-urlencoded" {
		ct = "" // what curl --data sends when told nothing: detect instead
	}
	a, err := k.PutArtifact(r.Context(), orchestrator.PutArtifactParams{SessionID: id, Name: name, ContentType: ct}, r.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, a)
	return nil
}

func (s *server) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	k, err := s.artifactKeeper()
	if err != nil {
		return err
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	list, err := k.ListArtifacts(r.Context(), id)
	if err != nil {
		return err
	}
	if list == nil {
		list = []*orchestrator.Artifact{}
	}
	writeJSON(w, http.StatusOK, artifactList{Artifacts: list})
	return nil
}

// getArtifact serves the artifact's bytes with its content type, length, ETag (its SHA-256) and range
// requests (206), as net/http.ServeContent does them.
func (s *server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	k, err := s.artifactKeeper()
	if err != nil {
		return err
	}
	id, name, err := artifactPath(r)
	if err != nil {
		return err
	}
	a, rc, err := k.OpenArtifact(r.Context(), id, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("ETag", `"`+a.SHA256+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	// A page the coordinator serves must not run as the coordinator's origin: an uploaded HTML file is
	// sandboxed, and every artifact is offered as a download rather than rendered, except images.
	h.Set("Content-Security-Policy", "sandbox")
	if !strings.HasPrefix(a.ContentType, "image/") || strings.HasPrefix(a.ContentType, "image/svg") {
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", baseName(a.Name)))
	}
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", a.CreatedAt, rs)
		return nil
	}
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.Copy(w, rc)
	}
	return nil
}

func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// Artifacts of the runner-scoped coordinator: a runner reaches the artifacts of the sessions in its scope.

var _ orchestrator.ArtifactKeeper = (*runnerScoped)(nil)

func (s *runnerScoped) keeper() (orchestrator.ArtifactKeeper, error) {
	if k, ok := s.inner.(orchestrator.ArtifactKeeper); ok {
		return k, nil
	}
	return nil, noArtifacts()
}

func (s *runnerScoped) PutArtifact(ctx context.Context, p orchestrator.PutArtifactParams, body io.Reader) (*orchestrator.Artifact, error) {
	k, err := s.keeper()
	if err != nil {
		return nil, err
	}
	if err := s.sessionAccess(ctx, p.SessionID); err != nil {
		return nil, err
	}
	if boundRunner(ctx) != "" {
		// A runner uploads for the run it holds (at its end, or for its gateway during it).
		if sess, err := s.inner.GetSession(ctx, p.SessionID); err == nil {
			p.RunID = sess.CurrentRunID
		}
	}
	return k.PutArtifact(ctx, p, body)
}

func (s *runnerScoped) ListArtifacts(ctx context.Context, sessionID string) ([]*orchestrator.Artifact, error) {
	k, err := s.keeper()
	if err != nil {
		return nil, err
	}
	if err := s.sessionAccess(ctx, sessionID); err != nil {
		return nil, err
	}
	return k.ListArtifacts(ctx, sessionID)
}

func (s *runnerScoped) OpenArtifact(ctx context.Context, sessionID, name string) (*orchestrator.Artifact, io.ReadCloser, error) {
	k, err := s.keeper()
	if err != nil {
		return nil, nil, err
	}
	if err := s.sessionAccess(ctx, sessionID); err != nil {
		return nil, nil, err
	}
	return k.OpenArtifact(ctx, sessionID, name)
}
