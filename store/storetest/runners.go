package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

func testRunners(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("PutGet", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		r := newRunner("lnch_a")
		must(t, "PutRunner", s.PutRunner(ctx(t), r))
		got, err := s.GetRunner(ctx(t), r.ID)
		must(t, "GetRunner", err)
		equal(t, "GetRunner", got, r)

		// Put replaces every field.
		r2 := newRunner("lnch_a")
		r2.Hostname, r2.Tags, r2.Executor, r2.AcceptsAgents, r2.RequireMatchingTags = "other", nil, nil, false, true
		r2.MaxConcurrent, r2.Status, r2.LastHeartbeatAt = 9, orchestrator.RunnerStale, at(5)
		must(t, "PutRunner again", s.PutRunner(ctx(t), r2))
		got, err = s.GetRunner(ctx(t), r.ID)
		must(t, "GetRunner", err)
		equal(t, "GetRunner after replace", got, r2)

		// The caller owns what it gets.
		got.Tags = append(got.Tags, "mutated")
		again, _ := s.GetRunner(ctx(t), r.ID)
		equal(t, "GetRunner after mutating a copy", again, r2)

		_, err = s.GetRunner(ctx(t), "lnch_missing")
		wantErr(t, "GetRunner missing", err, orchestrator.ErrNotFound)
		_, err = s.GetRunner(ctx(t), "lnch_\x00")
		wantErr(t, "GetRunner with a NUL byte", err, orchestrator.ErrNotFound)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for i, st := range []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale, orchestrator.RunnerOffline, orchestrator.RunnerOnline} {
			r := newRunner("lnch_" + string(rune('d'-i))) // ids descend while registration ascends
			r.Status, r.RegisteredAt, r.LastHeartbeatAt = st, at(i), at(10*i)
			must(t, "PutRunner", s.PutRunner(ctx(t), r))
		}
		for _, tc := range []struct {
			name string
			f    store.RunnerFilter
			want []string
		}{
			{"all", store.RunnerFilter{}, []string{"lnch_d", "lnch_c", "lnch_b", "lnch_a"}},
			{"online", store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline}}, []string{"lnch_d", "lnch_a"}},
			{"online or stale", store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale}}, []string{"lnch_d", "lnch_c", "lnch_a"}},
			{"heartbeat before 20ms", store.RunnerFilter{HeartbeatBefore: at(20)}, []string{"lnch_d", "lnch_c"}},
			{"online with old heartbeat", store.RunnerFilter{Statuses: []orchestrator.RunnerStatus{orchestrator.RunnerOnline}, HeartbeatBefore: at(20)}, []string{"lnch_d"}},
		} {
			got, err := s.ListRunners(ctx(t), tc.f)
			must(t, "ListRunners "+tc.name, err)
			equal(t, "ListRunners "+tc.name, runnerIDs(got), tc.want)
		}
	})

	t.Run("Touch", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, st := range []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale, orchestrator.RunnerOffline} {
			r := newRunner("lnch_" + string(st))
			r.Status = st
			must(t, "PutRunner", s.PutRunner(ctx(t), r))
		}
		for _, id := range []string{"lnch_online", "lnch_stale"} {
			got, err := s.TouchRunner(ctx(t), id, at(100))
			must(t, "TouchRunner "+id, err)
			if got.Status != orchestrator.RunnerOnline || !got.LastHeartbeatAt.Equal(at(100)) {
				t.Fatalf("TouchRunner %s = status %s heartbeat %v, want online at %v", id, got.Status, got.LastHeartbeatAt, at(100))
			}
			stored, _ := s.GetRunner(ctx(t), id)
			equal(t, "stored after TouchRunner "+id, stored, got)
		}
		_, err := s.TouchRunner(ctx(t), "lnch_offline", at(100))
		wantErr(t, "TouchRunner offline", err, orchestrator.ErrNotFound)
		if r, _ := s.GetRunner(ctx(t), "lnch_offline"); r.Status != orchestrator.RunnerOffline || !r.LastHeartbeatAt.Equal(base) {
			t.Fatalf("offline runner after TouchRunner = %s at %v, want unchanged", r.Status, r.LastHeartbeatAt)
		}
		_, err = s.TouchRunner(ctx(t), "lnch_missing", at(100))
		wantErr(t, "TouchRunner missing", err, orchestrator.ErrNotFound)
	})

	t.Run("UpdateStatus", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		r := newRunner("lnch_a")
		r.LastHeartbeatAt = at(10)
		must(t, "PutRunner", s.PutRunner(ctx(t), r))
		online := []orchestrator.RunnerStatus{orchestrator.RunnerOnline}

		// The heartbeat guard: a runner that beat at 10ms is not stale by 10ms.
		_, err := s.UpdateRunnerStatus(ctx(t), r.ID, online, orchestrator.RunnerStale, at(10))
		wantErr(t, "UpdateRunnerStatus with a fresh heartbeat", err, orchestrator.ErrConflict)
		got, err := s.UpdateRunnerStatus(ctx(t), r.ID, online, orchestrator.RunnerStale, at(11))
		must(t, "UpdateRunnerStatus online→stale", err)
		if got.Status != orchestrator.RunnerStale {
			t.Fatalf("status = %s, want stale", got.Status)
		}
		_, err = s.UpdateRunnerStatus(ctx(t), r.ID, online, orchestrator.RunnerOffline, at(11))
		wantErr(t, "UpdateRunnerStatus from the wrong status", err, orchestrator.ErrConflict)
		got, err = s.UpdateRunnerStatus(ctx(t), r.ID, []orchestrator.RunnerStatus{orchestrator.RunnerOnline, orchestrator.RunnerStale}, orchestrator.RunnerOffline, time.Time{})
		must(t, "UpdateRunnerStatus stale→offline", err)
		stored, _ := s.GetRunner(ctx(t), r.ID)
		equal(t, "stored after UpdateRunnerStatus", stored, got)
		if stored.Status != orchestrator.RunnerOffline {
			t.Fatalf("status = %s, want offline", stored.Status)
		}
		_, err = s.UpdateRunnerStatus(ctx(t), "lnch_missing", online, orchestrator.RunnerStale, time.Time{})
		wantErr(t, "UpdateRunnerStatus missing", err, orchestrator.ErrNotFound)
	})

	t.Run("SecretHash", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		hashOf := func(t *testing.T, id string) []byte {
			t.Helper()
			h, err := s.GetRunnerSecretHash(ctx(t), id)
			must(t, "GetRunnerSecretHash "+id, err)
			return h
		}
		r := newRunner("lnch_a")
		must(t, "PutRunner", s.PutRunner(ctx(t), r))
		must(t, "PutRunner", s.PutRunner(ctx(t), newRunner("lnch_b")))
		if h := hashOf(t, "lnch_a"); len(h) != 0 {
			t.Fatalf("a new runner's secret hash = %x, want none", h)
		}
		h1, h2 := sha256.Sum256([]byte("secret-1")), sha256.Sum256([]byte("secret-2"))
		must(t, "SetRunnerSecretHash", s.SetRunnerSecretHash(ctx(t), "lnch_a", h1[:]))
		if h := hashOf(t, "lnch_a"); !bytes.Equal(h, h1[:]) {
			t.Fatalf("secret hash = %x, want %x", h, h1)
		}
		if h := hashOf(t, "lnch_b"); len(h) != 0 {
			t.Fatalf("the other runner's secret hash = %x, want none", h)
		}
		// The record as the rest of the store sees it is unchanged, and changes to it keep the hash.
		got, err := s.GetRunner(ctx(t), "lnch_a")
		must(t, "GetRunner", err)
		equal(t, "GetRunner after SetRunnerSecretHash", got, r)
		r2 := newRunner("lnch_a")
		r2.Hostname = "replaced"
		must(t, "PutRunner replace", s.PutRunner(ctx(t), r2))
		_, err = s.TouchRunner(ctx(t), "lnch_a", at(50))
		must(t, "TouchRunner", err)
		_, err = s.UpdateRunnerStatus(ctx(t), "lnch_a", nil, orchestrator.RunnerStale, time.Time{})
		must(t, "UpdateRunnerStatus", err)
		if h := hashOf(t, "lnch_a"); !bytes.Equal(h, h1[:]) {
			t.Fatalf("secret hash after PutRunner, TouchRunner and UpdateRunnerStatus = %x, want %x", h, h1)
		}
		// A transaction that fails leaves the hash as it was.
		boom := errors.New("boom")
		err = s.InTx(ctx(t), func(ctx context.Context, tx store.Store) error {
			if err := tx.SetRunnerSecretHash(ctx, "lnch_a", h2[:]); err != nil {
				return err
			}
			return boom
		})
		wantErr(t, "InTx", err, boom)
		if h := hashOf(t, "lnch_a"); !bytes.Equal(h, h1[:]) {
			t.Fatalf("secret hash after a rolled back change = %x, want %x", h, h1)
		}
		must(t, "SetRunnerSecretHash replace", s.SetRunnerSecretHash(ctx(t), "lnch_a", h2[:]))
		if h := hashOf(t, "lnch_a"); !bytes.Equal(h, h2[:]) {
			t.Fatalf("secret hash = %x, want %x", h, h2)
		}
		must(t, "SetRunnerSecretHash clear", s.SetRunnerSecretHash(ctx(t), "lnch_a", nil))
		if h := hashOf(t, "lnch_a"); len(h) != 0 {
			t.Fatalf("cleared secret hash = %x, want none", h)
		}
		// A runner deleted and put again starts without one.
		must(t, "SetRunnerSecretHash", s.SetRunnerSecretHash(ctx(t), "lnch_b", h1[:]))
		must(t, "DeleteRunner", s.DeleteRunner(ctx(t), "lnch_b"))
		_, err = s.GetRunnerSecretHash(ctx(t), "lnch_b")
		wantErr(t, "GetRunnerSecretHash deleted", err, orchestrator.ErrNotFound)
		must(t, "PutRunner again", s.PutRunner(ctx(t), newRunner("lnch_b")))
		if h := hashOf(t, "lnch_b"); len(h) != 0 {
			t.Fatalf("secret hash of a runner put again after its deletion = %x, want none", h)
		}

		for _, id := range []string{"lnch_missing", "lnch_\x00"} {
			wantErr(t, "SetRunnerSecretHash "+id, s.SetRunnerSecretHash(ctx(t), id, h1[:]), orchestrator.ErrNotFound)
			_, err = s.GetRunnerSecretHash(ctx(t), id)
			wantErr(t, "GetRunnerSecretHash "+id, err, orchestrator.ErrNotFound)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		must(t, "PutRunner", s.PutRunner(ctx(t), newRunner("lnch_a")))
		must(t, "PutRunner", s.PutRunner(ctx(t), newRunner("lnch_b")))
		must(t, "DeleteRunner", s.DeleteRunner(ctx(t), "lnch_a"))
		_, err := s.GetRunner(ctx(t), "lnch_a")
		wantErr(t, "GetRunner deleted", err, orchestrator.ErrNotFound)
		wantErr(t, "DeleteRunner again", s.DeleteRunner(ctx(t), "lnch_a"), orchestrator.ErrNotFound)
		if _, err := s.GetRunner(ctx(t), "lnch_b"); err != nil {
			t.Fatalf("GetRunner of the other runner: %v", err)
		}
	})
}
