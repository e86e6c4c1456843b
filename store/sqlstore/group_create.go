package sqlstore

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/agentorchestrator/orchestrator/internal/batch"
)

// On PostgreSQL each creation (CreateSessionWithRun, without demanded tags) is one statement that
// commits on its own: a round trip, a parse and plan, and a WAL flush per run. The creations of
// concurrent callers are therefore grouped: one that finds no group under way goes at once, alone, as
// before (a lone run waits for nothing); those that arrive while a group is being written go together in
// the next one, one statement for all of them (the sessions' INSERT in a WITH clause of the runs'). Each
// caller returns once its group has committed, so a creation is durable when CreateSessionWithRun
// returns. A group that fails is written again one member at a time, so that only the member at fault
// (a taken id) fails.

// maxCreateGroup bounds the members of one grouped creation, so that one statement's arrays stay small
// and a group that fails is written again one member at a time in reasonable time.
const maxCreateGroup = 256

// createGroupTimeout bounds the writing of one group, whose members' own contexts no longer apply.
const createGroupTimeout = time.Minute

// createItem is one creation: the ids it names in errors, and its rows.
type createItem struct {
	sessionID, runID string
	srow             *sessionRow
	rrow             *runRow
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

// createGrouped creates a session with its run through the group of concurrent creations.
func (s *Store) createGrouped(ctx context.Context, it createItem) error {
	// A member whose values cannot be stored fails alone, before it joins a group.
	if _, err := s.insertArgs(it.srow); err != nil {
		return wrap(err, fmt.Sprintf("session %q with run", it.sessionID), it.runID)
	}
	if _, err := s.insertArgs(it.rrow); err != nil {
		return wrap(err, fmt.Sprintf("session %q with run", it.sessionID), it.runID)
	}
	return s.creates.Do(ctx, it)
}

// createOne writes one creation in one prepared statement: a single round trip where a transaction of
// two INSERTs takes four (BEGIN, the INSERTs, COMMIT).
func (s *Store) createOne(ctx context.Context, it createItem) error {
	insert := func() error {
		sessionArgs, err := s.insertArgs(it.srow)
		if err != nil {
			return err
		}
		runArgs, err := s.insertArgs(it.rrow)
		if err != nil {
			return err
		}
		query := "WITH new_session AS (" + s.insertQuery(reflect.TypeFor[sessionRow](), 1) + ") " +
			s.insertQuery(reflect.TypeFor[runRow](), 1)
		stmt, err := s.prepared(ctx, query)
		if err != nil {
			return err
		}
		_, err = stmt.ExecContext(ctx, append(sessionArgs, runArgs...)...)
		return err
	}
	return wrap(insert(), fmt.Sprintf("session %q with run", it.sessionID), it.runID)
}

// createMany writes the creations in one statement over arrays, which commits on its own and is
// prepared once whatever the size of the group (see arrayInsert).
func (s *Store) createMany(ctx context.Context, items []createItem) error {
	sessions, sessionArgs, err := s.arrayInsert(reflect.TypeFor[sessionRow](), len(items),
		func(i int) reflect.Value { return reflect.ValueOf(items[i].srow).Elem() })
	if err != nil {
		return err
	}
	runs, runArgs, err := s.arrayInsert(reflect.TypeFor[runRow](), len(items),
		func(i int) reflect.Value { return reflect.ValueOf(items[i].rrow).Elem() })
	if err != nil {
		return err
	}
	_, err = s.execPrepared(ctx, "WITH new_sessions AS ("+sessions+") "+runs, append(sessionArgs, runArgs...)...)
	return err
}
