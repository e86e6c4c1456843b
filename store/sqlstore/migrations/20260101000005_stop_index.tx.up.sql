-- The stop probe of every poll looks for runs of one runner that are claimed or running with a stop
-- requested. runs_runner (runner_id, status) could answer it, but PostgreSQL's generic plan of the
-- prepared probe matched runner_id alone and filtered every run the runner ever held, so a poll cost more
-- the longer the runner had served. This index holds only the runs the probe can find: a stop is rare, so
-- it is nearly always empty and no other write touches it. The statuses are literals, as in the probe,
-- so that both planners can prove the probe matches the index's predicate.
CREATE INDEX IF NOT EXISTS runs_stop ON runs (runner_id) WHERE stop_requested_at IS NOT NULL AND status IN ('claimed', 'running')
