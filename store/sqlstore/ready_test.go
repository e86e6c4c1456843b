package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// TestCheckWrite: the write check passes on a store that writes, fails — within about its one-second
// reuse — once writes to its row fail (a trigger stands in for a full disk), and passes again after.
func TestCheckWrite(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		open          func(t *testing.T) *sqlstore.Store
		failing, heal []string
	}{
		"sqlite": {
			open: func(t *testing.T) *sqlstore.Store { return newSQLite(t).(*sqlstore.Store) },
			failing: []string{`CREATE TRIGGER ready_probe_full BEFORE INSERT ON ready_probe
				BEGIN SELECT RAISE(ABORT, 'database or disk is full (simulated)'); END`},
			heal: []string{`DROP TRIGGER ready_probe_full`},
		},
		"postgres": {
			open: func(t *testing.T) *sqlstore.Store { return newPostgres(t).(*sqlstore.Store) },
			failing: []string{
				`CREATE FUNCTION ready_probe_full() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device (simulated)'; END $$`,
				`CREATE TRIGGER ready_probe_full BEFORE INSERT OR UPDATE ON ready_probe
				FOR EACH ROW EXECUTE FUNCTION ready_probe_full()`,
			},
			heal: []string{`DROP TRIGGER ready_probe_full ON ready_probe`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "postgres" {
				requirePostgres(t)
			}
			ctx := context.Background()
			s := tc.open(t)
			if err := s.CheckWrite(ctx); err != nil {
				t.Fatalf("CheckWrite on a fresh store: %v", err)
			}
			exec := func(stmts []string) {
				for _, q := range stmts {
					if _, err := s.DB().ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			waitCheck := func(wantErr bool) error {
				var err error
				if !testkit.Until(30*time.Second, func() bool {
					err = s.CheckWrite(ctx)
					return (err != nil) == wantErr
				}) {
					t.Fatalf("CheckWrite = %v, still, want an error: %v", err, wantErr)
				}
				return err
			}
			exec(tc.failing)
			t.Logf("CheckWrite while writes fail: %v", waitCheck(true))
			exec(tc.heal)
			waitCheck(false)
		})
	}
}
