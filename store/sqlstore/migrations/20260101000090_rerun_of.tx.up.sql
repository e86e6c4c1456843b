-- A re-run session keeps the id of the session it re-runs, so that the API, the dashboard and ao show
-- where it came from.
ALTER TABLE sessions ADD COLUMN rerun_of TEXT NOT NULL DEFAULT ''
