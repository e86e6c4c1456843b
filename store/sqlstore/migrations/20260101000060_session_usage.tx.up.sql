-- A session's running usage totals (orchestrator.Session.Usage): raised in the same statement that appends a
-- usage event (or ends a run whose final usage no event reported), so the totals always match the events.
-- DOUBLE PRECISION is REAL to SQLite.
ALTER TABLE sessions ADD COLUMN usage_input_tokens BIGINT NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN usage_output_tokens BIGINT NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN usage_cache_read_input_tokens BIGINT NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN usage_cache_creation_input_tokens BIGINT NOT NULL DEFAULT 0
--bun:split
ALTER TABLE sessions ADD COLUMN usage_cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0
