package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// Schedule starts a run of an agent at the times a cron expression names (recurring runs). Each firing is
// an ordinary run, started as StartRun starts one, whose metadata carries {"schedule_id": …}; its session
// is the schedule's LastSessionID until the next firing.
//
// A tick that comes due while the schedule's previous session is still active follows Overlap. Ticks
// missed while no coordinator ran (or while a firing could not be made) are not made up one by one: the
// first check after them fires once, and the schedule goes on from the next tick after that moment. A
// paused schedule does not fire; resuming it starts again from the next tick after the resume.
type Schedule struct {
	ID         string          `json:"id"`
	AgentName  string          `json:"agent_name"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Cron is a standard five-field cron expression ("*/5 * * * *"), the same with a leading seconds
	// field (six fields: "*/2 * * * * *"), or a descriptor: "@hourly", "@daily", "@every 90s"…
	Cron string `json:"cron"`
	// Timezone is the IANA zone the cron fields are read in ("Europe/Paris"). Default UTC.
	Timezone string        `json:"timezone"`
	Overlap  OverlapPolicy `json:"overlap"`
	Paused   bool          `json:"paused"`
	// NextFireAt is the next tick; a paused schedule keeps it only to show when it was due.
	NextFireAt time.Time `json:"next_fire_at"`
	// Queued says a tick came while the previous session was active and waits for it to end
	// (OverlapQueue).
	Queued        bool       `json:"queued,omitempty"`
	LastFiredAt   *time.Time `json:"last_fired_at,omitempty"`
	LastSessionID string     `json:"last_session_id,omitempty"`
	// LastError says why the latest tick could not start a run (the agent is gone, its schema changed…).
	LastError string    `json:"last_error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Revision counts the schedule's writes; a store's UpdateSchedule is guarded by it.
	Revision int64 `json:"-"`
}

// OverlapPolicy says what a tick does while the schedule's previous session is still active.
type OverlapPolicy string

const (
	// OverlapSkip (the default) lets the tick pass without a run.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapAllow starts a run anyway: several sessions of the schedule may be active at once.
	OverlapAllow OverlapPolicy = "allow"
	// OverlapQueue remembers the tick and starts its run the moment the previous session ends. At most one
	// tick waits: the ticks that come while one waits are absorbed into it.
	OverlapQueue OverlapPolicy = "queue"
)

// ScheduleParams creates a schedule (POST /schedules) or, in [Scheduler].UpdateSchedule, lists the fields
// to change (nil or empty fields are left alone).
type ScheduleParams struct {
	AgentName  string          `json:"agent_name,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Cron       string          `json:"cron,omitempty"`
	Timezone   string          `json:"timezone,omitempty"`
	Overlap    OverlapPolicy   `json:"overlap,omitempty"`
	Paused     *bool           `json:"paused,omitempty"`
}

// ScheduleFilter selects schedules, oldest first.
type ScheduleFilter struct {
	AgentName string
	// TreeOf, when set, selects only the schedule that started the tree of runs session TreeOf belongs
	// to — the schedule its root session's metadata names — if the other fields select it too: at most
	// one schedule. A session started by no schedule (or one that does not exist) selects none. It is
	// what a run's agent may see of the schedules through its runner's gateway (GET /schedules?tree_of=).
	TreeOf string
	// DueBy selects the schedules that are not paused and whose NextFireAt is not after it, or that
	// have a queued tick, soonest first (the firing loop's probe).
	DueBy time.Time
	// Active selects the schedules that are not paused, soonest NextFireAt first.
	Active  bool
	AfterID string
	Limit   int
}

// Scheduler is a [Coordinator] that keeps schedules (recurring runs). The in-process coordinator and the
// HTTP client implement it.
type Scheduler interface {
	// CreateSchedule checks the agent, its parameters, the cron expression and the timezone, and stores a
	// schedule that fires from the next tick on.
	CreateSchedule(ctx context.Context, p ScheduleParams) (*Schedule, error)
	GetSchedule(ctx context.Context, id string) (*Schedule, error)
	ListSchedules(ctx context.Context, f ScheduleFilter) ([]*Schedule, error)
	// UpdateSchedule changes the fields p sets (pause or resume with Paused; AgentName cannot change).
	UpdateSchedule(ctx context.Context, id string, p ScheduleParams) (*Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
}
