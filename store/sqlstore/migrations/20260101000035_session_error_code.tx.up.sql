-- A session's machine-readable failure code (timeout, api_overloaded, rejected, budget_exceeded, …), beside
-- its human-readable error.
ALTER TABLE sessions ADD COLUMN error_code TEXT NOT NULL DEFAULT ''
