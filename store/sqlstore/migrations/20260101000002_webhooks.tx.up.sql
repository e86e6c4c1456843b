-- Webhook deliveries to runs' callback_url: a durable outbox, leased by the coordinator replica that
-- delivers them.
CREATE TABLE IF NOT EXISTS webhooks (
	id              TEXT PRIMARY KEY,
	url             TEXT NOT NULL,
	session_id      TEXT NOT NULL,
	run_id          TEXT NOT NULL,
	payload         {{.JSON}} NOT NULL,
	status          TEXT NOT NULL,
	attempts        BIGINT NOT NULL DEFAULT 0,
	next_attempt_at {{.Time}} NOT NULL,
	last_error      TEXT NOT NULL DEFAULT '',
	created_at      {{.Time}} NOT NULL,
	delivered_at    {{.Time}}
)
--bun:split
-- Pending webhooks only, by due time: the deliverer's probe.
CREATE INDEX IF NOT EXISTS webhooks_due ON webhooks (next_attempt_at, id) WHERE status = 'pending'
--bun:split
CREATE INDEX IF NOT EXISTS webhooks_session ON webhooks (session_id)
