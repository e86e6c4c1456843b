package coordinator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Submission control in StartRun: idempotency keys, priorities, delayed runs and concurrency keys.

// maxDelay bounds how far ahead a run may be delayed.
const maxDelay = 366 * 24 * time.Hour

// checkSubmission checks the submission fields of a request and returns when its run becomes due (the
// zero time: at once).
func (c *Coordinator) checkSubmission(p *orchestrator.StartRunParams) (time.Time, error) {
	bad := func(code, format string, args ...any) (time.Time, error) {
		return time.Time{}, orchestrator.Errorf(orchestrator.ErrInvalid, code, format, args...)
	}
	if p.Priority < 0 || p.Priority > 4 {
		return bad("invalid_priority", "priority must be 1 (the highest) to 4, not %d", p.Priority)
	}
	if !validKey(p.IdempotencyKey) {
		return bad("invalid_idempotency_key", "idempotency_key must be 1 to 255 printable characters")
	}
	if !validKey(p.ConcurrencyKey) {
		return bad("invalid_concurrency_key", "concurrency_key must be 1 to 255 printable characters")
	}
	if p.RunAt != nil && p.Delay != 0 {
		return bad("invalid_run_at", "give run_at or delay, not both")
	}
	if p.Delay < 0 || p.Delay > maxDelay {
		return bad("invalid_delay", "delay must be between 0 and %s", maxDelay)
	}
	now := c.now()
	switch {
	case p.Delay > 0:
		return now.Add(p.Delay), nil
	case p.RunAt != nil:
		if p.RunAt.After(now.Add(maxDelay)) {
			return bad("invalid_run_at", "run_at must be within %s from now", maxDelay)
		}
		if p.RunAt.After(now) {
			return p.RunAt.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, nil // a run_at in the past is due now
}

// validKey reports whether k is empty or 1 to 255 bytes of printable UTF-8.
func validKey(k string) bool {
	if len(k) > 255 || !utf8.ValidString(k) {
		return false
	}
	return !strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// submit applies the request's submission fields to its run: priority, due time, concurrency key and the
// agent's limits.
func submit(run *orchestrator.Run, p *orchestrator.StartRunParams, due time.Time, b *orchestrator.Blueprint) {
	run.Priority = p.Priority
	if p.Priority == 1 {
		run.Priority = 0 // the default
	}
	if !due.IsZero() {
		run.RunAt = &due
	}
	run.ConcurrencyKey = p.ConcurrencyKey
	if b != nil && b.RateLimit != nil {
		run.RateLimit, run.RatePeriod, run.RateBucket = b.RateLimit.Limit, b.RateLimit.Period(), b.RateLimit.Bucket(run.Parameters)
	}
	if b != nil {
		run.AgentLimit = b.MaxConcurrent
		if p.ConcurrencyKey != "" {
			run.KeyLimit = max(b.MaxConcurrentPerKey, 1)
		}
	} else if p.ConcurrencyKey != "" {
		run.KeyLimit = 1
	}
}

// requestHash is the digest that tells a retry of a request from a different request under the same
// idempotency key: the request's fields, JSON documents compacted, times in UTC.
func requestHash(p orchestrator.StartRunParams) string {
	p.IdempotencyKey, p.Wait = "", 0
	for _, raw := range []*json.RawMessage{&p.Parameters, &p.Metadata, &p.OutputSchema} {
		var b bytes.Buffer
		if json.Compact(&b, *raw) == nil {
			*raw = b.Bytes()
		}
	}
	if p.RunAt != nil {
		t := p.RunAt.UTC()
		p.RunAt = &t
	}
	b, _ := json.Marshal(struct {
		P     orchestrator.StartRunParams
		Delay time.Duration
	}{p, p.Delay})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// errKeyTaken is a create's idempotency key recorded by a concurrent create that committed first. It is
// not ErrConflict, so that no caller mistakes it for another conflict (a busy session).
var errKeyTaken = errors.New("idempotency key taken")

// commitRun runs create, which writes the run through tx, recording key with the run's ids in the same
// transaction when key is set.
func (c *Coordinator) commitRun(ctx context.Context, key *store.IdempotencyKey, run *orchestrator.Run, create func(ctx context.Context, tx store.Store) error) error {
	if c.metrics != nil {
		op := opStartRun
		if run.Type == orchestrator.RunTypeResume {
			op = opResume
		}
		defer c.timeStore(op, time.Now())
	}
	if key == nil {
		return create(ctx, c.store)
	}
	key.RunID, key.SessionID, key.CreatedAt = run.ID, run.SessionID, run.CreatedAt
	return c.store.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateIdempotencyKey(ctx, key); err != nil {
			if errors.Is(err, orchestrator.ErrConflict) {
				return errKeyTaken
			}
			return err
		}
		return create(ctx, tx)
	})
}

// replay answers a request whose idempotency key is recorded: the first answer (the same run and
// session, the session's status now) when the request is the same, idempotency_key_reused when it is
// not. It returns nil, nil when the key is not recorded.
func (c *Coordinator) replay(ctx context.Context, p orchestrator.StartRunParams, key *store.IdempotencyKey) (*orchestrator.StartRunResult, error) {
	k, err := c.store.GetIdempotencyKey(ctx, key.Key)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if k.RequestHash != key.RequestHash {
		return nil, orchestrator.Errorf(orchestrator.ErrConflict, "idempotency_key_reused",
			"idempotency key %q was used for a different request; use a new key for a new request", key.Key)
	}
	res := &orchestrator.StartRunResult{RunID: k.RunID, SessionID: k.SessionID, Status: orchestrator.SessionPending, Replayed: true}
	return c.answer(ctx, p, res)
}

// pruneIdempotencyKeys deletes the keys older than IdempotencyRetention (retention sweep).
func (c *Coordinator) pruneIdempotencyKeys(ctx context.Context) error {
	before := c.now().Add(-c.cfg.IdempotencyRetention)
	for ctx.Err() == nil {
		n, err := c.store.DeleteIdempotencyKeys(ctx, before, retentionBatch)
		if err != nil || n < retentionBatch {
			return err
		}
	}
	return nil
}

// dueTimer wakes the runners' parked polls when the earliest delayed run this coordinator knows of
// becomes due: a timer, not a poll of the store. It learns of delayed runs when they are created here,
// from other replicas through the Notifier (dueKey), and from the store when it starts and after each
// firing.
type dueTimer struct {
	mu    sync.Mutex
	at    time.Time
	timer *time.Timer
	done  bool
}

// dueKeyPrefix starts the Notifier key that tells the other replicas a delayed run was created; the rest
// is its due time (RFC 3339 with nanoseconds).
const dueKeyPrefix = "d:"

// armDue makes the timer fire at at unless it fires earlier already. remote says whether other replicas
// should arm theirs too.
func (c *Coordinator) armDue(at time.Time, remote bool) {
	if remote && c.cfg.Notifier != nil {
		c.cfg.Notifier.Notify(dueKeyPrefix + at.UTC().Format(time.RFC3339Nano))
	}
	d := &c.due
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done || (!d.at.IsZero() && !at.Before(d.at)) {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.at = at
	d.timer = time.AfterFunc(max(at.Sub(c.now()), 0), c.delayedRunsDue)
}

// delayedRunsDue wakes the parked polls for runs and arms the timer for the next delayed run.
func (c *Coordinator) delayedRunsDue() {
	d := &c.due
	d.mu.Lock()
	if d.done {
		d.mu.Unlock()
		return
	}
	d.at, d.timer = time.Time{}, nil
	d.mu.Unlock()
	c.wakeups.Notify(anyRunnerKey) // every replica's timer fires for itself
	c.armNextDue(context.Background())
}

// armNextDue arms the timer for the earliest delayed run in the store.
func (c *Coordinator) armNextDue(ctx context.Context) {
	next, err := c.store.NextRunAt(ctx, c.now())
	if err != nil {
		c.log.Warn("next delayed run", "err", err)
		return
	}
	if !next.IsZero() {
		c.armDue(next, false)
	}
}

// deliverDue arms the timer for a delayed run another replica created.
func (c *Coordinator) deliverDue(key string) bool {
	at, ok := strings.CutPrefix(key, dueKeyPrefix)
	if !ok {
		return false
	}
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		c.armDue(t, false)
	}
	return true
}

// stopDue stops the timer (Stop) or lets it run again (Start).
func (c *Coordinator) stopDue(stop bool) {
	d := &c.due
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done = stop
	if stop && d.timer != nil {
		d.timer.Stop()
		d.at, d.timer = time.Time{}, nil
	}
}
