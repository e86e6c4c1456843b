-- Timeouts: a run's timeout in milliseconds (the request's timeout_seconds, else its blueprint's), the deadline by which a
-- pending run must be taken (start_timeout_seconds), and when the coordinator found the run past its
-- timeout and asked its runner to stop it.
ALTER TABLE runs ADD COLUMN timeout_ms BIGINT NOT NULL DEFAULT 0
--bun:split
ALTER TABLE runs ADD COLUMN start_deadline {{.Time}}
--bun:split
ALTER TABLE runs ADD COLUMN timed_out_at {{.Time}}
--bun:split
-- The timeout sweep's probe: claimed or running runs with a timeout, few at any time.
CREATE INDEX IF NOT EXISTS runs_timed ON runs (created_at, id) WHERE timeout_ms > 0 AND status IN ('claimed', 'running')
--bun:split
-- The start-deadline sweep's probe: pending runs with a start deadline.
CREATE INDEX IF NOT EXISTS runs_start_deadline ON runs (start_deadline) WHERE start_deadline IS NOT NULL AND status = 'pending'
