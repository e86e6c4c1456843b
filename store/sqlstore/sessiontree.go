package sqlstore

import (
	"context"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// maxTreeDepth ends the walk down a tree however its rows are linked: trees are far shallower (a
// coordinator bounds their depth), and a corrupted row that made a cycle must not make the walk endless.
const maxTreeDepth = 10000

// sessionTreeSQL walks down from a session with a recursive common table expression, which SQLite and
// PostgreSQL both run, each step an index lookup on sessions (parent_session_id, created_at, id), and
// reads the columns a tree view shows. A session that names itself as its parent is not its own child.
const sessionTreeSQL = `WITH RECURSIVE tree(id, depth) AS (
	SELECT id, 0 FROM sessions WHERE id = ?
	UNION ALL
	SELECT s.id, t.depth + 1 FROM sessions s JOIN tree t ON s.parent_session_id = t.id
	WHERE s.id <> s.parent_session_id AND t.depth < ?
)
SELECT s.id, s.parent_session_id, s.agent_name, s.status, s.created_at, s.ended_at,
	s.usage_input_tokens, s.usage_output_tokens, s.usage_cache_read_input_tokens,
	s.usage_cache_creation_input_tokens, s.usage_cost_usd, t.depth
FROM tree t JOIN sessions s ON s.id = t.id
ORDER BY t.depth, s.created_at, s.id
LIMIT ?`

// treeRow is a row of sessionTreeSQL.
type treeRow struct {
	ID                            string     `bun:"id"`
	ParentSessionID               string     `bun:"parent_session_id"`
	AgentName                     string     `bun:"agent_name"`
	Status                        string     `bun:"status"`
	CreatedAt                     time.Time  `bun:"created_at"`
	EndedAt                       *time.Time `bun:"ended_at"`
	UsageInputTokens              int64      `bun:"usage_input_tokens"`
	UsageOutputTokens             int64      `bun:"usage_output_tokens"`
	UsageCacheReadInputTokens     int64      `bun:"usage_cache_read_input_tokens"`
	UsageCacheCreationInputTokens int64      `bun:"usage_cache_creation_input_tokens"`
	UsageCostUSD                  float64    `bun:"usage_cost_usd"`
	Depth                         int        `bun:"depth"`
}

// SessionTree implements [store.Store].
func (s *Store) SessionTree(ctx context.Context, rootID string, limit int) ([]*store.TreeSession, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []treeRow
	if err := s.r.NewRaw(sessionTreeSQL, rootID, maxTreeDepth, limit).Scan(ctx, &rows); err != nil {
		return nil, wrap(err, "tree of session", rootID)
	}
	if len(rows) == 0 {
		return nil, notFound("session", rootID)
	}
	out := make([]*store.TreeSession, len(rows))
	for i := range rows {
		r := &rows[i]
		out[i] = &store.TreeSession{ID: r.ID, ParentSessionID: r.ParentSessionID, AgentName: r.AgentName,
			Status: orchestrator.SessionStatus(r.Status), CreatedAt: utc(r.CreatedAt), EndedAt: utcPtr(r.EndedAt), Depth: r.Depth,
			Usage: orchestrator.Usage{InputTokens: r.UsageInputTokens, OutputTokens: r.UsageOutputTokens,
				CacheReadInputTokens: r.UsageCacheReadInputTokens, CacheCreationInputTokens: r.UsageCacheCreationInputTokens,
				CostUSD: r.UsageCostUSD}}
	}
	return out, nil
}
