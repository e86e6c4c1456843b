package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a coordinator in a minimal container has no zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
	"github.com/agentorchestrator/orchestrator/store"
)

// Schedules (recurring runs). Every coordinator replica runs the firing loop; a tick is fired by a store
// update guarded by the schedule's revision ([store.Store].UpdateSchedule), made in the same
// transaction that creates the firing's session and run, so exactly one replica fires each tick and a
// crash loses or doubles none: either the run exists and the schedule has moved on, or neither.
//
// The cron dialect is robfig/cron/v3's: five standard fields, or six with a leading seconds field, or a
// descriptor (@hourly, @daily, @every 2s). The timezone field, not a CRON_TZ= prefix, names the zone.

// cronParser reads five fields, or six when the first is seconds, and descriptors.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxCronLen bounds a cron expression and a timezone name.
const maxCronLen = 256

// schedulesKey wakes the firing loops (here and, through the Notifier, on other replicas) when a
// schedule was created, changed or deleted.
const schedulesKey = "schedules"

// scheduleIdle bounds the firing loop's sleep, so that a change made through a replica whose wake-up
// was lost (or a store written directly) is seen within it.
const scheduleIdle = time.Minute

// maxScheduleWrites bounds how often UpdateSchedule reads the schedule again after losing its write.
const maxScheduleWrites = 8

// scheduleBatch is how many due schedules one pass of the firing loop reads.
const scheduleBatch = 100

// DefaultMaxSchedules is Config.MaxSchedules's default.
const DefaultMaxSchedules = 1000

// minEvery is the shortest interval an "@every" schedule may have. robfig/cron rounds a shorter one up
// to a second and a fraction down to whole seconds, so "@every 1ns" would fire every second and
// "@every 1500ms" every second too: both are refused rather than silently changed.
const minEvery = time.Second

// maxTreeDepth bounds the walk from a session up to its tree's root (ScheduleFilter.TreeOf).
const maxTreeDepth = 256

// checkEvery refuses an "@every" descriptor whose interval is not a whole number of seconds, at least
// minEvery: zero, negative and sub-second intervals are 400 invalid_cron.
func checkEvery(expr string) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "@every")
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron", "cron %q: @every takes a duration such as 30s or 5m: %v", expr, err)
	}
	if d < minEvery || d%time.Second != 0 {
		return orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron",
			"cron %q: @every takes a positive whole number of seconds, at least %s", expr, minEvery)
	}
	return nil
}

// parseCron parses expr, read in the zone tz (UTC when empty), and checks that it ever fires.
func parseCron(expr, tz string, now time.Time) (cron.Schedule, error) {
	if len(expr) > maxCronLen || strings.TrimSpace(expr) == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron", "cron must be a cron expression of at most %d bytes", maxCronLen)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron", "cron: name the zone in the timezone field, not with a TZ= prefix")
	}
	if err := checkEvery(expr); err != nil {
		return nil, err
	}
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron", "cron %q: %v", expr, err)
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	if sched.Next(now).IsZero() {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_cron", "cron %q never fires", expr)
	}
	return sched, nil
}

// loadZone loads an IANA zone. "Local" is refused: replicas on different hosts would read it differently.
func loadZone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if len(tz) > maxCronLen || tz == "Local" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_timezone", "timezone %q is not an IANA zone name", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_timezone", "timezone %q is not an IANA zone name", tz)
	}
	return loc, nil
}

// nextTick is the tick after due, or, when that one has passed by now too (ticks were missed), the first
// tick after now: missed ticks collapse into the one firing being made.
func nextTick(sched cron.Schedule, due, now time.Time) time.Time {
	next := sched.Next(due)
	if !next.After(now) {
		next = sched.Next(now)
	}
	return next.UTC().Truncate(time.Microsecond)
}

// checkOverlap defaults and checks an overlap policy.
func checkOverlap(o orchestrator.OverlapPolicy) (orchestrator.OverlapPolicy, error) {
	switch o {
	case "":
		return orchestrator.OverlapSkip, nil
	case orchestrator.OverlapSkip, orchestrator.OverlapAllow, orchestrator.OverlapQueue:
		return o, nil
	}
	return "", orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_overlap", "overlap must be skip, allow or queue, not %q", o)
}

// checkScheduleParameters checks parameters against the agent's schema now, so that a schedule that
// could never start a run is refused when it is made rather than at its first tick.
func (c *Coordinator) checkScheduleParameters(ctx context.Context, agentName string, params json.RawMessage) (json.RawMessage, error) {
	params, err := c.promptSugar(orchestrator.StartRunParams{Parameters: params})
	if err != nil {
		return nil, err
	}
	agent, err := lookup(c.store.GetAgent(ctx, agentName)).as("agent", agentName)
	if err != nil {
		return nil, err
	}
	if _, err := c.validateParameters(agent.Name, agent.Blueprint.EffectiveParametersSchema(), params); err != nil {
		return nil, err
	}
	return params, nil
}

// CreateSchedule implements [orchestrator.Scheduler]: it checks the agent (it must exist), the parameters
// (against the agent's schema), the cron expression, the timezone and the overlap policy, and stores a
// schedule whose first tick is the next one after now. Past Config.MaxSchedules schedules it is 409
// too_many_schedules. The count and the insert share a transaction; on PostgreSQL, schedules created at
// the same moment through several replicas may each see room for themselves, so the cap may be passed by
// at most one per concurrent creation.
func (c *Coordinator) CreateSchedule(ctx context.Context, p orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	if p.AgentName == "" {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "agent_name is required")
	}
	now := c.now()
	sched, err := parseCron(p.Cron, p.Timezone, now)
	if err != nil {
		return nil, err
	}
	overlap, err := checkOverlap(p.Overlap)
	if err != nil {
		return nil, err
	}
	params, err := c.checkScheduleParameters(ctx, p.AgentName, p.Parameters)
	if err != nil {
		return nil, err
	}
	tz := p.Timezone
	if tz == "" {
		tz = "UTC"
	}
	s := &orchestrator.Schedule{
		ID:         ids.New(ids.Schedule),
		AgentName:  p.AgentName,
		Parameters: params,
		Cron:       p.Cron,
		Timezone:   tz,
		Overlap:    overlap,
		Paused:     p.Paused != nil && *p.Paused,
		NextFireAt: nextTick(sched, now, now),
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	err = c.inTx(ctx, opSchedule, func(ctx context.Context, tx store.Store) error {
		if c.cfg.MaxSchedules > 0 {
			n, err := tx.CountSchedules(ctx)
			if err != nil {
				return err
			}
			if n >= c.cfg.MaxSchedules {
				return orchestrator.Errorf(orchestrator.ErrConflict, "too_many_schedules",
					"there are %d schedules, the most this coordinator keeps (MaxSchedules, -max-schedules): delete one first", n).
					With("limit", c.cfg.MaxSchedules)
			}
		}
		return tx.CreateSchedule(ctx, s)
	})
	if err != nil {
		return nil, err
	}
	c.wake(schedulesKey)
	return s, nil
}

// GetSchedule implements [orchestrator.Scheduler].
func (c *Coordinator) GetSchedule(ctx context.Context, id string) (*orchestrator.Schedule, error) {
	return lookup(c.store.GetSchedule(ctx, id)).as("schedule", id)
}

// ListSchedules implements [orchestrator.Scheduler].
func (c *Coordinator) ListSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	if f.TreeOf != "" {
		return c.treeSchedules(ctx, f)
	}
	list, err := c.store.ListSchedules(ctx, f)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, notFound("schedule", f.AfterID)
	}
	return list, err
}

// treeScheduleID returns the id of the schedule that started the tree session id belongs to: the one its
// root session's metadata names ({"schedule_id": …}, as a firing sets it), or "" when no schedule did.
// Only the root counts: a child's metadata is whatever its starter (an agent, perhaps) gave it.
func (c *Coordinator) treeScheduleID(ctx context.Context, id string) (string, error) {
	cur := id
	for range maxTreeDepth {
		sess, err := c.store.GetSession(ctx, cur)
		if errors.Is(err, orchestrator.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if sess.ParentSessionID == "" {
			var md struct {
				ScheduleID string `json:"schedule_id"`
			}
			if len(sess.Metadata) == 0 || json.Unmarshal(sess.Metadata, &md) != nil {
				return "", nil
			}
			return md.ScheduleID, nil
		}
		cur = sess.ParentSessionID
	}
	return "", nil // deeper than any tree a coordinator makes: treat it as started by no schedule
}

// treeSchedules lists the one schedule f.TreeOf's tree was started by, if the rest of f selects it.
func (c *Coordinator) treeSchedules(ctx context.Context, f orchestrator.ScheduleFilter) ([]*orchestrator.Schedule, error) {
	id, err := c.treeScheduleID(ctx, f.TreeOf)
	if err != nil || id == "" {
		return nil, err
	}
	s, err := c.store.GetSchedule(ctx, id)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return nil, nil // deleted since it fired
	}
	if err != nil {
		return nil, err
	}
	// One schedule at most makes one page: any cursor is past it.
	if (f.AgentName != "" && s.AgentName != f.AgentName) || f.AfterID != "" || (f.Active && s.Paused) ||
		(!f.DueBy.IsZero() && s.NextFireAt.After(f.DueBy) && !s.Queued) {
		return nil, nil
	}
	return []*orchestrator.Schedule{s}, nil
}

// UpdateSchedule implements [orchestrator.Scheduler]. A new cron expression or timezone, and a resume,
// start again from the next tick after now (a resume does not make up the ticks missed while paused); a
// pause drops a queued tick. The write is guarded like a firing: one that lost to a firing is made again
// on the schedule as the firing left it.
func (c *Coordinator) UpdateSchedule(ctx context.Context, id string, p orchestrator.ScheduleParams) (*orchestrator.Schedule, error) {
	for attempt := 1; ; attempt++ {
		s, err := c.GetSchedule(ctx, id)
		if err != nil {
			return nil, err
		}
		if p.AgentName != "" && p.AgentName != s.AgentName {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "agent_name cannot change; create another schedule")
		}
		now := c.now()
		restart := false
		if p.Cron != "" {
			s.Cron, restart = p.Cron, true
		}
		if p.Timezone != "" {
			s.Timezone, restart = p.Timezone, true
		}
		sched, err := parseCron(s.Cron, s.Timezone, now)
		if err != nil {
			return nil, err
		}
		if p.Overlap != "" {
			if s.Overlap, err = checkOverlap(p.Overlap); err != nil {
				return nil, err
			}
		}
		if len(p.Parameters) > 0 {
			if s.Parameters, err = c.checkScheduleParameters(ctx, s.AgentName, p.Parameters); err != nil {
				return nil, err
			}
		}
		if p.Paused != nil && *p.Paused != s.Paused {
			s.Paused = *p.Paused
			s.Queued = false
			restart = restart || !s.Paused
		}
		if restart {
			s.NextFireAt = nextTick(sched, now, now)
		}
		s.UpdatedAt = now
		err = c.store.UpdateSchedule(ctx, s)
		if errors.Is(err, orchestrator.ErrConflict) && attempt < maxScheduleWrites {
			continue // a firing (or another update) wrote it since it was read
		}
		if err != nil {
			return nil, lookup(s, err).errAs("schedule", id)
		}
		c.wake(schedulesKey)
		return s, nil
	}
}

// DeleteSchedule implements [orchestrator.Scheduler]. The sessions the schedule started stay.
func (c *Coordinator) DeleteSchedule(ctx context.Context, id string) error {
	if err := lookup(0, c.store.DeleteSchedule(ctx, id)).errAs("schedule", id); err != nil {
		return err
	}
	c.wake(schedulesKey)
	return nil
}

func (f found[T]) errAs(what, id string) error {
	_, err := f.as(what, id)
	return err
}

// FireSchedules fires every schedule that is due by the coordinator's clock (Config.Now) and returns
// when it has. [Coordinator.Start] runs the same firing in the background, woken at each schedule's next
// tick; a test moves its clock forward and calls this instead of waiting.
func (c *Coordinator) FireSchedules(ctx context.Context) error {
	_, _, err := c.fireDue(ctx)
	return err
}

// fireDue fires the due schedules and returns the earliest next tick (zero when no schedule is active)
// and the sessions that queued ticks wait for.
func (c *Coordinator) fireDue(ctx context.Context) (time.Time, []string, error) {
	var waits []string
	for {
		now := c.now()
		due, err := c.store.ListSchedules(ctx, orchestrator.ScheduleFilter{DueBy: now, Limit: scheduleBatch})
		if err != nil {
			return time.Time{}, nil, err
		}
		waits = waits[:0]
		fired := 0
		for _, s := range due {
			wait, ok, err := c.fireSchedule(ctx, s, now)
			if err != nil {
				return time.Time{}, nil, err
			}
			if wait != "" {
				waits = append(waits, wait)
			}
			if ok {
				fired++
			}
		}
		if len(due) < scheduleBatch || fired == 0 {
			break
		}
	}
	first, err := c.store.ListSchedules(ctx, orchestrator.ScheduleFilter{Active: true, Limit: 1})
	if err != nil || len(first) == 0 {
		return time.Time{}, waits, err
	}
	return first[0].NextFireAt, waits, nil
}

// fireSchedule handles one schedule that is due or has a queued tick: it starts a run, lets the tick
// pass, or queues it, as the overlap policy says. It returns the session a queued tick waits for, and
// whether it wrote the schedule. Losing the guarded write to another replica is not an error: that
// replica handled the tick.
func (c *Coordinator) fireSchedule(ctx context.Context, s *orchestrator.Schedule, now time.Time) (string, bool, error) {
	upd := *s
	upd.UpdatedAt = now
	due := !s.NextFireAt.After(now)
	sched, err := parseCron(s.Cron, s.Timezone, now)
	if err != nil {
		// Only a schedule written to the store directly can hold one: pause it and say why.
		upd.Paused, upd.Queued, upd.LastError = true, false, err.Error()
		return "", true, c.writeSchedule(ctx, &upd)
	}
	if due {
		upd.NextFireAt = nextTick(sched, s.NextFireAt, now)
	}
	active, err := c.sessionActive(ctx, s)
	if err != nil {
		return "", false, err
	}
	switch {
	case active && s.Overlap == orchestrator.OverlapQueue:
		if !due {
			return s.LastSessionID, false, nil // the queued tick goes on waiting
		}
		upd.Queued = true
		return s.LastSessionID, true, c.writeSchedule(ctx, &upd)
	case active:
		upd.LastError = ""
		return "", true, c.writeSchedule(ctx, &upd) // skip: the tick passes
	}
	upd.Queued = false
	return "", true, c.startFiring(ctx, &upd, now)
}

// sessionActive reports whether the schedule's previous session is still active, as far as its overlap
// policy cares (allow never does).
func (c *Coordinator) sessionActive(ctx context.Context, s *orchestrator.Schedule) (bool, error) {
	if s.LastSessionID == "" || s.Overlap == orchestrator.OverlapAllow {
		return false, nil
	}
	sess, err := c.store.GetSession(ctx, s.LastSessionID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return false, nil // deleted: it has ended
	}
	if err != nil {
		return false, err
	}
	return !sess.Status.Ended(), nil
}

// writeSchedule makes a guarded write; one lost to another writer is not an error.
func (c *Coordinator) writeSchedule(ctx context.Context, s *orchestrator.Schedule) error {
	err := c.store.UpdateSchedule(ctx, s)
	if errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound) {
		return nil
	}
	return err
}

// firingKey carries, in a StartRun's context, the schedule write that must commit with the run.
type firingKey struct{}

// firing is the schedule write a scheduled StartRun makes in the transaction that creates its session.
type firing func(ctx context.Context, tx store.Store, s *orchestrator.Session) error

// startFiring starts the tick's run through StartRun — the same checks, defaults and wake-ups as any
// run — with the schedule's guarded write in the transaction that creates the session and run. A run
// that cannot start (the agent is gone, its schema no longer accepts the parameters) still uses the tick
// up, and the schedule's LastError says why.
func (c *Coordinator) startFiring(ctx context.Context, upd *orchestrator.Schedule, now time.Time) error {
	lost := false
	write := firing(func(ctx context.Context, tx store.Store, sess *orchestrator.Session) error {
		w := *upd
		w.LastFiredAt, w.LastSessionID, w.LastError = &now, sess.ID, ""
		err := tx.UpdateSchedule(ctx, &w)
		lost = errors.Is(err, orchestrator.ErrConflict) || errors.Is(err, orchestrator.ErrNotFound)
		return err
	})
	metadata, _ := json.Marshal(map[string]string{"schedule_id": upd.ID})
	_, err := c.StartRun(context.WithValue(ctx, firingKey{}, write), orchestrator.StartRunParams{
		AgentName:  upd.AgentName,
		Parameters: upd.Parameters,
		Mode:       orchestrator.ModeAsyncPoll,
		Metadata:   metadata,
	})
	switch {
	case err == nil, lost:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case orchestrator.ErrorCode(err) == "":
		return err // the store failed: try again on the next pass
	}
	c.log.Warn("schedule could not start its run", "schedule_id", upd.ID, "agent", upd.AgentName, "err", err)
	upd.LastError = fmt.Sprintf("%s: %v", orchestrator.ErrorCode(err), err)
	return c.writeSchedule(ctx, upd)
}

// scheduleLoop fires schedules at their ticks until ctx ends: it sleeps until the earliest next tick, a
// change to the schedules (here or, through the Notifier, on another replica), or the end of a session a
// queued tick waits for — never polling faster than that, and at most scheduleIdle at a time.
func (c *Coordinator) scheduleLoop(ctx context.Context) {
	for ctx.Err() == nil {
		changed, release := c.wakeups.Wait(schedulesKey)
		next, waits, err := c.fireDue(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Error("fire schedules", "err", err)
			next = c.cfg.Now().Add(time.Second)
		}
		sleep := scheduleIdle
		if !next.IsZero() {
			sleep = min(max(next.Sub(c.cfg.Now()), 0), scheduleIdle)
		}
		iter, endIter := context.WithCancel(ctx)
		ended := make(chan struct{}, 1)
		for _, id := range slices.Compact(slices.Sorted(slices.Values(waits))) {
			go c.watchSession(iter, id, ended)
		}
		timer := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
		case <-changed:
		case <-ended:
		case <-timer.C:
		}
		timer.Stop()
		endIter()
		release()
	}
}

// watchSession signals ended when the session ends (or is already over).
func (c *Coordinator) watchSession(ctx context.Context, id string, ended chan<- struct{}) {
	if _, err := c.WaitSession(ctx, id, scheduleIdle); err != nil && ctx.Err() != nil {
		return
	}
	select {
	case ended <- struct{}{}:
	default:
	}
}

var _ orchestrator.Scheduler = (*Coordinator)(nil)
