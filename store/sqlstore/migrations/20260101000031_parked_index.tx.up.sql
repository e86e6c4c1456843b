-- The coordinator's full sweeps look for parked runs that a live runner now matches. Without an index of
-- their own that look walked every pending run: a backlog of 100,000 runs that busy runners will take
-- cost a walk of 100,000 rows every few seconds to find the few parked ones. Parked runs are few, and no
-- write of an unparked run touches this index. The terms are written as the sweep's query writes them, so
-- that SQLite's planner can prove the query matches the index's predicate.
CREATE INDEX IF NOT EXISTS runs_parked ON runs (created_at, id) WHERE status = 'pending' AND parked
