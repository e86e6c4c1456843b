package sqlstore

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"testing"

	"github.com/uptrace/bun/driver/pgdriver"
)

// TestPGArrayRoundTrip: every text a grouped update may carry (an error message, a result) reads back
// from the array literal unchanged, on PostgreSQL itself.
func TestPGArrayRoundTrip(t *testing.T) {
	base := os.Getenv("ORCHESTRATOR_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("ORCHESTRATOR_TEST_POSTGRES_URL is not set; PostgreSQL tests skipped")
	}
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	defer db.Close()
	texts := []string{"", "plain", `quote " inside`, `back\slash`, `\"`, "{braces},commas", "NULL", "null",
		"  spaces  ", "new\nline\ttab", "é ✓ 日本", `{"json":["a","b\\"c"]}`, "'single'"}
	vals := make([]any, len(texts)+1)
	for i, s := range texts {
		vals[i] = s
	}
	vals[len(texts)] = nil
	lit, err := pgArray(vals)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(context.Background(), "SELECT unnest($1::text[])", lit)
	if err != nil {
		t.Fatalf("%s: %v", lit, err)
	}
	defer rows.Close()
	var got []string
	var nulls int
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			nulls++
			continue
		}
		got = append(got, s.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, texts) || nulls != 1 {
		t.Errorf("round trip of %s:\n got %q (%d NULL)\nwant %q (1 NULL)", lit, got, nulls, texts)
	}
	if _, err := pgArray([]any{struct{}{}}); err == nil {
		t.Error("pgArray took a struct, which no grouped update sends")
	}
	if lit, err := pgArray([]any{0.1, 1e-7, nil}); err != nil || lit != "{0.1,1e-07,NULL}" {
		t.Errorf("pgArray of floats = %q, %v; want the shortest exact forms", lit, err)
	}
}
