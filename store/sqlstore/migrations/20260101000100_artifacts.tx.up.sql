-- Artifacts: the files sessions produced. The bytes are in the coordinator's blob bucket under blob_key
-- (fresh for every upload); this is their record.
CREATE TABLE IF NOT EXISTS artifacts (
	session_id   TEXT NOT NULL,
	name         TEXT NOT NULL,
	blob_key     TEXT NOT NULL,
	size         BIGINT NOT NULL,
	sha256       TEXT NOT NULL,
	content_type TEXT NOT NULL DEFAULT '',
	run_id       TEXT NOT NULL DEFAULT '',
	created_at   {{.Time}} NOT NULL,
	PRIMARY KEY (session_id, name)
){{.WithoutRowID}}
--bun:split
-- Bucket keys no record refers to any more (replaced artifacts, deleted sessions' artifacts), queued in
-- the transaction that dropped the record, until the coordinator has deleted their objects.
CREATE TABLE IF NOT EXISTS artifact_garbage (
	blob_key  TEXT PRIMARY KEY,
	queued_at {{.Time}} NOT NULL
)
--bun:split
CREATE INDEX IF NOT EXISTS artifact_garbage_queued ON artifact_garbage (queued_at, blob_key)
