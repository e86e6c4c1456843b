// Package scaleout holds the end-to-end tests and benchmarks of several coordinator replicas on one
// PostgreSQL database: the example coordinator and runner binaries, built from this module, run as real
// processes; clients and runners are given several coordinator URLs; one coordinator is killed under load.
// The benchmarks put SQLite and PostgreSQL side by side (BENCHMARKS.md).
//
// The tests need PostgreSQL: set ORCHESTRATOR_TEST_POSTGRES_URL (for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). Each test works in a schema of its own, dropped
// at its end. Without the variable they are skipped.
//
//	ORCHESTRATOR_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./e2e/scaleout/
//	ORCHESTRATOR_TEST_POSTGRES_URL=… go test -run '^$' -bench . -benchtime 5000x ./e2e/scaleout/
package scaleout
