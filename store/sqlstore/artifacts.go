package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

type artifactRow struct {
	bun.BaseModel `bun:"table:artifacts,alias:ar"`

	SessionID   string    `bun:"session_id,pk"`
	Name        string    `bun:"name,pk"`
	BlobKey     string    `bun:"blob_key"`
	Size        int64     `bun:"size"`
	SHA256      string    `bun:"sha256"`
	ContentType string    `bun:"content_type"`
	RunID       string    `bun:"run_id"`
	CreatedAt   time.Time `bun:"created_at"`
}

func (r *artifactRow) domain() *store.Artifact {
	return &store.Artifact{
		Artifact: orchestrator.Artifact{
			SessionID:   r.SessionID,
			Name:        r.Name,
			Size:        r.Size,
			SHA256:      r.SHA256,
			ContentType: r.ContentType,
			RunID:       r.RunID,
			CreatedAt:   r.CreatedAt.UTC(),
		},
		Key: r.BlobKey,
	}
}

type artifactGarbageRow struct {
	bun.BaseModel `bun:"table:artifact_garbage,alias:ag"`

	BlobKey  string    `bun:"blob_key,pk"`
	QueuedAt time.Time `bun:"queued_at"`
}

// PutArtifact records the artifact and queues the key of the record it replaces, in one transaction.
func (s *Store) PutArtifact(ctx context.Context, a *store.Artifact) error {
	return s.tx(ctx, func(ctx context.Context, tx *Store) error {
		var sid string
		q := tx.w.NewSelect().Model((*sessionRow)(nil)).Column("id").Where("id = ?", a.SessionID)
		if tx.pg {
			// Share-lock the session so that a concurrent delete cannot leave this record behind it.
			q = q.For("SHARE")
		}
		if err := q.Scan(ctx, &sid); err != nil {
			return wrap(err, "session", a.SessionID)
		}
		var old []string
		if err := tx.w.NewSelect().Model((*artifactRow)(nil)).Column("blob_key").
			Where("session_id = ? AND name = ?", a.SessionID, a.Name).Scan(ctx, &old); err != nil {
			return wrap(err, "artifact", a.Name)
		}
		for _, k := range old {
			if k == a.Key {
				continue
			}
			if _, err := tx.w.NewInsert().Model(&artifactGarbageRow{BlobKey: k, QueuedAt: utc(time.Now())}).
				On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
				return wrap(err, "artifact", a.Name)
			}
		}
		row := &artifactRow{
			SessionID: a.SessionID, Name: a.Name, BlobKey: a.Key, Size: a.Size, SHA256: a.SHA256,
			ContentType: a.ContentType, RunID: a.RunID, CreatedAt: utc(a.CreatedAt),
		}
		_, err := tx.w.NewInsert().Model(row).On("CONFLICT (session_id, name) DO UPDATE").
			Set("blob_key = EXCLUDED.blob_key, size = EXCLUDED.size, sha256 = EXCLUDED.sha256").
			Set("content_type = EXCLUDED.content_type, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at").
			Exec(ctx)
		return wrap(err, "artifact", a.Name)
	})
}

// GetArtifact returns one artifact's record.
func (s *Store) GetArtifact(ctx context.Context, sessionID, name string) (*store.Artifact, error) {
	var row artifactRow
	if err := s.r.NewSelect().Model(&row).Where("session_id = ? AND name = ?", sessionID, name).Scan(ctx); err != nil {
		return nil, wrap(err, "artifact", name)
	}
	return row.domain(), nil
}

// ListArtifacts returns a session's artifacts ordered by name.
func (s *Store) ListArtifacts(ctx context.Context, sessionID string) ([]*store.Artifact, error) {
	var rows []artifactRow
	if err := s.r.NewSelect().Model(&rows).Where("session_id = ?", sessionID).Order("name").Scan(ctx); err != nil {
		return nil, wrap(err, "artifacts", sessionID)
	}
	out := make([]*store.Artifact, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// CountArtifacts returns how many artifacts a session has.
func (s *Store) CountArtifacts(ctx context.Context, sessionID string) (int, error) {
	n, err := s.r.NewSelect().Model((*artifactRow)(nil)).Where("session_id = ?", sessionID).Count(ctx)
	return int(n), wrap(err, "artifacts", sessionID)
}

// ListArtifactGarbage returns up to limit queued keys, oldest first.
func (s *Store) ListArtifactGarbage(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	var keys []string
	err := s.r.NewSelect().Model((*artifactGarbageRow)(nil)).Column("blob_key").
		OrderExpr("queued_at, blob_key").Limit(int64(limit)).Scan(ctx, &keys)
	return keys, wrap(err, "artifact garbage", "")
}

// DeleteArtifactGarbage removes keys from the queue.
func (s *Store) DeleteArtifactGarbage(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.w.NewDelete().Model((*artifactGarbageRow)(nil)).Where("blob_key IN (?)", bun.List(keys)).Exec(ctx)
	return wrap(err, "artifact garbage", "")
}

// dropArtifacts queues the keys of the artifacts that where (with args) selects and deletes their
// records; DeleteSession and retention call it inside the transactions that delete the sessions. (The
// SELECT's WHERE also keeps SQLite from reading ON CONFLICT as a join's clause.)
func (tx *Store) dropArtifacts(ctx context.Context, where string, args ...any) error {
	insert := "INSERT INTO artifact_garbage (blob_key, queued_at) SELECT blob_key, ? FROM artifacts WHERE " + where +
		" ON CONFLICT DO NOTHING"
	if _, err := tx.w.NewRaw(insert, append([]any{utc(time.Now())}, args...)...).Exec(ctx); err != nil {
		return wrap(err, "artifacts", "")
	}
	_, err := tx.w.NewDelete().Model((*artifactRow)(nil)).Where(where, args...).Exec(ctx)
	return wrap(err, "artifacts", "")
}
