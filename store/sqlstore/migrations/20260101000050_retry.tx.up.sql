-- Retries: a session's retry policy (NULL: its agent type's default), its current attempt and how many its
-- policy allows, and when its next attempt is due; each run's attempt and the session's allowance, so that
-- a run's end knows without reading its session whether a failure may be retried.
ALTER TABLE sessions ADD COLUMN retry_policy {{.JSON}}
--bun:split
ALTER TABLE sessions ADD COLUMN attempt BIGINT NOT NULL DEFAULT 1
--bun:split
ALTER TABLE sessions ADD COLUMN max_attempts BIGINT NOT NULL DEFAULT 1
--bun:split
ALTER TABLE sessions ADD COLUMN next_attempt_at {{.Time}}
--bun:split
ALTER TABLE runs ADD COLUMN attempt BIGINT NOT NULL DEFAULT 1
--bun:split
ALTER TABLE runs ADD COLUMN max_attempts BIGINT NOT NULL DEFAULT 1
