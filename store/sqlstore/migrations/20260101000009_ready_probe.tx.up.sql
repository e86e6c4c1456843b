-- The one row the write check (Store.CheckWrite, behind GET /ready) rewrites: a real commit through the
-- store's write path, so the check fails when writes do.
CREATE TABLE IF NOT EXISTS ready_probe (
	id         BIGINT PRIMARY KEY,
	checked_at {{.Time}} NOT NULL
)
