package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

func TestPGPlaceholders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"UPDATE t SET a = ?, b = ? WHERE id = ? RETURNING id", "UPDATE t SET a = $1, b = $2 WHERE id = $3 RETURNING id"},
		{"INSERT INTO t (a, b) VALUES (?, ?), (?, ?)", "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"},
		{"SELECT '?', ? FROM \"a?b\" WHERE x IN ('', ?)", "SELECT '?', $1 FROM \"a?b\" WHERE x IN ('', $2)"},
		{"SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"},
		{"SELECT ?????????????", "SELECT $1$2$3$4$5$6$7$8$9$10$11$12$13"},
		{claimSQL[true].claim, claimSQL[true].claim}, // already numbered
	} {
		if got := pgPlaceholders(c.in); got != c.want {
			t.Errorf("pgPlaceholders(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// A 3-row insert numbers its 15 parameters in order (the tables' shapes are read from SQLite).
	sq, err := New(t.Context(), ":memory:", &Config{SkipMigrations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	q := sq.insertQuery(reflect.TypeOf(eventRow{}), 3)
	if got, want := pgPlaceholders(q), "($11, $12, $13, $14, $15)"; !strings.HasSuffix(got, want) {
		t.Errorf("3-row event insert = %q, want it to end with %q", got, want)
	}
}

// On PostgreSQL, what the prepared statements store and return is what bun's own statements store and
// return: every row type inserted both ways reads back the same, a guarded update's RETURNING row scans
// as bun reads the row, and a multi-row insert stores what bun's does. The session's time zone is not UTC,
// so that a time's text must carry its offset.
func TestPreparedMatchesBunPostgres(t *testing.T) {
	t.Parallel()
	s := pgStore(t, "America/St_Johns") // UTC-03:30 (or -02:30)
	ctx := t.Context()

	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	when := time.Date(2024, 2, 29, 23, 59, 58, 123456789, zone) // sub-µs digits: truncated, as bun does
	// fill sets the row's keys from pkSuffix and, unless keysOnly, its other columns: to values that test
	// the encoding of each type, or (zero) to their zero values.
	fill := func(ptr any, pkSuffix string, keysOnly, zero bool) {
		v := reflect.ValueOf(ptr).Elem()
		table := s.dbW.Table(v.Type())
		for _, f := range table.Fields {
			fv := f.Value(v)
			if f.IsPK {
				switch fv.Kind() {
				case reflect.String:
					fv.SetString("pk" + pkSuffix)
				case reflect.Int64:
					fv.SetInt(int64(len(pkSuffix)))
				}
				continue
			}
			if keysOnly {
				continue
			}
			if tm, ok := fv.Addr().Interface().(*time.Time); ok && zero {
				// Not the zero time: PostgreSQL prints year 1 in a local zone with a seconds offset
				// ("-03:30:52 BC"), which pgdriver cannot parse whichever way the row was written.
				*tm = when
				continue
			}
			if zero {
				continue
			}
			switch x := fv.Addr().Interface().(type) {
			case *string:
				*x = "é ' \" ? \\ " + f.Name
			case *bool:
				*x = true
			case *int64:
				*x = -42
			case *float64:
				*x = -42.5
			case *time.Time:
				*x = when
			case **time.Time:
				w := when.Add(time.Microsecond)
				*x = &w
			case *json.RawMessage:
				*x = json.RawMessage(`{"s": "\u0000 é ' ?", "n": [1, 2.50, null]}`)
			default:
				t.Fatalf("%s.%s: no filler for %T", table.Name, f.Name, x)
			}
		}
	}
	for _, row := range []any{&runnerRow{}, &agentRow{}, &sessionRow{}, &runRow{}, &runTagRow{}, &eventRow{}, &callbackRow{}, &webhookRow{}} {
		typ := reflect.TypeOf(row).Elem()
		for _, zero := range []bool{false, true} {
			suffix := "-full"
			if zero {
				suffix = "-zero"
			}
			prep, viaBun := reflect.New(typ).Interface(), reflect.New(typ).Interface()
			fill(prep, suffix+"-p", false, zero)
			fill(viaBun, suffix+"-bun", false, zero)
			perr := s.insert(ctx, prep)
			_, berr := s.dbW.NewInsert().Model(viaBun).Exec(ctx)
			if (perr == nil) != (berr == nil) {
				t.Errorf("%s%s: prepared insert: %v; bun insert: %v", typ.Name(), suffix, perr, berr)
				continue
			}
			if perr != nil {
				continue // both refuse (a NOT NULL column left NULL)
			}
			got, want := reflect.New(typ).Interface(), reflect.New(typ).Interface()
			fill(got, suffix+"-p", true, false)
			fill(want, suffix+"-bun", true, false)
			if err := s.dbW.NewSelect().Model(got).WherePK().Scan(ctx); err != nil {
				t.Fatalf("%s%s: %v", typ.Name(), suffix, err)
			}
			if err := s.dbW.NewSelect().Model(want).WherePK().Scan(ctx); err != nil {
				t.Fatalf("%s%s: %v", typ.Name(), suffix, err)
			}
			fill(got, suffix+"-bun", true, false) // the keys differ by construction
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s%s inserted prepared reads back\n%+v\nthrough bun\n%+v", typ.Name(), suffix, got, want)
			}
		}
	}

	// A guarded update's RETURNING row, scanned from the prepared statement, is the row as bun reads it.
	for _, id := range []string{"pk-full-p", "pk-zero-p"} {
		u := guardedUpdate{table: "sessions"}
		u.set("status", "done")
		u.set("result", `{"x": "\u0000"}`)
		u.setNull("ended_at")
		u.set("updated_at", formatTime(when.Add(time.Second)))
		u.whereEq("id", id)
		u.whereIn("status", []string{"", "é ' \" ? \\ status"})
		var got, want sessionRow
		if err := u.run(ctx, s, sessionColumns, &got); err != nil {
			t.Fatalf("update session %s: %v", id, err)
		}
		if err := s.dbW.NewSelect().Model(&want).Where("id = ?", id).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("RETURNING of session %s\n%+v\nbun reads\n%+v", id, got, want)
		}
		if !got.UpdatedAt.Equal(when.Add(time.Second).Truncate(time.Microsecond)) {
			t.Errorf("updated_at = %v, want %v", got.UpdatedAt, when.Add(time.Second).Truncate(time.Microsecond))
		}
		// The guard no longer matches: no row.
		if err := u.run(ctx, s, sessionColumns, &sessionRow{}); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("second update of session %s: %v, want sql.ErrNoRows", id, err)
		}
	}
	var run, want runRow
	u := guardedUpdate{table: "runs"}
	u.set("parked", false)
	u.set("demand_tag_count", int64(7))
	u.set("started_at", formatTime(when))
	u.setNull("claimed_at")
	u.whereEq("id", "pk-full-p")
	if err := u.run(ctx, s, runColumns, &run); err != nil {
		t.Fatal(err)
	}
	if err := s.dbW.NewSelect().Model(&want).Where("id = ?", "pk-full-p").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run, want) || run.Parked || run.DemandTagCount != 7 || run.ClaimedAt != nil {
		t.Errorf("RETURNING of run\n%+v\nbun reads\n%+v", run, want)
	}

	// A formatTime text in any offset, and its -07:00 form, is the instant it names.
	for _, text := range []string{formatTime(when), "2024-02-29 11:29:58.123456-07:00", "2024-02-29 18:29:58.123456+00:00"} {
		var got time.Time
		if err := s.queryRow(ctx, "SELECT ?::timestamptz", []any{text}, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(when.Truncate(time.Microsecond)) {
			t.Errorf("%q = %v, want %v", text, got, when.Truncate(time.Microsecond))
		}
	}

	// A multi-row insert, prepared, stores what bun's stores.
	events := func(session string) []eventRow {
		var rows []eventRow
		for i := range 3 {
			rows = append(rows, eventRow{SessionID: session, Seq: int64(i + 1), Type: "t", Time: when.Add(time.Duration(i) * time.Microsecond)})
		}
		rows[1].Data = json.RawMessage(`{"a": "\u0000"}`)
		return rows
	}
	if err := s.insertRows(ctx, ptrTo(events("multi-p"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.dbW.NewInsert().Model(ptrTo(events("multi-bun"))).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var gotEv, wantEv []eventRow
	if err := s.dbW.NewSelect().Model(&gotEv).Where("session_id = ?", "multi-p").OrderExpr("seq").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.dbW.NewSelect().Model(&wantEv).Where("session_id = ?", "multi-bun").OrderExpr("seq").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range gotEv {
		gotEv[i].SessionID = "multi-bun"
	}
	if !reflect.DeepEqual(gotEv, wantEv) {
		t.Errorf("events inserted prepared\n%+v\nthrough bun\n%+v", gotEv, wantEv)
	}

	// A NUL byte in a string is refused, as bun refuses it (PostgreSQL's text cannot hold one).
	nul := &runTagRow{RunID: "r", Tag: "a\x00b"}
	if err := s.insert(ctx, nul); err == nil {
		t.Error("prepared insert of a string with a NUL byte succeeded")
	}
	if _, err := s.dbW.NewInsert().Model(nul).Exec(ctx); err == nil {
		t.Error("bun insert of a string with a NUL byte succeeded")
	}
}

func ptrTo[T any](v T) *T { return &v }

// pgStore opens a store in a fresh PostgreSQL schema whose sessions use the time zone tz; it skips the
// test without ORCHESTRATOR_TEST_POSTGRES_URL.
func pgStore(t *testing.T, tz string) *Store {
	t.Helper()
	base := os.Getenv("ORCHESTRATOR_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("set ORCHESTRATOR_TEST_POSTGRES_URL to run the PostgreSQL tests")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "preparedtest_" + hex.EncodeToString(b[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("timezone", tz)
	u.RawQuery = q.Encode()
	s, err := New(t.Context(), u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
