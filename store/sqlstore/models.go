package sqlstore

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/uptrace/bun"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Rows are the tables' shapes; the domain types carry no storage tags and are converted at the edge.
// Strings are NOT NULL DEFAULT '' (the zero value is "none"); JSON payloads and optional times are NULL
// when absent.

type runnerRow struct {
	bun.BaseModel `bun:"table:runners,alias:rn"`

	ID                  string          `bun:"id,pk"`
	Hostname            string          `bun:"hostname"`
	ProjectDir          string          `bun:"project_dir"`
	ExecutorType        string          `bun:"executor_type"`
	ExecutorProfile     string          `bun:"executor_profile"`
	Executor            json.RawMessage `bun:"executor"`
	Tags                json.RawMessage `bun:"tags"`
	RequireMatchingTags bool            `bun:"require_matching_tags"`
	MaxConcurrent       int64           `bun:"max_concurrent"`
	AcceptsAgents       bool            `bun:"accepts_agents"`
	Status              string          `bun:"status"`
	RegisteredAt        time.Time       `bun:"registered_at"`
	LastHeartbeatAt     time.Time       `bun:"last_heartbeat_at"`
}

func runnerToRow(r *orchestrator.RunnerInfo) (*runnerRow, error) {
	tags, err := marshalTags(r.Tags)
	if err != nil {
		return nil, err
	}
	return &runnerRow{
		ID:                  r.ID,
		Hostname:            r.Hostname,
		ProjectDir:          r.ProjectDir,
		ExecutorType:        r.ExecutorType,
		ExecutorProfile:     r.ExecutorProfile,
		Executor:            rawOrNil(r.Executor),
		Tags:                tags,
		RequireMatchingTags: r.RequireMatchingTags,
		MaxConcurrent:       int64(r.MaxConcurrent),
		AcceptsAgents:       r.AcceptsAgents,
		Status:              string(r.Status),
		RegisteredAt:        utc(r.RegisteredAt),
		LastHeartbeatAt:     utc(r.LastHeartbeatAt),
	}, nil
}

func (row *runnerRow) domain() (*orchestrator.RunnerInfo, error) {
	tags, err := unmarshalTags(row.Tags)
	if err != nil {
		return nil, fmt.Errorf("runner %q: tags: %w", row.ID, err)
	}
	return &orchestrator.RunnerInfo{
		ID:                  row.ID,
		Hostname:            row.Hostname,
		ProjectDir:          row.ProjectDir,
		ExecutorType:        row.ExecutorType,
		ExecutorProfile:     row.ExecutorProfile,
		Executor:            rawOrNil(row.Executor),
		Tags:                tags,
		RequireMatchingTags: row.RequireMatchingTags,
		MaxConcurrent:       int(row.MaxConcurrent),
		AcceptsAgents:       row.AcceptsAgents,
		Status:              orchestrator.RunnerStatus(row.Status),
		RegisteredAt:        utc(row.RegisteredAt),
		LastHeartbeatAt:     utc(row.LastHeartbeatAt),
	}, nil
}

type agentRow struct {
	bun.BaseModel `bun:"table:agents,alias:ag"`

	Name      string          `bun:"name,pk"`
	Type      string          `bun:"type"`
	RunnerID  string          `bun:"runner_id"`
	Tags      string          `bun:"tags"`
	Blueprint json.RawMessage `bun:"blueprint"`
	CreatedAt time.Time       `bun:"created_at"`
	UpdatedAt time.Time       `bun:"updated_at"`
}

func agentToRow(a *store.Agent) (*agentRow, error) {
	if a.Blueprint == nil {
		return nil, fmt.Errorf("agent %q: no blueprint: %w", a.Name, orchestrator.ErrInvalid)
	}
	bp, err := json.Marshal(a.Blueprint)
	if err != nil {
		return nil, fmt.Errorf("agent %q: blueprint: %w", a.Name, err)
	}
	return &agentRow{
		Name:      a.Name,
		Type:      string(a.Blueprint.Type),
		RunnerID:  a.RunnerID,
		Tags:      joinTags(a.Blueprint.Tags),
		Blueprint: bp,
		CreatedAt: utc(a.CreatedAt),
		UpdatedAt: utc(a.UpdatedAt),
	}, nil
}

func (row *agentRow) domain() (*store.Agent, error) {
	var bp orchestrator.Blueprint
	if err := json.Unmarshal(row.Blueprint, &bp); err != nil {
		return nil, fmt.Errorf("agent %q: blueprint: %w", row.Name, err)
	}
	return &store.Agent{
		Name:      row.Name,
		Blueprint: &bp,
		RunnerID:  row.RunnerID,
		CreatedAt: utc(row.CreatedAt),
		UpdatedAt: utc(row.UpdatedAt),
	}, nil
}

// joinTags renders tags as ",a,b," so that "carries tag t" is a substring test for ",t," (tags hold no
// commas).
func joinTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return "," + strings.Join(tags, ",") + ","
}

type sessionRow struct {
	bun.BaseModel `bun:"table:sessions,alias:se"`

	ID                string          `bun:"id,pk"`
	AgentName         string          `bun:"agent_name"`
	AgentType         string          `bun:"agent_type"`
	Status            string          `bun:"status"`
	ParentSessionID   string          `bun:"parent_session_id"`
	Callback          bool            `bun:"callback"`
	ProjectDir        string          `bun:"project_dir"`
	Parameters        json.RawMessage `bun:"parameters"`
	OutputSchema      json.RawMessage `bun:"output_schema"`
	Demands           json.RawMessage `bun:"demands"`
	Metadata          json.RawMessage `bun:"metadata"`
	RunnerID          string          `bun:"runner_id"`
	CurrentRunID      string          `bun:"current_run_id"`
	ExecutorSessionID string          `bun:"executor_session_id"`
	Result            json.RawMessage `bun:"result"`
	Error             string          `bun:"error"`
	ErrorCode         string          `bun:"error_code"`
	CachedFrom        string          `bun:"cached_from"` // migration 80
	LastEventSeq      int64           `bun:"last_event_seq"`
	TraceID           string          `bun:"trace_id"`
	RerunOf           string          `bun:"rerun_of"`
	RetryPolicy       json.RawMessage `bun:"retry_policy"`
	Attempt           int64           `bun:"attempt"`
	MaxAttempts       int64           `bun:"max_attempts"`
	NextAttemptAt     *time.Time      `bun:"next_attempt_at"`
	CreatedAt         time.Time       `bun:"created_at"`
	UpdatedAt         time.Time       `bun:"updated_at"`
	EndedAt           *time.Time      `bun:"ended_at"`
	sessionTreeColumns
	// The running usage totals, raised by usage events (see usageSets).
	UsageInputTokens              int64   `bun:"usage_input_tokens"`
	UsageOutputTokens             int64   `bun:"usage_output_tokens"`
	UsageCacheReadInputTokens     int64   `bun:"usage_cache_read_input_tokens"`
	UsageCacheCreationInputTokens int64   `bun:"usage_cache_creation_input_tokens"`
	UsageCostUSD                  float64 `bun:"usage_cost_usd"`
}

func sessionToRow(s *orchestrator.Session) (*sessionRow, error) {
	var demands json.RawMessage
	if !s.Demands.IsZero() {
		b, err := json.Marshal(s.Demands)
		if err != nil {
			return nil, fmt.Errorf("session %q: demands: %w", s.ID, err)
		}
		demands = b
	}
	result, err := marshalResult(s.Result)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", s.ID, err)
	}
	var policy json.RawMessage
	if s.Retry != nil {
		if policy, err = json.Marshal(s.Retry); err != nil {
			return nil, fmt.Errorf("session %q: retry policy: %w", s.ID, err)
		}
	}
	row := &sessionRow{
		ID:                s.ID,
		AgentName:         s.AgentName,
		AgentType:         string(s.AgentType),
		Status:            string(s.Status),
		ParentSessionID:   s.ParentSessionID,
		Callback:          s.Callback,
		ProjectDir:        s.ProjectDir,
		Parameters:        rawOrNil(s.Parameters),
		OutputSchema:      rawOrNil(s.OutputSchema),
		Demands:           demands,
		Metadata:          rawOrNil(s.Metadata),
		RunnerID:          s.RunnerID,
		CurrentRunID:      s.CurrentRunID,
		ExecutorSessionID: s.ExecutorSessionID,
		Result:            result,
		Error:             s.Error,
		ErrorCode:         s.ErrorCode,
		CachedFrom:        s.CachedFrom,
		LastEventSeq:      s.LastEventSeq,
		TraceID:           s.TraceID,
		RerunOf:           s.RerunOf,
		RetryPolicy:       policy,
		Attempt:           int64(s.Attempt),
		MaxAttempts:       int64(s.MaxAttempts),
		NextAttemptAt:     utcPtr(s.NextAttemptAt),
		CreatedAt:         utc(s.CreatedAt),
		UpdatedAt:         utc(s.UpdatedAt),
		EndedAt:           utcPtr(s.EndedAt),

		UsageInputTokens:              s.Usage.InputTokens,
		UsageOutputTokens:             s.Usage.OutputTokens,
		UsageCacheReadInputTokens:     s.Usage.CacheReadInputTokens,
		UsageCacheCreationInputTokens: s.Usage.CacheCreationInputTokens,
		UsageCostUSD:                  s.Usage.CostUSD,
	}
	row.sessionTreeColumns = treeColumnsOf(s)
	return row, nil
}

func (row *sessionRow) domain() (*orchestrator.Session, error) {
	s := &orchestrator.Session{
		ID:                row.ID,
		AgentName:         row.AgentName,
		AgentType:         orchestrator.AgentType(row.AgentType),
		Status:            orchestrator.SessionStatus(row.Status),
		ParentSessionID:   row.ParentSessionID,
		Callback:          row.Callback,
		ProjectDir:        row.ProjectDir,
		Parameters:        rawOrNil(row.Parameters),
		OutputSchema:      rawOrNil(row.OutputSchema),
		Metadata:          rawOrNil(row.Metadata),
		RunnerID:          row.RunnerID,
		CurrentRunID:      row.CurrentRunID,
		ExecutorSessionID: row.ExecutorSessionID,
		Error:             row.Error,
		ErrorCode:         row.ErrorCode,
		CachedFrom:        row.CachedFrom,
		LastEventSeq:      row.LastEventSeq,
		TraceID:           row.TraceID,
		RerunOf:           row.RerunOf,
		Attempt:           int(row.Attempt),
		MaxAttempts:       int(row.MaxAttempts),
		NextAttemptAt:     utcPtr(row.NextAttemptAt),
		CreatedAt:         utc(row.CreatedAt),
		UpdatedAt:         utc(row.UpdatedAt),
		EndedAt:           utcPtr(row.EndedAt),
		Usage: orchestrator.Usage{InputTokens: row.UsageInputTokens, OutputTokens: row.UsageOutputTokens,
			CacheReadInputTokens: row.UsageCacheReadInputTokens, CacheCreationInputTokens: row.UsageCacheCreationInputTokens,
			CostUSD: row.UsageCostUSD},
	}
	if len(row.Demands) > 0 {
		if err := json.Unmarshal(row.Demands, &s.Demands); err != nil {
			return nil, fmt.Errorf("session %q: demands: %w", row.ID, err)
		}
	}
	r, err := unmarshalResult(row.Result)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", row.ID, err)
	}
	s.Result = r
	row.sessionTreeColumns.fill(s)
	if len(row.RetryPolicy) > 0 && string(row.RetryPolicy) != "null" {
		s.Retry = new(orchestrator.RetryPolicy)
		if err := json.Unmarshal(row.RetryPolicy, s.Retry); err != nil {
			return nil, fmt.Errorf("session %q: retry policy: %w", row.ID, err)
		}
	}
	return s, nil
}

type runRow struct {
	bun.BaseModel `bun:"table:runs,alias:ru"`

	ID                    string          `bun:"id,pk"`
	SessionID             string          `bun:"session_id"`
	AgentName             string          `bun:"agent_name"`
	AgentType             string          `bun:"agent_type"`
	Type                  string          `bun:"type"`
	Mode                  string          `bun:"mode"`
	Status                string          `bun:"status"`
	Parameters            json.RawMessage `bun:"parameters"`
	DemandRunnerID        string          `bun:"demand_runner_id"`
	DemandHostname        string          `bun:"demand_hostname"`
	DemandProjectDir      string          `bun:"demand_project_dir"`
	DemandExecutorType    string          `bun:"demand_executor_type"`
	DemandExecutorProfile string          `bun:"demand_executor_profile"`
	DemandTags            json.RawMessage `bun:"demand_tags"`
	DemandTagCount        int64           `bun:"demand_tag_count"`
	ProjectDir            string          `bun:"project_dir"`
	OutputSchema          json.RawMessage `bun:"output_schema"`
	Metadata              json.RawMessage `bun:"metadata"`
	CallbackURL           string          `bun:"callback_url"`
	RunnerID              string          `bun:"runner_id"`
	TraceParent           string          `bun:"traceparent"`
	Parked                bool            `bun:"parked"`
	Error                 string          `bun:"error"`
	Usage                 json.RawMessage `bun:"usage"`
	StopRequestedAt       *time.Time      `bun:"stop_requested_at"`
	StopSentAt            *time.Time      `bun:"stop_sent_at"`
	CreatedAt             time.Time       `bun:"created_at"`
	ClaimedAt             *time.Time      `bun:"claimed_at"`
	StartedAt             *time.Time      `bun:"started_at"`
	EndedAt               *time.Time      `bun:"ended_at"`
	// Submission control (migration 20): run_at is when the run becomes claimable, created_at for a run
	// not delayed, so that the claim index orders every run by it.
	Priority       int64     `bun:"priority"`
	RunAt          time.Time `bun:"run_at"`
	ConcurrencyKey string    `bun:"concurrency_key"`
	AgentLimit     int64     `bun:"agent_limit"`
	KeyLimit       int64     `bun:"key_limit"`
	// Result cache (migration 80) and rate limit (migration 81).
	CacheKey     string `bun:"cache_key"`
	CacheRole    string `bun:"cache_role"`
	RateLimit    int64  `bun:"rate_limit"`
	RatePeriodMS int64  `bun:"rate_period_ms"`
	RateBucket   string `bun:"rate_bucket"`
	ClaimedMS    int64  `bun:"claimed_ms"` // claimed_at in Unix milliseconds, for rate limit windows
	// Held (migration 70): the run of a session waiting for its approval.
	Held bool `bun:"held"`
	// Retries (migration 50).
	Attempt     int64 `bun:"attempt"`
	MaxAttempts int64 `bun:"max_attempts"`
	// Timeouts (migration 51).
	TimeoutMS     int64      `bun:"timeout_ms"`
	StartDeadline *time.Time `bun:"start_deadline"`
	TimedOutAt    *time.Time `bun:"timed_out_at"`
}

// limited reports whether the run counts against a concurrency limit, and so needs its slot rows.
func (row *runRow) limited() bool { return row.AgentLimit > 0 || row.ConcurrencyKey != "" }

type runTagRow struct {
	bun.BaseModel `bun:"table:run_tags,alias:rt"`

	RunID string `bun:"run_id,pk"`
	Tag   string `bun:"tag,pk"`
}

func runToRow(r *orchestrator.Run) (*runRow, []runTagRow, error) {
	tags, err := marshalTags(r.Demands.Tags)
	if err != nil {
		return nil, nil, err
	}
	usage, err := marshalUsage(r.Usage)
	if err != nil {
		return nil, nil, err
	}
	// run_tags is a set; a tag demanded twice counts once.
	var tagRows []runTagRow
	seen := map[string]bool{}
	for _, t := range r.Demands.Tags {
		if !seen[t] {
			seen[t] = true
			tagRows = append(tagRows, runTagRow{RunID: r.ID, Tag: t})
		}
	}
	return &runRow{
		ID:                    r.ID,
		SessionID:             r.SessionID,
		AgentName:             r.AgentName,
		AgentType:             string(r.AgentType),
		Type:                  string(r.Type),
		Mode:                  string(r.Mode),
		Status:                string(r.Status),
		Parameters:            rawOrNil(r.Parameters),
		DemandRunnerID:        r.Demands.RunnerID,
		DemandHostname:        r.Demands.Hostname,
		DemandProjectDir:      r.Demands.ProjectDir,
		DemandExecutorType:    r.Demands.ExecutorType,
		DemandExecutorProfile: r.Demands.ExecutorProfile,
		DemandTags:            tags,
		DemandTagCount:        int64(len(tagRows)),
		ProjectDir:            r.ProjectDir,
		OutputSchema:          rawOrNil(r.OutputSchema),
		Metadata:              rawOrNil(r.Metadata),
		CallbackURL:           r.CallbackURL,
		RunnerID:              r.RunnerID,
		TraceParent:           r.TraceParent,
		Parked:                r.Parked,
		Held:                  r.Held,
		Error:                 r.Error,
		Usage:                 usage,
		StopRequestedAt:       utcPtr(r.StopRequestedAt),
		StopSentAt:            utcPtr(r.StopSentAt),
		CreatedAt:             utc(r.CreatedAt),
		ClaimedAt:             utcPtr(r.ClaimedAt),
		StartedAt:             utcPtr(r.StartedAt),
		EndedAt:               utcPtr(r.EndedAt),
		Priority:              int64(normPriority(r.Priority)),
		RunAt:                 runAt(r),
		ConcurrencyKey:        r.ConcurrencyKey,
		AgentLimit:            int64(max(r.AgentLimit, 0)),
		KeyLimit:              int64(keyLimit(r)),
		CacheKey:              r.CacheKey,
		CacheRole:             r.CacheRole,
		RateLimit:             int64(max(r.RateLimit, 0)),
		RatePeriodMS:          r.RatePeriod.Milliseconds(),
		RateBucket:            r.RateBucket,
		Attempt:               int64(r.Attempt),
		MaxAttempts:           int64(r.MaxAttempts),
		TimeoutMS:             int64(math.Round(r.TimeoutSeconds * 1000)),
		StartDeadline:         utcPtr(r.StartDeadline),
		TimedOutAt:            utcPtr(r.TimedOutAt),
	}, tagRows, nil
}

func (row *runRow) domain() (*orchestrator.Run, error) {
	tags, err := unmarshalTags(row.DemandTags)
	if err != nil {
		return nil, fmt.Errorf("run %q: demand tags: %w", row.ID, err)
	}
	var usage *orchestrator.Usage
	if len(row.Usage) > 0 && string(row.Usage) != "null" {
		usage = new(orchestrator.Usage)
		if err := json.Unmarshal(row.Usage, usage); err != nil {
			return nil, fmt.Errorf("run %q: usage: %w", row.ID, err)
		}
	}
	r := &orchestrator.Run{
		ID:         row.ID,
		SessionID:  row.SessionID,
		AgentName:  row.AgentName,
		AgentType:  orchestrator.AgentType(row.AgentType),
		Type:       orchestrator.RunType(row.Type),
		Mode:       orchestrator.Mode(row.Mode),
		Status:     orchestrator.RunStatus(row.Status),
		Parameters: rawOrNil(row.Parameters),
		Demands: orchestrator.Demands{
			Hostname:        row.DemandHostname,
			ProjectDir:      row.DemandProjectDir,
			ExecutorType:    row.DemandExecutorType,
			ExecutorProfile: row.DemandExecutorProfile,
			Tags:            tags,
			RunnerID:        row.DemandRunnerID,
		},
		ProjectDir:      row.ProjectDir,
		OutputSchema:    rawOrNil(row.OutputSchema),
		Metadata:        rawOrNil(row.Metadata),
		CallbackURL:     row.CallbackURL,
		RunnerID:        row.RunnerID,
		TraceParent:     row.TraceParent,
		Parked:          row.Parked,
		Held:            row.Held,
		Error:           row.Error,
		Usage:           usage,
		StopRequestedAt: utcPtr(row.StopRequestedAt),
		StopSentAt:      utcPtr(row.StopSentAt),
		CreatedAt:       utc(row.CreatedAt),
		ClaimedAt:       utcPtr(row.ClaimedAt),
		StartedAt:       utcPtr(row.StartedAt),
		EndedAt:         utcPtr(row.EndedAt),
		ConcurrencyKey:  row.ConcurrencyKey,
		AgentLimit:      int(row.AgentLimit),
		KeyLimit:        int(row.KeyLimit),
		CacheKey:        row.CacheKey,
		CacheRole:       row.CacheRole,
		RateLimit:       int(row.RateLimit),
		RatePeriod:      time.Duration(row.RatePeriodMS) * time.Millisecond,
		RateBucket:      row.RateBucket,
		Attempt:         int(row.Attempt),
		MaxAttempts:     int(row.MaxAttempts),
		TimeoutSeconds:  float64(row.TimeoutMS) / 1000,
		StartDeadline:   utcPtr(row.StartDeadline),
		TimedOutAt:      utcPtr(row.TimedOutAt),
	}
	if row.Priority > 1 {
		r.Priority = int(row.Priority) // 1, the default, reads back as 0
	}
	if row.RunAt.After(row.CreatedAt) {
		at := utc(row.RunAt)
		r.RunAt = &at
	}
	return r, nil
}

// normPriority maps the zero priority to the default, 1.
func normPriority(p int) int {
	if p <= 0 {
		return 1
	}
	return p
}

// runAt is when the run becomes claimable: RunAt when it is later than the creation, else the creation.
func runAt(r *orchestrator.Run) time.Time {
	if r.RunAt != nil && r.RunAt.After(r.CreatedAt) {
		return utc(*r.RunAt)
	}
	return utc(r.CreatedAt)
}

// keyLimit is the run's limit per concurrency key: at least 1 when it carries a key, none otherwise.
func keyLimit(r *orchestrator.Run) int {
	if r.ConcurrencyKey == "" {
		return 0
	}
	return max(r.KeyLimit, 1)
}

type eventRow struct {
	bun.BaseModel `bun:"table:events,alias:ev"`

	SessionID string          `bun:"session_id,pk"`
	Seq       int64           `bun:"seq,pk"`
	Type      string          `bun:"type"`
	Time      time.Time       `bun:"time"`
	Data      json.RawMessage `bun:"data"`
}

func (row *eventRow) domain() *orchestrator.Event {
	return &orchestrator.Event{
		SessionID: row.SessionID,
		Seq:       row.Seq,
		Type:      row.Type,
		Time:      utc(row.Time),
		Data:      rawOrNil(row.Data),
	}
}

type callbackRow struct {
	bun.BaseModel `bun:"table:callbacks,alias:cb"`

	ID              string          `bun:"id,pk"`
	ParentSessionID string          `bun:"parent_session_id"`
	ChildSessionID  string          `bun:"child_session_id"`
	Type            string          `bun:"type"`
	ChildAgent      string          `bun:"child_agent"`
	Result          json.RawMessage `bun:"result"`
	CreatedAt       time.Time       `bun:"created_at"`
	DeliveredAt     *time.Time      `bun:"delivered_at"`
	DeliveredRun    string          `bun:"delivered_run"`
}

func callbackToRow(c *orchestrator.Callback) (*callbackRow, error) {
	result, err := marshalResult(c.Result)
	if err != nil {
		return nil, fmt.Errorf("callback %q: %w", c.ID, err)
	}
	return &callbackRow{
		ID:              c.ID,
		ParentSessionID: c.ParentSessionID,
		ChildSessionID:  c.ChildSessionID,
		Type:            c.Type,
		ChildAgent:      c.ChildAgent,
		Result:          result,
		CreatedAt:       utc(c.CreatedAt),
		DeliveredAt:     utcPtr(c.DeliveredAt),
		DeliveredRun:    c.DeliveredRun,
	}, nil
}

func (row *callbackRow) domain() (*orchestrator.Callback, error) {
	r, err := unmarshalResult(row.Result)
	if err != nil {
		return nil, fmt.Errorf("callback %q: %w", row.ID, err)
	}
	return &orchestrator.Callback{
		ID:              row.ID,
		ParentSessionID: row.ParentSessionID,
		ChildSessionID:  row.ChildSessionID,
		Type:            row.Type,
		ChildAgent:      row.ChildAgent,
		Result:          r,
		CreatedAt:       utc(row.CreatedAt),
		DeliveredAt:     utcPtr(row.DeliveredAt),
		DeliveredRun:    row.DeliveredRun,
	}, nil
}

func marshalResult(r *orchestrator.Result) (json.RawMessage, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	return b, nil
}

func unmarshalResult(b json.RawMessage) (*orchestrator.Result, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r orchestrator.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	return &r, nil
}

func marshalTags(tags []string) (json.RawMessage, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	return json.Marshal(tags)
}

func unmarshalTags(b json.RawMessage) ([]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var tags []string
	if err := json.Unmarshal(b, &tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// rawOrNil returns nil for an empty payload (stored as NULL; an empty string is not JSON), else a copy.
func rawOrNil(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// utc normalises a time to what the database keeps: UTC, microseconds.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

// marshalUsage encodes a run's usage for its usage column; nil stays NULL.
func marshalUsage(u *orchestrator.Usage) (json.RawMessage, error) {
	if u == nil {
		return nil, nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("run usage: %w", err)
	}
	return b, nil
}
