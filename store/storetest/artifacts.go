package storetest

import (
	"slices"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testArtifacts checks the artifact records: put, get, list, replace (the old key queued as garbage),
// and that deleting a session, by hand or by retention, drops its records and queues their keys.
func testArtifacts(t *testing.T, newStore func(*testing.T) store.Store) {
	art := func(session, name, key string, ms int) *store.Artifact {
		return &store.Artifact{
			Artifact: orchestrator.Artifact{
				SessionID: session, Name: name, Size: int64(len(key)), SHA256: "sha-" + key,
				ContentType: "text/plain; charset=utf-8", RunID: "run_" + session, CreatedAt: at(ms),
			},
			Key: key,
		}
	}
	garbage := func(t *testing.T, s store.Store) []string {
		t.Helper()
		keys, err := s.ListArtifactGarbage(ctx(t), 100)
		must(t, "ListArtifactGarbage", err)
		slices.Sort(keys)
		return keys
	}

	t.Run("PutGetList", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", at(0))))
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_b", at(0))))
		b, a := art("ses_a", "reports/b.md", "k1", 1), art("ses_a", "a.txt", "k2", 2)
		must(t, "PutArtifact", s.PutArtifact(ctx(t), b))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), a))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_b", "a.txt", "k3", 3)))

		got, err := s.GetArtifact(ctx(t), "ses_a", "reports/b.md")
		must(t, "GetArtifact", err)
		equal(t, "GetArtifact", got, b)
		list, err := s.ListArtifacts(ctx(t), "ses_a")
		must(t, "ListArtifacts", err)
		equal(t, "ListArtifacts (by name)", list, []*store.Artifact{a, b})
		n, err := s.CountArtifacts(ctx(t), "ses_a")
		must(t, "CountArtifacts", err)
		equal(t, "CountArtifacts", n, 2)

		_, err = s.GetArtifact(ctx(t), "ses_a", "missing")
		wantErr(t, "GetArtifact missing", err, orchestrator.ErrNotFound)
		none, err := s.ListArtifacts(ctx(t), "ses_missing")
		must(t, "ListArtifacts of an unknown session", err)
		equal(t, "ListArtifacts of an unknown session", len(none), 0)
		wantErr(t, "PutArtifact for an unknown session", s.PutArtifact(ctx(t), art("ses_missing", "x", "k9", 1)), orchestrator.ErrNotFound)
		equal(t, "garbage", garbage(t, s), []string(nil))
	})

	t.Run("ReplaceQueuesOldKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", at(0))))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_a", "out.bin", "k1", 1)))
		second := art("ses_a", "out.bin", "k2", 2)
		second.RunID, second.ContentType = "", "application/octet-stream"
		must(t, "PutArtifact again", s.PutArtifact(ctx(t), second))
		got, err := s.GetArtifact(ctx(t), "ses_a", "out.bin")
		must(t, "GetArtifact", err)
		equal(t, "replaced record", got, second)
		equal(t, "garbage after replacing", garbage(t, s), []string{"k1"})

		must(t, "DeleteArtifactGarbage", s.DeleteArtifactGarbage(ctx(t), []string{"k1", "never-queued"}))
		equal(t, "garbage after collecting", garbage(t, s), []string(nil))
	})

	t.Run("DeleteSessionQueuesKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_a", at(0))))
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_keep", at(0))))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_a", "one", "k1", 1)))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_a", "dir/two", "k2", 2)))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_keep", "one", "k3", 3)))
		must(t, "DeleteSession", s.DeleteSession(ctx(t), "ses_a"))

		equal(t, "garbage", garbage(t, s), []string{"k1", "k2"})
		list, err := s.ListArtifacts(ctx(t), "ses_a")
		must(t, "ListArtifacts", err)
		equal(t, "artifacts of the deleted session", len(list), 0)
		list, err = s.ListArtifacts(ctx(t), "ses_keep")
		must(t, "ListArtifacts", err)
		equal(t, "artifacts of the other session", len(list), 1)
	})

	t.Run("RetentionQueuesKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		old := newSession("ses_old", at(0))
		old.Status, old.EndedAt = orchestrator.SessionCompleted, ptr(at(10))
		must(t, "CreateSession", s.CreateSession(ctx(t), old))
		must(t, "CreateSession", s.CreateSession(ctx(t), newSession("ses_live", at(0))))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_old", "a", "k1", 1)))
		must(t, "PutArtifact", s.PutArtifact(ctx(t), art("ses_live", "a", "k2", 2)))
		n, err := s.DeleteEndedSessions(ctx(t), at(100), 10)
		must(t, "DeleteEndedSessions", err)
		equal(t, "sessions deleted", n, 1)
		equal(t, "garbage", garbage(t, s), []string{"k1"})
		_, err = s.GetArtifact(ctx(t), "ses_live", "a")
		must(t, "GetArtifact of the live session", err)
	})
}
