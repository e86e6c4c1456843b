-- Schedules: recurring runs. Each coordinator replica's firing loop reads the due ones by next_fire_at
-- and fires a tick with an update guarded by revision, so exactly one replica fires it.
CREATE TABLE IF NOT EXISTS schedules (
	id              TEXT PRIMARY KEY,
	agent_name      TEXT NOT NULL,
	parameters      {{.JSON}},
	cron            TEXT NOT NULL,
	timezone        TEXT NOT NULL DEFAULT '',
	overlap         TEXT NOT NULL,
	paused          BOOLEAN NOT NULL DEFAULT FALSE,
	next_fire_at    {{.Time}} NOT NULL,
	queued          BOOLEAN NOT NULL DEFAULT FALSE,
	last_fired_at   {{.Time}},
	last_session_id TEXT NOT NULL DEFAULT '',
	last_error      TEXT NOT NULL DEFAULT '',
	created_at      {{.Time}} NOT NULL,
	updated_at      {{.Time}} NOT NULL,
	revision        BIGINT NOT NULL DEFAULT 0
)
--bun:split
-- Active schedules by next tick: the firing loop's probe and its timer.
CREATE INDEX IF NOT EXISTS schedules_next ON schedules (next_fire_at, id) WHERE NOT paused
--bun:split
CREATE INDEX IF NOT EXISTS schedules_created ON schedules (created_at, id)
