package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/blobstore"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store"
)

// Artifact limits' defaults (Config.MaxArtifactBytes, Config.MaxArtifactsPerSession).
const (
	DefaultMaxArtifactBytes       = 2 << 30
	DefaultMaxArtifactsPerSession = 1000
)

// garbageBatch bounds the bucket objects one collection deletes before it reads the queue again.
const garbageBatch = 100

var _ orchestrator.ArtifactKeeper = (*Coordinator)(nil)

// errNoArtifacts answers artifact calls to a coordinator without a bucket.
func errNoArtifacts() error {
	return orchestrator.Errorf(orchestrator.ErrInvalid, "artifacts_not_configured",
		"this coordinator keeps no artifacts: it was started without an artifact bucket (-artifacts)")
}

// openArtifacts opens Config.ArtifactsURL when no bucket was given.
func openArtifacts(cfg *Config) error {
	if cfg.Artifacts != nil || cfg.ArtifactsURL == "" {
		return nil
	}
	b, err := blobstore.Open(context.Background(), cfg.ArtifactsURL)
	if err != nil {
		return fmt.Errorf("orchestrator: ArtifactsURL: %w", err)
	}
	cfg.Artifacts = b
	return nil
}

// PutArtifact streams body into the bucket under a fresh key, then records it, replacing the session's
// artifact of that name (whose bytes are collected afterwards). The bytes go first so that a record never
// names bytes that are not all there; a crash between the two leaves an object no record names, which
// costs space but loses nothing. A body past MaxArtifactBytes is ErrTooLarge (artifact_too_large) and a
// session at MaxArtifactsPerSession that uploads a new name is ErrTooLarge (too_many_artifacts).
func (c *Coordinator) PutArtifact(ctx context.Context, p orchestrator.PutArtifactParams, body io.Reader) (*orchestrator.Artifact, error) {
	bucket := c.cfg.Artifacts
	if bucket == nil {
		return nil, errNoArtifacts()
	}
	if err := orchestrator.ValidArtifactName(p.Name); err != nil {
		return nil, err
	}
	if _, err := c.GetSession(ctx, p.SessionID); err != nil {
		return nil, err
	}
	if _, err := c.store.GetArtifact(ctx, p.SessionID, p.Name); errors.Is(err, orchestrator.ErrNotFound) {
		n, err := c.store.CountArtifacts(ctx, p.SessionID)
		if err != nil {
			return nil, err
		}
		if n >= c.cfg.MaxArtifactsPerSession {
			return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "too_many_artifacts",
				"session %s has %d artifacts, the most a session may keep", p.SessionID, n)
		}
	} else if err != nil {
		return nil, err
	}
	key := p.SessionID + "/" + ids.New("art_")
	w, err := bucket.Put(ctx, key, body, p.ContentType, c.cfg.MaxArtifactBytes)
	if errors.Is(err, blobstore.ErrTooLarge) {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "artifact_too_large",
			"artifact %q is larger than %d bytes, the most one artifact may hold", p.Name, c.cfg.MaxArtifactBytes)
	}
	if err != nil {
		return nil, err
	}
	contentType := p.ContentType
	if contentType == "" {
		contentType = c.detectedType(ctx, key)
	}
	rec := &store.Artifact{
		Artifact: orchestrator.Artifact{
			SessionID: p.SessionID, Name: p.Name, Size: w.Size, SHA256: w.SHA256,
			ContentType: contentType, RunID: p.RunID, CreatedAt: c.now(),
		},
		Key: key,
	}
	if err := c.store.PutArtifact(ctx, rec); err != nil {
		// The session went away meanwhile (or the store failed): nothing names the object.
		if derr := bucket.Delete(context.WithoutCancel(ctx), key); derr != nil {
			c.log.Warn("deleting an unrecorded artifact", "key", key, "err", derr)
		}
		return nil, err
	}
	c.collectArtifactGarbage(ctx)
	a := rec.Artifact
	return &a, nil
}

// detectedType returns the content type the bucket detected for an upload that named none.
func (c *Coordinator) detectedType(ctx context.Context, key string) string {
	o, err := c.cfg.Artifacts.Open(ctx, key)
	if err != nil {
		return "application/octet-stream"
	}
	defer o.Close()
	if ct, ok := o.(interface{ ContentType() string }); ok && ct.ContentType() != "" {
		return ct.ContentType()
	}
	return "application/octet-stream"
}

// ListArtifacts lists a session's artifacts by name; an unknown session is ErrNotFound.
func (c *Coordinator) ListArtifacts(ctx context.Context, sessionID string) ([]*orchestrator.Artifact, error) {
	if c.cfg.Artifacts == nil {
		return nil, errNoArtifacts()
	}
	if _, err := c.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	recs, err := c.store.ListArtifacts(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]*orchestrator.Artifact, len(recs))
	for i, r := range recs {
		a := r.Artifact
		out[i] = &a
	}
	return out, nil
}

// OpenArtifact opens an artifact; the reader seeks (range reads from the bucket).
func (c *Coordinator) OpenArtifact(ctx context.Context, sessionID, name string) (*orchestrator.Artifact, io.ReadCloser, error) {
	if c.cfg.Artifacts == nil {
		return nil, nil, errNoArtifacts()
	}
	if err := orchestrator.ValidArtifactName(name); err != nil {
		return nil, nil, err
	}
	if _, err := c.GetSession(ctx, sessionID); err != nil {
		return nil, nil, err
	}
	rec, err := lookup(c.store.GetArtifact(ctx, sessionID, name)).as("artifact", name)
	if err != nil {
		return nil, nil, err
	}
	o, err := c.cfg.Artifacts.Open(ctx, rec.Key)
	if errors.Is(err, blobstore.ErrNotFound) {
		// Replaced or deleted between the two reads.
		return nil, nil, notFound("artifact", name)
	}
	if err != nil {
		return nil, nil, err
	}
	a := rec.Artifact
	return &a, o, nil
}

// collectArtifactGarbage deletes from the bucket the objects no record names any more (replaced
// artifacts, deleted sessions'), then drops their keys from the queue. Errors are logged: the next
// collection (every full sweep, and after each delete or replace) tries again, and deleting an object
// twice is harmless, so replicas collecting at once do no harm.
func (c *Coordinator) collectArtifactGarbage(ctx context.Context) {
	bucket := c.cfg.Artifacts
	if bucket == nil {
		return
	}
	for ctx.Err() == nil {
		keys, err := c.store.ListArtifactGarbage(ctx, garbageBatch)
		if err != nil || len(keys) == 0 {
			if err != nil {
				c.log.Warn("artifact garbage", "err", err)
			}
			return
		}
		done := keys[:0]
		for _, k := range keys {
			if err := bucket.Delete(ctx, k); err != nil {
				c.log.Warn("deleting an artifact object", "key", k, "err", err)
				continue
			}
			done = append(done, k)
		}
		if err := c.store.DeleteArtifactGarbage(ctx, done); err != nil {
			c.log.Warn("artifact garbage", "err", err)
			return
		}
		if len(done) < len(keys) || len(keys) < garbageBatch {
			return
		}
	}
}
