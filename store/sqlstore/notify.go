package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentorchestrator/orchestrator/store"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Notifier returns a [store.Notifier] that carries wake-ups between coordinator replicas sharing
// this PostgreSQL database, through LISTEN/NOTIFY:
//
//	cfg.Notifier = store.Notifier() // nil on SQLite
//
// On SQLite it returns nil (an untyped nil interface, so the line above leaves the coordinator without a
// Notifier): a SQLite database belongs to one process, whose coordinator wakes its own waiters in memory.
//
// Each call returns a new Notifier; give each coordinator its own. Notify never blocks: keys are queued,
// deduplicated while they wait, packed several to a NOTIFY payload (under PostgreSQL's 8000-byte limit)
// and sent by a goroutine that runs while the queue is not empty. A key must not be empty nor contain a
// newline or a NUL byte; such keys, and keys longer than about 7 KB, are dropped. Wake-ups are hints: one
// that cannot be sent (the database is down) is dropped after a few attempts, and its waiter finds the
// change at its next timeout.
//
// Listen opens a dedicated connection (pgdriver's Listener), listens on the channel
// "orchestrator_wake" — suffixed with the store's schema when current_schema() is not public, so that
// stores in different schemas of one database (isolated tests, several deployments) do not hear each
// other — and delivers the keys other replicas publish; its own are skipped (the coordinator already woke
// its waiters in memory). It returns when ctx ends or when the connection is lost (a read fails, or a
// ping through the channel goes unanswered for pingTimeout); the coordinator then calls it again.
// Notifications published while no connection listened are lost, so once LISTEN is in effect — at every
// start — Listen delivers the empty key "": a coordinator should take it to mean "anything may have
// changed" and wake every waiter.
func (s *Store) Notifier() store.Notifier {
	if !s.pg {
		return nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &pgNotifier{db: s.dbW, log: s.log, origin: hex.EncodeToString(b[:]), queued: map[string]struct{}{}}
}

// Tuning of the notifier. Variables so that tests can shorten them.
var (
	// notifyMaxPayload bounds a NOTIFY payload (PostgreSQL's limit is 8000 bytes, exclusive).
	notifyMaxPayload = 7900
	// notifyMaxQueued bounds the keys waiting to be sent; more are dropped (they are hints).
	notifyMaxQueued = 100_000
	// notifyAttempts is how often a NOTIFY is tried before its keys are dropped.
	notifyAttempts = 3
	// listenPingIdle: a listening connection that heard nothing for this long pings itself.
	listenPingIdle = 10 * time.Second
	// listenPingResend: an unanswered ping is sent again this often (the first one may precede LISTEN).
	listenPingResend = 250 * time.Millisecond
	// listenPingTimeout: a ping unanswered this long means the connection is lost.
	listenPingTimeout = 5 * time.Second
)

// notifyChannelBase is the NOTIFY channel of stores in the public schema.
const notifyChannelBase = "orchestrator_wake"

type pgNotifier struct {
	db  *bun.DB
	log *slog.Logger
	// origin prefixes every payload this notifier sends, so that its Listen skips them.
	origin string

	mu      sync.Mutex
	channel string // resolved on first use
	queue   []string
	queued  map[string]struct{}
	sending bool
	dropped int
}

// Notify queues key for the other replicas and returns at once.
func (n *pgNotifier) Notify(key string) {
	if key == "" || strings.ContainsAny(key, "\n\x00") || len(key)+len(n.origin)+1 > notifyMaxPayload {
		n.log.Debug("sqlstore: notifier: key dropped: empty, too long, or holds a newline or NUL", "key", key)
		return
	}
	n.mu.Lock()
	if _, dup := n.queued[key]; dup {
		n.mu.Unlock()
		return
	}
	if len(n.queue) >= notifyMaxQueued {
		n.dropped++
		n.mu.Unlock()
		return
	}
	n.queued[key] = struct{}{}
	n.queue = append(n.queue, key)
	start := !n.sending
	n.sending = true
	n.mu.Unlock()
	if start {
		go n.send()
	}
}

// send publishes the queue until it is empty. Keys queued while a NOTIFY is in flight go out together in
// the next one: the busier the store, the more keys each NOTIFY carries.
func (n *pgNotifier) send() {
	for {
		n.mu.Lock()
		batch, dropped := n.queue, n.dropped
		n.queue, n.dropped = nil, 0
		clear(n.queued)
		if len(batch) == 0 {
			n.sending = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		if dropped > 0 {
			n.log.Warn("sqlstore: notifier: queue full; wake-ups dropped", "keys", dropped)
		}
		for _, p := range packPayloads(n.origin, batch, notifyMaxPayload) {
			n.publish(p)
		}
	}
}

// packPayloads joins keys into payloads "origin\nkey\nkey…" of at most max bytes each.
func packPayloads(origin string, keys []string, max int) []string {
	var out []string
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 && b.Len()+1+len(k) > max {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(origin)
		}
		b.WriteByte('\n')
		b.WriteString(k)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// publish sends one payload, trying a few times before giving it up.
func (n *pgNotifier) publish(payload string) {
	var err error
	for attempt := range notifyAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*attempt) * 50 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = n.notify(ctx, payload)
		cancel()
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "database is closed") {
			return // the store was closed: nobody is left to wake
		}
	}
	n.log.Warn("sqlstore: notifier: NOTIFY failed; wake-ups dropped", "err", err)
}

func (n *pgNotifier) notify(ctx context.Context, payload string) error {
	channel, err := n.channelName(ctx)
	if err != nil {
		return err
	}
	_, err = n.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", channel, payload)
	return err
}

// channelName resolves the store's NOTIFY channel from its current schema, once.
func (n *pgNotifier) channelName(ctx context.Context) (string, error) {
	n.mu.Lock()
	c := n.channel
	n.mu.Unlock()
	if c != "" {
		return c, nil
	}
	var schema sql.NullString
	if err := n.db.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		return "", fmt.Errorf("sqlstore: notifier: current schema: %w", err)
	}
	c = channelFor(schema.String)
	n.mu.Lock()
	n.channel = c
	n.mu.Unlock()
	return c, nil
}

// channelFor names the channel of a schema: the base for public, the base and the schema for a schema
// whose name is a plain lower-case identifier that fits, else the base and a hash of the name.
// (pgdriver quotes the channel in LISTEN with Go's quoting, which is PostgreSQL's for such names.)
func channelFor(schema string) string {
	if schema == "" || schema == "public" {
		return notifyChannelBase
	}
	plain := true
	for _, r := range schema {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			plain = false
			break
		}
	}
	if name := notifyChannelBase + "_" + schema; plain && len(name) <= 63 {
		return name
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("%s_%016x", notifyChannelBase, h.Sum64())
}

var errPingTimeout = errors.New("sqlstore: notifier: the listening connection stopped answering pings")

// Listen delivers the keys other replicas publish until ctx ends or the connection is lost.
func (n *pgNotifier) Listen(ctx context.Context, deliver func(key string)) error {
	channel, err := n.channelName(ctx)
	if err != nil {
		return err
	}
	ln := pgdriver.NewListener(n.db)
	var once sync.Once
	closeLn := func() { once.Do(func() { _ = ln.Close() }) }
	stopAfter := context.AfterFunc(ctx, closeLn) // Receive does not watch ctx: closing unblocks it
	defer stopAfter()
	defer closeLn()
	if err := ln.Listen(ctx, channel); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sqlstore: notifier: listen: %w", err)
	}

	var lastHeard atomic.Int64 // unix nanoseconds of the last notification of any origin
	done := make(chan struct{})
	defer close(done)
	failed := make(chan error, 1)
	go n.watch(ctx, done, &lastHeard, func(err error) {
		failed <- err
		closeLn()
	})

	synced := false
	for {
		ch, payload, err := ln.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			select {
			case werr := <-failed:
				return werr
			default:
			}
			return fmt.Errorf("sqlstore: notifier: connection lost: %w", err)
		}
		lastHeard.Store(time.Now().UnixNano())
		if ch != channel {
			continue
		}
		if !synced {
			// LISTEN is in effect: wake everything once, for what was published before it was.
			synced = true
			deliver("")
		}
		origin, keys, _ := strings.Cut(payload, "\n")
		if origin == n.origin {
			continue
		}
		for keys != "" {
			var k string
			k, keys, _ = strings.Cut(keys, "\n")
			if k != "" {
				deliver(k)
			}
		}
	}
}

// watch keeps the listening connection honest: it pings through the channel at once (the answer shows
// LISTEN is in effect) and whenever nothing was heard for listenPingIdle, and reports failure when a ping
// stays unanswered for listenPingTimeout. Any notification counts as an answer.
func (n *pgNotifier) watch(ctx context.Context, done <-chan struct{}, lastHeard *atomic.Int64, fail func(error)) {
	ping := func() {
		pctx, cancel := context.WithTimeout(ctx, listenPingResend)
		defer cancel()
		_ = n.notify(pctx, n.origin) // a payload of the origin alone carries no key
	}
	outstanding := time.Now() // zero: no ping waits for an answer
	lastSent := outstanding
	ping()
	t := time.NewTicker(listenPingResend / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		now := time.Now()
		heard := time.Unix(0, lastHeard.Load())
		switch {
		case !outstanding.IsZero() && heard.After(outstanding):
			outstanding = time.Time{}
		case !outstanding.IsZero() && now.Sub(outstanding) > listenPingTimeout:
			fail(errPingTimeout)
			return
		case !outstanding.IsZero() && now.Sub(lastSent) >= listenPingResend:
			lastSent = now
			ping()
		case outstanding.IsZero() && now.Sub(heard) >= listenPingIdle:
			outstanding, lastSent = now, now
			ping()
		}
	}
}
