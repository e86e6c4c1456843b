-- Input requests: what a session waits on a person to answer (an approval gate, an agent's question). An
-- answer is a guarded update from status 'open', so it is written once whatever answers race.
CREATE TABLE IF NOT EXISTS input_requests (
	id          TEXT PRIMARY KEY,
	session_id  TEXT NOT NULL,
	run_id      TEXT NOT NULL DEFAULT '',
	agent_name  TEXT NOT NULL DEFAULT '',
	kind        TEXT NOT NULL,
	prompt      TEXT NOT NULL,
	schema      {{.JSON}} NOT NULL,
	status      TEXT NOT NULL,
	answer      {{.JSON}},
	answered_by TEXT NOT NULL DEFAULT '',
	created_at  {{.Time}} NOT NULL,
	expires_at  {{.Time}},
	closed_at   {{.Time}}
)
--bun:split
-- Open requests, oldest first: the inbox, and the expiry sweep's look at their deadlines.
CREATE INDEX IF NOT EXISTS input_requests_open ON input_requests (created_at, id) WHERE status = 'open'
--bun:split
CREATE INDEX IF NOT EXISTS input_requests_session ON input_requests (session_id, created_at, id)
--bun:split
-- A held run is the pending run of a session waiting for its approval: it is parked too (claims skip
-- it), and nothing but the approval unparks it.
ALTER TABLE runs ADD COLUMN held BOOLEAN NOT NULL DEFAULT FALSE
