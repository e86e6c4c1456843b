package sqlstore

import (
	"strings"
	"testing"

	"github.com/uptrace/bun"
)

func TestSQLiteDSN(t *testing.T) {
	t.Parallel()
	all := "_pragma=busy_timeout%285000%29&_pragma=journal_mode%28WAL%29&_pragma=synchronous%28NORMAL%29&_pragma=foreign_keys%281%29&_pragma=temp_store%28MEMORY%29&_txlock=immediate"
	for _, tc := range []struct {
		in, want string
		memory   bool
	}{
		{"/var/lib/o.db", "/var/lib/o.db?" + all, false},
		{"o.db", "o.db?" + all, false},
		{":memory:", "file::memory:?_pragma=busy_timeout%285000%29&_pragma=synchronous%28NORMAL%29&_pragma=foreign_keys%281%29&_pragma=temp_store%28MEMORY%29&_txlock=immediate", true},
		{"file:o.db?mode=rwc", "file:o.db?mode=rwc&" + all, false},
		{"file:x?mode=memory&cache=shared", "file:x?mode=memory&cache=shared&_pragma=busy_timeout%285000%29&_pragma=synchronous%28NORMAL%29&_pragma=foreign_keys%281%29&_pragma=temp_store%28MEMORY%29&_txlock=immediate", true},
		// What the caller sets stays; only what is missing is added.
		{"o.db?_pragma=busy_timeout(100)&_txlock=deferred&_journal_mode=DELETE&_fk=0&_pragma=synchronous(FULL)",
			"o.db?_pragma=busy_timeout(100)&_txlock=deferred&_journal_mode=DELETE&_fk=0&_pragma=synchronous(FULL)&_pragma=temp_store%28MEMORY%29", false},
	} {
		got, memory, err := sqliteDSN(tc.in)
		if err != nil {
			t.Fatalf("sqliteDSN(%q): %v", tc.in, err)
		}
		if got != tc.want || memory != tc.memory {
			t.Errorf("sqliteDSN(%q) = %q, memory %v; want %q, %v", tc.in, got, memory, tc.want, tc.memory)
		}
	}
	if _, _, err := sqliteDSN("o.db?%zz"); err == nil {
		t.Error("sqliteDSN with a malformed query succeeded")
	}
}

// Every connection, writer and readers, runs with the settings the DSN adds.
func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	s := sqliteStore(t)
	want := map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "synchronous": "1", "foreign_keys": "1", "temp_store": "2"}
	for _, h := range []struct {
		name string
		db   *bun.DB
	}{{"writer", s.dbW}, {"reader", s.r.(*bun.DB)}} {
		if h.name == "reader" && h.db == s.dbW {
			t.Fatal("a file database has no pool of its own for reads")
		}
		for pragma, v := range want {
			var got string
			if err := h.db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !strings.EqualFold(got, v) {
				t.Errorf("%s: PRAGMA %s = %s, want %s", h.name, pragma, got, v)
			}
		}
	}
}
