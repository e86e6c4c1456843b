package sqlstore

import (
	"context"
	"database/sql"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// sessionTreeColumns are a session's place in its tree (migration 65), embedded in sessionRow.
type sessionTreeColumns struct {
	RootSessionID string `bun:"root_session_id"`
	Depth         int64  `bun:"depth"`
	Detached      bool   `bun:"detached"`
	MaxDepth      int64  `bun:"max_depth"`
	MaxSessions   int64  `bun:"max_sessions"`
	// TreeSessions counts, on a root, the sessions ever admitted to its tree (AdmitToTree).
	TreeSessions int64 `bun:"tree_sessions"`
}

func treeColumnsOf(s *orchestrator.Session) sessionTreeColumns {
	c := sessionTreeColumns{RootSessionID: s.RootSessionID, Depth: int64(s.Depth), Detached: s.Detached}
	if s.Limits != nil {
		c.MaxDepth, c.MaxSessions = int64(s.Limits.MaxDepth), int64(s.Limits.MaxSessions)
	}
	if s.RootSessionID == "" || s.RootSessionID == s.ID {
		c.TreeSessions = 1 // a root counts itself
	}
	return c
}

func (c sessionTreeColumns) fill(s *orchestrator.Session) {
	s.RootSessionID, s.Depth, s.Detached = c.RootSessionID, int(c.Depth), c.Detached
	if c.MaxDepth > 0 || c.MaxSessions > 0 {
		s.Limits = &orchestrator.TreeLimits{MaxDepth: int(c.MaxDepth), MaxSessions: int(c.MaxSessions)}
	}
}

// liveDescendantsSQL walks down from a session with a recursive common table expression, which SQLite
// and PostgreSQL both run. UNION (not UNION ALL) ends the walk on a cycle, should a corrupted row ever
// make one. The second form stops at detached children.
var liveDescendantsSQL = map[bool]string{
	true:  liveDescendantsQuery(""),
	false: liveDescendantsQuery(" AND NOT s.detached"),
}

func liveDescendantsQuery(filter string) string {
	return `WITH RECURSIVE tree(id) AS (
	SELECT s.id FROM sessions s WHERE s.parent_session_id = ? AND s.id <> s.parent_session_id` + filter + `
	UNION
	SELECT s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id WHERE s.id <> s.parent_session_id` + filter + `
)
SELECT s.id, s.parent_session_id, s.agent_type, s.status, s.current_run_id,
	COALESCE(r.status, '') AS run_status, COALESCE(r.runner_id, '') AS runner_id, r.stop_requested_at IS NOT NULL AS stop_requested
FROM tree t JOIN sessions s ON s.id = t.id LEFT JOIN runs r ON r.id = s.current_run_id
WHERE s.status IN ('pending', 'running')`
}

// LiveDescendants implements [store.Store].
func (s *Store) LiveDescendants(ctx context.Context, p store.DescendantsParams) ([]*store.TreeMember, error) {
	rows, err := s.w.QueryContext(ctx, liveDescendantsSQL[p.IncludeDetached], p.SessionID)
	if err != nil {
		return nil, wrap(err, "descendants of session", p.SessionID)
	}
	defer rows.Close()
	var out []*store.TreeMember
	for rows.Next() {
		var (
			m                        store.TreeMember
			agentType, status, runSt string
			stop                     bool
		)
		if err := rows.Scan(&m.SessionID, &m.ParentSessionID, &agentType, &status, &m.CurrentRunID, &runSt, &m.RunnerID, &stop); err != nil {
			return nil, wrap(err, "descendants of session", p.SessionID)
		}
		m.AgentType, m.Status, m.RunStatus, m.StopRequested = orchestrator.AgentType(agentType), orchestrator.SessionStatus(status), orchestrator.RunStatus(runSt), stop
		out = append(out, &m)
	}
	return out, wrap(rows.Err(), "descendants of session", p.SessionID)
}

// AdmitToTree implements [store.Store]: one guarded UPDATE, which takes the root's row lock on
// PostgreSQL, so concurrent admissions to one tree are counted one after the other.
func (s *Store) AdmitToTree(ctx context.Context, root string, maxSessions int) (bool, error) {
	res, err := s.execPrepared(ctx, "UPDATE sessions SET tree_sessions = tree_sessions + 1 WHERE id = ? AND tree_sessions < ?", root, int64(maxSessions))
	if err != nil {
		return false, wrap(err, "session", root)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	var one int
	err = s.w.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", root).Scan(&one)
	if err == sql.ErrNoRows {
		return false, wrap(err, "session", root)
	}
	return false, wrap(err, "session", root)
}
