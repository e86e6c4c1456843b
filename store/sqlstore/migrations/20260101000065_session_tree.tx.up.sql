-- A session's place in its tree, so that a start's checks read the parent and the root only: the root
-- (empty for a session stored before trees were governed, which is then its own root), the depth (0 for
-- a root), whether it outlives its parent (detached), the tree's limits (copied from the root to every
-- session; 0 for none), and on a root the number of sessions ever started in its tree (tree_sessions),
-- raised by a guarded update in the transaction that inserts each child so that concurrent starts cannot
-- overshoot max_sessions.
ALTER TABLE sessions ADD COLUMN root_session_id TEXT NOT NULL DEFAULT ''
--bun:split
ALTER TABLE sessions ADD COLUMN depth INTEGER NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN detached BOOLEAN NOT NULL DEFAULT FALSE
--bun:split
ALTER TABLE sessions ADD COLUMN max_depth INTEGER NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN max_sessions INTEGER NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN tree_sessions INTEGER NOT NULL DEFAULT 0
