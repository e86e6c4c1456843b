package cli

import (
	"context"
	"errors"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// follower reads a session's events as they are appended, from a position on, until the session has
// ended and its last event has been read.
//
// It uses the paged, long-polled events API (ListEvents with a wait) rather than the event stream: every
// request says where to continue (after=), so a dropped connection, a restarted coordinator or a switch
// to another coordinator of the same store loses and repeats nothing, and the client's retries, failover
// and authentication apply as to any other call.
type follower struct {
	coord     orchestrator.Coordinator
	sessionID string
	// after is the sequence number of the last event handled.
	after int64
	// onEvent is called with each event, in order, once.
	onEvent func(*orchestrator.Event)
	// onSession is called with the session each time it is read (its status, for a progress display).
	onSession func(*orchestrator.Session)
	// onTrouble is called when a request failed and will be retried (err), and with nil once one succeeds
	// again.
	onTrouble func(err error)
	// wait is how long one request waits for new events. Default 25s.
	wait time.Duration
	// giveUp is how long requests may keep failing before follow returns the error. Default 2 minutes.
	giveUp time.Duration
	// pause waits between retries; tests replace it. Default: sleeps d unless ctx ends.
	pause func(ctx context.Context, d time.Duration) error
}

// pageSize is how many events one request asks for.
const pageSize = 500

// follow returns the session once it has ended and every event up to its last was handled. It reads
// the session before its events each time: the coordinator stores a session's end with its last events
// (result, run_ended) in one transaction, so a session seen ended has nothing more to come after its
// LastEventSeq.
func (f *follower) follow(ctx context.Context) (*orchestrator.Session, error) {
	if f.wait <= 0 {
		f.wait = 25 * time.Second
	}
	if f.giveUp <= 0 {
		f.giveUp = 2 * time.Minute
	}
	if f.pause == nil {
		f.pause = sleepCtx
	}
	var (
		failingSince time.Time
		backoff      time.Duration
	)
	// retry decides what to do with a failed request: wait and go on, or give up.
	retry := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transient(err) {
			return err
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		} else if time.Since(failingSince) > f.giveUp {
			return err
		}
		if f.onTrouble != nil {
			f.onTrouble(err)
		}
		backoff = min(max(2*backoff, 250*time.Millisecond), 5*time.Second)
		return f.pause(ctx, backoff)
	}
	ok := func() {
		if !failingSince.IsZero() && f.onTrouble != nil {
			f.onTrouble(nil)
		}
		failingSince, backoff = time.Time{}, 0
	}
	for {
		s, err := f.coord.GetSession(ctx, f.sessionID)
		if err != nil {
			if err := retry(err); err != nil {
				return nil, err
			}
			continue
		}
		ok()
		if f.onSession != nil {
			f.onSession(s)
		}
		ended := s.Status.Ended()
		if ended && f.after >= s.LastEventSeq {
			return s, nil
		}
		wait := f.wait
		if ended {
			wait = 0 // the rest is stored already
		}
		evs, err := f.coord.ListEvents(ctx, f.sessionID, f.after, pageSize, wait)
		if err != nil {
			if err := retry(err); err != nil {
				return nil, err
			}
			continue
		}
		ok()
		if ended && len(evs) == 0 {
			return s, nil // the count and the events disagree: nothing more to read after all
		}
		for _, ev := range evs {
			if ev.Seq <= f.after {
				continue
			}
			f.after = ev.Seq
			if f.onEvent != nil {
				f.onEvent(ev)
			}
		}
	}
}

// transient reports whether a failed request may succeed if repeated: no answer, a coordinator fault
// (5xx), or too many requests.
func transient(err error) bool {
	if errors.Is(err, httpapi.ErrServer) {
		return true
	}
	return orchestrator.ErrorCode(err) == "too_many_long_polls"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
