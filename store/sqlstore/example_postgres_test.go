package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log"
	"net/url"
	"os"
	"testing"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// Two coordinator replicas share one PostgreSQL store: whatever one writes, the other reads, and
// store.Notifier() carries their wake-ups (LISTEN/NOTIFY), so a runner long-polling one replica is woken
// by a run started through the other.
//
// The example runs against the database ORCHESTRATOR_TEST_POSTGRES_URL names, in a schema of its own that
// TestMain creates and drops. Without that variable it runs the same code on SQLite in memory (where
// Notifier is nil: one process needs none), so its output is checked either way.
func ExampleNew_postgres() {
	ctx := context.Background()
	dsn := exampleDSN                                                        // e.g. "postgres://orchestrator:secret@db.internal:5432/orchestrator?sslmode=verify-full"
	store, err := sqlstore.New(ctx, dsn, &sqlstore.Config{MaxOpenConns: 20}) // applies the migrations
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	var replicas [2]*coordinator.Coordinator
	for i := range replicas {
		c, err := coordinator.New(coordinator.Config{Store: store, Notifier: store.Notifier()})
		if err != nil {
			log.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			log.Fatal(err)
		}
		defer c.Stop()
		replicas[i] = c
	}

	if _, err := replicas[0].CreateAgent(ctx, &orchestrator.Blueprint{Name: "researcher", Description: "Researches things"}); err != nil {
		log.Fatal(err)
	}
	res, err := replicas[1].StartRun(ctx, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "What is LISTEN/NOTIFY?"})
	if err != nil {
		log.Fatal(err)
	}
	s, err := replicas[0].GetSession(ctx, res.SessionID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.AgentName, s.Status, string(s.Parameters))
	// Output: researcher pending {"prompt":"What is LISTEN/NOTIFY?"}
}

// exampleDSN is the database of ExampleNew_postgres; TestMain points it at PostgreSQL when it can.
var exampleDSN = ":memory:"

// TestMain gives ExampleNew_postgres a schema of its own in the database ORCHESTRATOR_TEST_POSTGRES_URL
// names, and drops it afterwards. An example cannot skip itself, so without the variable the example runs
// on SQLite instead.
func TestMain(m *testing.M) {
	base := os.Getenv(postgresEnv)
	if base == "" {
		os.Exit(m.Run())
	}
	u, err := url.Parse(base)
	if err != nil {
		log.Fatalf("%s: %v", postgresEnv, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "example_" + hex.EncodeToString(b[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		log.Fatalf("create schema: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	exampleDSN = u.String()

	code := m.Run()
	if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
		log.Printf("drop schema %s: %v", schema, err)
		code = max(code, 1)
	}
	admin.Close()
	os.Exit(code)
}
