-- Leaner indexes for the write path: every index a status change touches costs the commit a page.
-- runs_status indexed every run in every status and changed with each transition; the queries that need a
-- status order only ever ask for pending runs (the no-match sweep), so a partial index of pending runs
-- replaces it (claims and reports no longer touch it). sessions_ended held an entry for every running
-- session too; retention asks only for ended ones.
DROP INDEX IF EXISTS runs_status
--bun:split
CREATE INDEX IF NOT EXISTS runs_pending ON runs (created_at, id) WHERE status = 'pending'
--bun:split
DROP INDEX IF EXISTS sessions_ended
--bun:split
CREATE INDEX IF NOT EXISTS sessions_ended_at ON sessions (ended_at, id) WHERE ended_at IS NOT NULL
