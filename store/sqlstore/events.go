package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// AppendEvents appends the events to the session in one transaction: it raises the session's
// last_event_seq by len(events) in one atomic UPDATE (which also serialises concurrent appenders to the
// session: on PostgreSQL the row lock is held to commit, on SQLite the write lock), numbers the events
// from the old value, and inserts them. It writes SessionID, Seq and (when zero) Time back into events.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, events []*orchestrator.Event) error {
	usage, counted, err := store.UsageOfEvents(events)
	if err != nil {
		return fmt.Errorf("%w: %v", orchestrator.ErrInvalid, err)
	}
	return s.tx(ctx, func(ctx context.Context, tx *Store) error {
		var last int64
		var err error
		if counted {
			// The same one statement, raising the usage totals beside the sequence number: a usage event
			// costs no more writes than any other.
			err = tx.queryRow(ctx, appendUsageSQL, append([]any{int64(len(events))}, usageArgs(usage, sessionID)...), &last)
		} else {
			err = tx.queryRow(ctx, appendSeqSQL, []any{int64(len(events)), sessionID}, &last)
		}
		if err != nil {
			return wrap(err, "session", sessionID)
		}
		return tx.insertEvents(ctx, sessionID, last, events)
	})
}

// insertEvents inserts events numbered up to last, the session's sequence number once they are counted,
// and writes their session, sequence number and time back into them.
func (s *Store) insertEvents(ctx context.Context, sessionID string, last int64, events []*orchestrator.Event) error {
	if len(events) == 0 {
		return nil
	}
	first := last - int64(len(events)) + 1
	rows := make([]eventRow, len(events))
	for i, e := range events {
		rows[i] = *eventRowOf(sessionID, first+int64(i), e)
	}
	if s.pg {
		// One multi-row INSERT: one round trip (prepared per number of rows, up to a few).
		if err := s.insertRows(ctx, &rows); err != nil {
			return wrap(err, "events of session", sessionID)
		}
	} else {
		// A prepared single-row INSERT per event: no parsing, and no round trips to save.
		for i := range rows {
			if err := s.insert(ctx, &rows[i]); err != nil {
				return wrap(err, "events of session", sessionID)
			}
		}
	}
	for i, e := range events {
		e.SessionID, e.Seq, e.Time = sessionID, rows[i].Seq, rows[i].Time
	}
	return nil
}

// eventRowOf is the row of event e, numbered seq in session sessionID; an event without a time is
// stamped now.
func eventRowOf(sessionID string, seq int64, e *orchestrator.Event) *eventRow {
	t := utc(e.Time)
	if t.IsZero() {
		t = utc(time.Now())
	}
	return &eventRow{SessionID: sessionID, Seq: seq, Type: e.Type, Time: t, Data: rawOrNil(e.Data)}
}

// appendSeqSQL hands out a batch of sequence numbers. The UPDATE is atomic and, on PostgreSQL, holds the
// session's row lock until the transaction ends, so concurrent batches cannot interleave.
const appendSeqSQL = "UPDATE sessions SET last_event_seq = last_event_seq + ? WHERE id = ? RETURNING last_event_seq"

// appendUsageSQL is appendSeqSQL that also adds usage events' deltas to the session's totals. Each total is
// raised in place (x = x + ?), never read and written back, so concurrent appenders cannot lose an update.
var appendUsageSQL = "UPDATE sessions SET last_event_seq = last_event_seq + ?, " + strings.Join(usageSets, ", ") +
	" WHERE id = ? RETURNING last_event_seq"

// usageSets raise the usage totals by the five arguments usageArgs lists, one column each (a grouped
// update types each clause's argument by the column it names first).
var usageSets = []string{
	"usage_input_tokens = usage_input_tokens + ?",
	"usage_output_tokens = usage_output_tokens + ?",
	"usage_cache_read_input_tokens = usage_cache_read_input_tokens + ?",
	"usage_cache_creation_input_tokens = usage_cache_creation_input_tokens + ?",
	"usage_cost_usd = usage_cost_usd + ?",
}

// usageArgs are the arguments of usageSets for u, followed by more.
func usageArgs(u orchestrator.Usage, more ...any) []any {
	return append([]any{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.CostUSD}, more...)
}

// ListEvents returns up to limit events (all, when limit ≤ 0) with Seq > afterSeq, in Seq order.
func (s *Store) ListEvents(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]*orchestrator.Event, error) {
	var rows []eventRow
	q := s.r.NewSelect().Model(&rows).Where("session_id = ?", sessionID).Where("seq > ?", afterSeq).OrderExpr("seq")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, wrap(err, "events of session", sessionID)
	}
	out := make([]*orchestrator.Event, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// LastEvent returns the newest event of one of the types (any type, when types is empty) with
// Seq > afterSeq.
func (s *Store) LastEvent(ctx context.Context, sessionID string, types []string, afterSeq int64) (*orchestrator.Event, error) {
	var row eventRow
	q := s.r.NewSelect().Model(&row).Where("session_id = ?", sessionID).Where("seq > ?", afterSeq).
		OrderExpr("seq DESC").Limit(1)
	if len(types) > 0 {
		q = q.Where("type IN (?)", bun.List(types))
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("event of session", sessionID)
		}
		return nil, wrap(err, "events of session", sessionID)
	}
	return row.domain(), nil
}
