-- The initial schema. One file serves both dialects through Go template fields rendered per dialect:
-- JSON is TEXT on SQLite and JSON on PostgreSQL (kept byte for byte, unlike JSONB, and accepting \u0000);
-- Time is TIMESTAMP on SQLite (bun writes UTC text with microseconds, which sorts correctly) and
-- TIMESTAMPTZ on PostgreSQL; WithoutRowID clusters SQLite's tables that have a composite key.
-- Every statement is idempotent, so a crash between this migration's commit and its bookkeeping row
-- cannot wedge the next start.
CREATE TABLE IF NOT EXISTS runners (
	id                    TEXT PRIMARY KEY,
	hostname              TEXT NOT NULL DEFAULT '',
	project_dir           TEXT NOT NULL DEFAULT '',
	executor_type         TEXT NOT NULL DEFAULT '',
	executor_profile      TEXT NOT NULL DEFAULT '',
	executor              {{.JSON}},
	tags                  {{.JSON}},
	require_matching_tags BOOLEAN NOT NULL DEFAULT FALSE,
	max_concurrent        BIGINT NOT NULL DEFAULT 0,
	accepts_agents        BOOLEAN NOT NULL DEFAULT FALSE,
	status                TEXT NOT NULL,
	registered_at         {{.Time}} NOT NULL,
	last_heartbeat_at     {{.Time}} NOT NULL
)
--bun:split
CREATE INDEX IF NOT EXISTS runners_status_heartbeat ON runners (status, last_heartbeat_at)
--bun:split
CREATE TABLE IF NOT EXISTS agents (
	name           TEXT PRIMARY KEY,
	type           TEXT NOT NULL,
	-- runner_id is the owning runner, '' for the coordinator's registry.
	runner_id      TEXT NOT NULL DEFAULT '',
	-- tags is the blueprint's tags as ",a,b," so that a filter is a substring test (tags hold no commas).
	tags           TEXT NOT NULL DEFAULT '',
	blueprint      {{.JSON}} NOT NULL,
	created_at     {{.Time}} NOT NULL,
	updated_at     {{.Time}} NOT NULL
)
--bun:split
CREATE INDEX IF NOT EXISTS agents_runner ON agents (runner_id)
--bun:split
CREATE TABLE IF NOT EXISTS sessions (
	id                  TEXT PRIMARY KEY,
	agent_name          TEXT NOT NULL,
	agent_type          TEXT NOT NULL,
	status              TEXT NOT NULL,
	parent_session_id   TEXT NOT NULL DEFAULT '',
	callback            BOOLEAN NOT NULL DEFAULT FALSE,
	project_dir         TEXT NOT NULL DEFAULT '',
	parameters          {{.JSON}},
	output_schema       {{.JSON}},
	demands             {{.JSON}},
	metadata            {{.JSON}},
	runner_id           TEXT NOT NULL DEFAULT '',
	current_run_id      TEXT NOT NULL DEFAULT '',
	executor_session_id TEXT NOT NULL DEFAULT '',
	result              {{.JSON}},
	error               TEXT NOT NULL DEFAULT '',
	-- last_event_seq is raised atomically by each append: it hands out the events' sequence numbers.
	last_event_seq      BIGINT NOT NULL DEFAULT 0,
	created_at          {{.Time}} NOT NULL,
	updated_at          {{.Time}} NOT NULL,
	ended_at            {{.Time}}
)
--bun:split
CREATE INDEX IF NOT EXISTS sessions_created ON sessions (created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_session_id, created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS sessions_status ON sessions (status, created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS sessions_agent ON sessions (agent_name, created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS sessions_ended ON sessions (ended_at)
--bun:split
CREATE TABLE IF NOT EXISTS runs (
	id                       TEXT PRIMARY KEY,
	session_id               TEXT NOT NULL,
	agent_name               TEXT NOT NULL,
	agent_type               TEXT NOT NULL,
	type                     TEXT NOT NULL,
	mode                     TEXT NOT NULL DEFAULT '',
	status                   TEXT NOT NULL,
	parameters               {{.JSON}},
	-- The demands, one column each so that the claim query can match them ('' demands nothing).
	demand_runner_id         TEXT NOT NULL DEFAULT '',
	demand_hostname          TEXT NOT NULL DEFAULT '',
	demand_project_dir       TEXT NOT NULL DEFAULT '',
	demand_executor_type     TEXT NOT NULL DEFAULT '',
	demand_executor_profile  TEXT NOT NULL DEFAULT '',
	-- demand_tags keeps the demanded tags in order for reading back; run_tags is what the claim matches;
	-- demand_tag_count spares the claim a look into run_tags for the (common) runs that demand no tag.
	demand_tags              {{.JSON}},
	demand_tag_count         BIGINT NOT NULL DEFAULT 0,
	project_dir              TEXT NOT NULL DEFAULT '',
	output_schema            {{.JSON}},
	metadata                 {{.JSON}},
	callback_url             TEXT NOT NULL DEFAULT '',
	runner_id                TEXT NOT NULL DEFAULT '',
	error                    TEXT NOT NULL DEFAULT '',
	stop_requested_at        {{.Time}},
	stop_sent_at             {{.Time}},
	created_at               {{.Time}} NOT NULL,
	claimed_at               {{.Time}},
	started_at               {{.Time}},
	ended_at                 {{.Time}}
)
--bun:split
-- The claim index holds pending runs only (so it stays small however long the history grows) and is
-- ordered for the claim's probes: equality on (demand_runner_id, agent_type), then oldest first. Runs
-- pinned to other runners sit under other keys and are never visited.
CREATE INDEX IF NOT EXISTS runs_claim ON runs (demand_runner_id, agent_type, created_at, id) WHERE status = 'pending'
--bun:split
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS runs_runner ON runs (runner_id, status)
--bun:split
CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id, created_at, id)
--bun:split
CREATE TABLE IF NOT EXISTS run_tags (
	run_id TEXT NOT NULL,
	tag    TEXT NOT NULL,
	PRIMARY KEY (run_id, tag)
){{.WithoutRowID}}
--bun:split
CREATE TABLE IF NOT EXISTS events (
	session_id TEXT NOT NULL,
	seq        BIGINT NOT NULL,
	type       TEXT NOT NULL,
	time       {{.Time}} NOT NULL,
	data       {{.JSON}},
	PRIMARY KEY (session_id, seq)
){{.WithoutRowID}}
--bun:split
CREATE TABLE IF NOT EXISTS callbacks (
	id                TEXT PRIMARY KEY,
	parent_session_id TEXT NOT NULL,
	child_session_id  TEXT NOT NULL,
	type              TEXT NOT NULL,
	child_agent       TEXT NOT NULL DEFAULT '',
	result            {{.JSON}},
	created_at        {{.Time}} NOT NULL,
	delivered_at      {{.Time}},
	delivered_run     TEXT NOT NULL DEFAULT ''
)
--bun:split
CREATE INDEX IF NOT EXISTS callbacks_parent ON callbacks (parent_session_id, created_at, id)
--bun:split
CREATE INDEX IF NOT EXISTS callbacks_child ON callbacks (child_session_id)
