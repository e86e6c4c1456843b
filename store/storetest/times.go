package storetest

import (
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// testTimes checks that times round-trip exactly at microsecond precision and come back in UTC, whatever
// zone they went in with.
func testTimes(t *testing.T, newStore func(*testing.T) store.Store) {
	s := newStore(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	local := time.Now().In(zone).Truncate(time.Microsecond)
	old := time.Date(1999, 12, 31, 23, 59, 59, 999999000, zone)

	se := newSession("ses_a", local)
	se.UpdatedAt, se.EndedAt = old, ptr(local.Add(time.Microsecond))
	must(t, "CreateSession", s.CreateSession(ctx(t), se))
	got, err := s.GetSession(ctx(t), "ses_a")
	must(t, "GetSession", err)
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"CreatedAt", got.CreatedAt, se.CreatedAt},
		{"UpdatedAt", got.UpdatedAt, se.UpdatedAt},
		{"EndedAt", *got.EndedAt, *se.EndedAt},
	} {
		if !c.got.Equal(c.want) || c.got.Location() != time.UTC {
			t.Errorf("%s = %v, want %v in UTC", c.name, c.got, c.want)
		}
	}

	r := newRun("run_a", "ses_a", local)
	r.StopRequestedAt = ptr(old)
	must(t, "CreateRun", s.CreateRun(ctx(t), r))
	claimed, err := claimOne(ctx(t), s, store.ClaimParams{Runner: newRunner("lnch_a"), Now: local.Add(time.Microsecond)})
	must(t, "claim", err)
	if !claimed.CreatedAt.Equal(local) || claimed.CreatedAt.Location() != time.UTC ||
		!claimed.StopRequestedAt.Equal(old) || !claimed.ClaimedAt.Equal(local.Add(time.Microsecond)) {
		t.Errorf("claimed run times: created %v stop requested %v claimed %v; want %v, %v, %v (UTC)",
			claimed.CreatedAt, claimed.StopRequestedAt, claimed.ClaimedAt, local, old, local.Add(time.Microsecond))
	}

	// Comparisons against bound times are exact to the microsecond.
	for _, tc := range []struct {
		before time.Time
		want   int
	}{{local, 0}, {local.Add(time.Microsecond), 1}} {
		rs, err := s.ListRuns(ctx(t), orchestrator.RunFilter{CreatedBefore: tc.before})
		must(t, "ListRuns", err)
		if len(rs) != tc.want {
			t.Errorf("ListRuns created before %v = %d runs, want %d", tc.before, len(rs), tc.want)
		}
	}
}
