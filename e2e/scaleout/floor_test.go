package scaleout

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStoreFloor is the ceiling the database itself puts on runs/s on this machine, measured with
// nothing of the orchestrator around it: straight on a migrated store's schema, each run gets the fewest
// statements its life needs — its session and run inserted, the claim, the run and the session ended with
// their two events — grouped as the orchestrator groups them at best (claims and ends ten runs at a time,
// as a runner's multi-run claim and batched reports do). No coordinator, HTTP, runner, RETURNING or row
// scanning is in it, so the orchestrator's own paths on the same database cannot beat it; BENCHMARKS.md
// compares them. It reports runs/s and the CPU of this process per run (the database's own, on
// PostgreSQL, is not in it).
//
//   - SQLite: one connection, as the store's single writer. commit=N puts N transactions in one commit,
//     as the store's group commit does when N callers queue together (it averages about 2.6 on the HTTP
//     benchmark).
//   - PostgreSQL: eight connections, each working through its own runs; every transaction commits on its
//     own.
func BenchmarkStoreFloor(b *testing.B) {
	for _, st := range benchStores() {
		commits := []int{1}
		if st.name == "SQLite" {
			commits = []int{1, 3, 8}
		}
		for _, perCommit := range commits {
			name := st.name
			if st.name == "SQLite" {
				name += "/commit=" + strconv.Itoa(perCommit)
			}
			b.Run(name, func(b *testing.B) {
				store := st.open(b)
				pg := store.Notifier() != nil
				clients := 1
				if pg {
					clients = 8
				}
				conns := make([]*floorConn, clients)
				for i := range conns {
					conns[i] = newFloorConn(b, store.DB().DB, pg, perCommit)
				}
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				b.ResetTimer()
				began := time.Now()
				var wg sync.WaitGroup
				for c, fc := range conns {
					wg.Go(func() {
						if err := fc.runs(c, clients, b.N); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(began)
				b.StopTimer()
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
				for _, fc := range conns {
					fc.conn.Close() // give the connections back: on SQLite the store has one writer
				}
				var ended, events int
				err := store.DB().DB.QueryRow("SELECT (SELECT count(*) FROM sessions WHERE status = 'completed'), (SELECT count(*) FROM events)").
					Scan(&ended, &events)
				if err != nil || ended != b.N || events != 2*b.N {
					b.Fatalf("%d sessions ended and %d events for %d runs (%v)", ended, events, b.N, err)
				}
			})
		}
	}
}

// floorChunk is how many runs a claim and a batch of ends take together.
const floorChunk = 10

// floorConn runs the floor's statements on one connection.
type floorConn struct {
	ctx       context.Context
	conn      *sql.Conn
	pg        bool
	perCommit int
	inTx      bool
	txs       int // transactions in the open commit
	stmts     map[string]*sql.Stmt
}

func newFloorConn(b *testing.B, db *sql.DB, pg bool, perCommit int) *floorConn {
	b.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &floorConn{ctx: ctx, conn: conn, pg: pg, perCommit: perCommit, stmts: map[string]*sql.Stmt{}}
}

// exec runs query (written with ? placeholders) as a prepared statement.
func (f *floorConn) exec(query string, args ...any) error {
	st, ok := f.stmts[query]
	if !ok {
		text := query
		if f.pg {
			var sb strings.Builder
			n := 0
			for _, r := range query {
				if r == '?' {
					n++
					sb.WriteString("$" + strconv.Itoa(n))
					continue
				}
				sb.WriteRune(r)
			}
			text = sb.String()
		}
		var err error
		if st, err = f.conn.PrepareContext(f.ctx, text); err != nil {
			return fmt.Errorf("%s: %w", query, err)
		}
		f.stmts[query] = st
	}
	if _, err := st.ExecContext(f.ctx, args...); err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	return nil
}

// tx runs fn as one transaction; on SQLite perCommit of them share a commit.
func (f *floorConn) tx(fn func() error) error {
	if !f.inTx {
		if _, err := f.conn.ExecContext(f.ctx, "BEGIN"); err != nil {
			return err
		}
		f.inTx = true
	}
	if err := fn(); err != nil {
		return err
	}
	f.txs++
	if f.txs < f.perCommit {
		return nil
	}
	return f.commit()
}

// single runs one statement as a transaction: on PostgreSQL on its own (no BEGIN and COMMIT round trips),
// on SQLite through tx.
func (f *floorConn) single(query string, args ...any) error {
	if f.pg {
		return f.exec(query, args...)
	}
	return f.tx(func() error { return f.exec(query, args...) })
}

func (f *floorConn) commit() error {
	if !f.inTx {
		return nil
	}
	f.inTx, f.txs = false, 0
	_, err := f.conn.ExecContext(f.ctx, "COMMIT")
	return err
}

// floorLag is how many chunks after its creation a run is claimed, and twice that ended: in the service a
// run ends some tens of runs after it was created, so its end writes other pages than the newest ones.
const floorLag = 2

// runs takes the runs first, first+step, … below n through their lives, floorChunk at a time: a chunk is
// claimed floorLag chunks after its creation and ended floorLag chunks after that.
func (f *floorConn) runs(first, step, n int) error {
	var chunks [][]int
	var chunk []int
	next := func(created int) error {
		if c := created - floorLag; c >= 0 && c < len(chunks) {
			if err := f.claim(chunks[c]); err != nil {
				return err
			}
		}
		if c := created - 2*floorLag; c >= 0 && c < len(chunks) {
			return f.end(chunks[c])
		}
		return nil
	}
	for r := first; r < n; r += step {
		if err := f.create(r); err != nil {
			return err
		}
		if chunk = append(chunk, r); len(chunk) == floorChunk {
			chunks = append(chunks, chunk)
			chunk = nil
			if err := next(len(chunks) - 1); err != nil {
				return err
			}
		}
	}
	if len(chunk) > 0 {
		chunks = append(chunks, chunk)
	}
	for c := len(chunks) - 1; c < len(chunks)-1+2*floorLag+1; c++ {
		if err := next(c + 1); err != nil {
			return err
		}
	}
	return f.commit()
}

func floorIDs(r int) (session, run string) {
	return fmt.Sprintf("ses_%012d", r), fmt.Sprintf("run_%012d", r)
}

func floorNow() string { return time.Now().UTC().Format("2006-01-02 15:04:05.000000") }

// create inserts run r and its session.
func (f *floorConn) create(r int) error {
	now := floorNow()
	ses, run := floorIDs(r)
	if f.pg { // one statement, as Store.CreateSessionWithRun sends it
		return f.single("WITH s AS (INSERT INTO sessions (id, agent_name, agent_type, status, parameters, created_at, updated_at) VALUES (?, 'noop', 'deterministic', 'pending', '{\"i\":1}', ?, ?)) "+
			"INSERT INTO runs (id, session_id, agent_name, agent_type, type, mode, status, parameters, demand_runner_id, created_at) VALUES (?, ?, 'noop', 'deterministic', 'start', 'async_poll', 'pending', '{\"i\":1}', 'r1', ?)",
			ses, now, now, run, ses, now)
	}
	return f.tx(func() error {
		if err := f.exec("INSERT INTO sessions (id, agent_name, agent_type, status, parameters, created_at, updated_at) VALUES (?, 'noop', 'deterministic', 'pending', '{\"i\":1}', ?, ?)", ses, now, now); err != nil {
			return err
		}
		return f.exec("INSERT INTO runs (id, session_id, agent_name, agent_type, type, mode, status, parameters, demand_runner_id, created_at) VALUES (?, ?, 'noop', 'deterministic', 'start', 'async_poll', 'pending', '{\"i\":1}', 'r1', ?)", run, ses, now)
	})
}

// claim claims the runs in one statement.
func (f *floorConn) claim(runs []int) error {
	args := []any{floorNow()}
	for _, r := range runs {
		_, run := floorIDs(r)
		args = append(args, run)
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(runs)), ", ")
	return f.single("UPDATE runs SET status = 'claimed', runner_id = 'r1', claimed_at = ? WHERE status = 'pending' AND id IN ("+in+")", args...)
}

// end ends the runs and their sessions, with two events each, in one transaction.
func (f *floorConn) end(runs []int) error {
	now := floorNow()
	return f.tx(func() error {
		for _, r := range runs {
			ses, run := floorIDs(r)
			if err := f.exec("UPDATE runs SET status = 'completed', error = '', ended_at = ? WHERE id = ? AND status IN ('claimed', 'running') AND runner_id = 'r1'", now, run); err != nil {
				return err
			}
			if err := f.exec("UPDATE sessions SET status = 'completed', runner_id = 'r1', result = '{\"result\":{}}', error = '', ended_at = ?, updated_at = ?, last_event_seq = last_event_seq + 2 WHERE id = ? AND status IN ('pending', 'running')", now, now, ses); err != nil {
				return err
			}
			if err := f.exec("INSERT INTO events (session_id, seq, type, time, data) VALUES (?, 1, 'result', ?, '{}'), (?, 2, 'run_ended', ?, '{}')", ses, now, ses, now); err != nil {
				return err
			}
		}
		return nil
	})
}
