package sqlstore

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/batch"
)

// On PostgreSQL each creation (CreateSessionWithRun or CreateSessionWithRunOnce, without demanded tags
// or limits) is one statement that commits on its own: a round trip, a parse and plan, and a WAL flush
// per run. The creations of concurrent callers are therefore grouped: one that finds no group under way
// goes at once, alone, as before (a lone run waits for nothing); those that arrive while a group is being
// written go together in the next one, one statement for all of them (the keys' and the sessions' INSERTs
// in WITH clauses of the runs'). Each caller returns once its group has committed, so a creation is
// durable when its call returns. A group that fails is written again one member at a time, so that only
// the member at fault (a taken id, or an idempotency key a concurrent create recorded first) fails.
//
// Keyed creations matter most here: the HTTP client gives every create an idempotency key, so that its
// retries are safe, and every StartRun over HTTP is a CreateSessionWithRunOnce.

// maxCreateGroup bounds the members of one grouped creation, so that one statement's arrays stay small
// and a group that fails is written again one member at a time in reasonable time.
const maxCreateGroup = 256

// createGroupTimeout bounds the writing of one group, whose members' own contexts no longer apply.
const createGroupTimeout = time.Minute

// createItem is one creation: the ids it names in errors, and the insert arguments of its rows, computed
// once when the item is made. A creation with an idempotency key has keyed set, and kargs the key row's
// arguments.
type createItem struct {
	sessionID, runID, key string
	keyed                 bool
	sargs, rargs, kargs   []any
}

// what names the creation in errors.
func (it createItem) what() string {
	if it.keyed {
		return fmt.Sprintf("idempotency key %q, session %q with run", it.key, it.sessionID)
	}
	return fmt.Sprintf("session %q with run", it.sessionID)
}

func (s *Store) newCreateGroup() (*batch.Queue[createItem], *sync.WaitGroup) {
	wg := &sync.WaitGroup{}
	return batch.New(maxCreateGroup, wg, func(items []createItem) []error {
		ctx, cancel := context.WithTimeout(context.Background(), createGroupTimeout)
		defer cancel()
		errs := make([]error, len(items))
		if len(items) > 1 {
			if s.createMany(ctx, items) == nil {
				return errs
			}
		}
		for i, it := range items { // alone, or again one by one: only the member at fault fails
			errs[i] = s.createOne(ctx, it)
		}
		return errs
	}), wg
}

// createInOneStatement creates a session with its run, and the idempotency key krow when not nil, in one
// statement on PostgreSQL: in the group of concurrent creations when there is one.
func (s *Store) createInOneStatement(ctx context.Context, se *orchestrator.Session, r *orchestrator.Run, krow *idempotencyKeyRow) error {
	srow, err := sessionToRow(se)
	if err != nil {
		return err
	}
	rrow, _, err := runToRow(r)
	if err != nil {
		return err
	}
	it := createItem{sessionID: se.ID, runID: r.ID}
	// A creation whose values cannot be stored fails alone, before it joins a group.
	if it.sargs, err = s.insertArgs(srow); err == nil {
		if it.rargs, err = s.insertArgs(rrow); err == nil && krow != nil {
			it.key, it.keyed = krow.ID, true
			it.kargs, err = s.insertArgs(krow)
		}
	}
	if err != nil {
		return wrap(err, it.what(), it.runID)
	}
	if s.creates != nil {
		return s.creates.Do(ctx, it)
	}
	return s.createOne(ctx, it)
}

// createOne writes one creation in one prepared statement: a single round trip where a transaction of
// two or three INSERTs takes four or five (BEGIN, the INSERTs, COMMIT). A taken key fails the whole
// statement (a concurrent create with the same key waits for the first to commit, then fails), so
// nothing is created.
func (s *Store) createOne(ctx context.Context, it createItem) error {
	insert := func() error {
		args := append(append(append([]any{}, it.kargs...), it.sargs...), it.rargs...)
		query := "WITH new_session AS (" + s.insertQuery(reflect.TypeFor[sessionRow](), 1) + ") " +
			s.insertQuery(reflect.TypeFor[runRow](), 1)
		if it.keyed {
			query = "WITH new_key AS (" + s.insertQuery(reflect.TypeFor[idempotencyKeyRow](), 1) + ")," +
				" new_session AS (" + s.insertQuery(reflect.TypeFor[sessionRow](), 1) + ") " +
				s.insertQuery(reflect.TypeFor[runRow](), 1)
		}
		stmt, err := s.prepared(ctx, query)
		if err != nil {
			return err
		}
		_, err = stmt.ExecContext(ctx, args...)
		return err
	}
	return wrap(insert(), it.what(), it.runID)
}

// createMany writes the creations in one statement over arrays, which commits on its own and is
// prepared once whatever the size of the group (see arrayInsert): two texts in all, with and without
// the keys' INSERT.
func (s *Store) createMany(ctx context.Context, items []createItem) error {
	var keys [][]any
	for _, it := range items {
		if it.keyed {
			keys = append(keys, it.kargs)
		}
	}
	with, args := "WITH ", []any(nil)
	if len(keys) > 0 {
		q, keyArgs, err := s.arrayInsert(reflect.TypeFor[idempotencyKeyRow](), len(keys),
			func(i int) ([]any, error) { return keys[i], nil })
		if err != nil {
			return err
		}
		with, args = "WITH new_keys AS ("+q+"), ", keyArgs
	}
	sessions, sessionArgs, err := s.arrayInsert(reflect.TypeFor[sessionRow](), len(items),
		func(i int) ([]any, error) { return items[i].sargs, nil })
	if err != nil {
		return err
	}
	runs, runArgs, err := s.arrayInsert(reflect.TypeFor[runRow](), len(items),
		func(i int) ([]any, error) { return items[i].rargs, nil })
	if err != nil {
		return err
	}
	args = append(append(args, sessionArgs...), runArgs...)
	_, err = s.execPrepared(ctx, with+"new_sessions AS ("+sessions+") "+runs, args...)
	return err
}
