// Package pgtest gives tests a PostgreSQL schema of their own on the server named by
// ORCHESTRATOR_TEST_POSTGRES_URL, so that tests on one database do not see each other's rows.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// Env names the environment variable holding the base DSN of the test server.
const Env = "ORCHESTRATOR_TEST_POSTGRES_URL"

// URL returns the base DSN of the test server, or "" when none is configured.
func URL() string { return os.Getenv(Env) }

// Require returns the base DSN of the test server, skipping tb when none is configured.
func Require(tb testing.TB) string {
	tb.Helper()
	base := URL()
	if base == "" {
		tb.Skipf("%s is not set; PostgreSQL tests skipped", Env)
	}
	return base
}

// Schema creates a schema named prefix_<random> on the server at base, dropped (with everything in
// it) when tb ends, and returns base with a search_path that selects it.
func Schema(tb testing.TB, base, prefix string) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := prefix + "_" + hex.EncodeToString(b[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
