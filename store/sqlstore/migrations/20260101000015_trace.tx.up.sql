-- Trace context: a run keeps the W3C traceparent of the span that created it, so that its claim, its
-- execution on a runner and its report continue one trace; a session keeps the id of its trace, which the
-- API and the dashboard show.
ALTER TABLE runs ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''
--bun:split
ALTER TABLE sessions ADD COLUMN trace_id TEXT NOT NULL DEFAULT ''
