package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestScheduleEveryAtLeastASecond: "@every" takes a positive whole number of seconds, at least one; zero,
// negative, sub-second and fractional intervals are 400 invalid_cron, on create and on update, and a
// schedule stored with one anyway (by an older version) is paused at its first check instead of firing.
func TestScheduleEveryAtLeastASecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{Store: st, Now: clk.Now})
	createAgent(t, c, "ticker")
	params := json.RawMessage(`{"prompt":"tick"}`)
	for _, expr := range []string{"@every 0s", "@every -1s", "@every 1ns", "@every 999ms", "@every 1500ms", "@every", "@every soon", "@every -1h"} {
		_, err := c.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "ticker", Parameters: params, Cron: expr})
		if !errors.Is(err, orchestrator.ErrInvalid) || orchestrator.ErrorCode(err) != "invalid_cron" {
			t.Errorf("CreateSchedule(%q) = %v, want invalid_cron", expr, err)
		}
	}
	for _, expr := range []string{"@every 1s", "@every 90s", "@every 1m30s", "*/1 * * * * *"} {
		if _, err := c.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "ticker", Parameters: params, Cron: expr, Paused: new(true)}); err != nil {
			t.Errorf("CreateSchedule(%q) = %v, want it accepted", expr, err)
		}
	}
	s, err := c.CreateSchedule(ctx, orchestrator.ScheduleParams{AgentName: "ticker", Parameters: params, Cron: "@every 5s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateSchedule(ctx, s.ID, orchestrator.ScheduleParams{Cron: "@every 1ns"}); orchestrator.ErrorCode(err) != "invalid_cron" {
		t.Errorf("UpdateSchedule to @every 1ns = %v, want invalid_cron", err)
	}
	// Written to the store directly: paused, with the reason, and no run.
	raw, _ := st.GetSchedule(ctx, s.ID)
	raw.Cron = "@every 1ns"
	if err := st.UpdateSchedule(ctx, raw); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)
	if err := c.FireSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := c.GetSchedule(ctx, s.ID)
	if !got.Paused || !strings.Contains(got.LastError, "@every") || len(scheduled(t, c, s.ID)) != 0 {
		t.Errorf("a stored @every 1ns schedule after its check: paused %v, last_error %q, %d runs; want paused, why, none",
			got.Paused, got.LastError, len(scheduled(t, c, s.ID)))
	}
}

// TestMaxSchedules: past Config.MaxSchedules, paused schedules included, creating one is 409
// too_many_schedules with the limit, and creates nothing; deleting one makes room. The default is
// documented; negative is no cap.
func TestMaxSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{MaxSchedules: 2})
	createAgent(t, c, "ticker")
	p := orchestrator.ScheduleParams{AgentName: "ticker", Parameters: json.RawMessage(`{"prompt":"tick"}`), Cron: "@hourly"}
	first, err := c.CreateSchedule(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Paused = new(true)
	if _, err := c.CreateSchedule(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateSchedule(ctx, p)
	var e *orchestrator.Error
	if !errors.Is(err, orchestrator.ErrConflict) || !errors.As(err, &e) || e.Code != "too_many_schedules" || e.Details["limit"] != 2 {
		t.Fatalf("a third schedule with MaxSchedules 2: %v, want 409 too_many_schedules with limit 2", err)
	}
	if list, _ := c.ListSchedules(ctx, orchestrator.ScheduleFilter{}); len(list) != 2 {
		t.Fatalf("%d schedules after the refusal, want 2", len(list))
	}
	if err := c.DeleteSchedule(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSchedule(ctx, p); err != nil {
		t.Fatalf("a schedule after one was deleted: %v", err)
	}
	if coordinator.DefaultMaxSchedules != 1000 {
		t.Errorf("DefaultMaxSchedules = %d; the documentation says 1000", coordinator.DefaultMaxSchedules)
	}

	unlimited := newCoordinator(t, coordinator.Config{MaxSchedules: -1})
	createAgent(t, unlimited, "ticker")
	for i := range 3 {
		if _, err := unlimited.CreateSchedule(ctx, p); err != nil {
			t.Fatalf("schedule %d with no cap: %v", i, err)
		}
	}
}

// TestScheduleOfATree: ScheduleFilter.TreeOf selects the schedule the tree's root session names, from
// any session of the tree, and only the root counts: a child's metadata cannot claim another schedule.
func TestScheduleOfATree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "ticker")
	p := orchestrator.ScheduleParams{AgentName: "ticker", Parameters: json.RawMessage(`{"prompt":"tick"}`), Cron: "@hourly", Paused: new(true)}
	mine, _ := c.CreateSchedule(ctx, p)
	other, _ := c.CreateSchedule(ctx, p)
	root := start(t, c, orchestrator.StartRunParams{AgentName: "ticker", Prompt: "root", Metadata: json.RawMessage(`{"schedule_id":"` + mine.ID + `"}`)})
	child := start(t, c, orchestrator.StartRunParams{AgentName: "ticker", Prompt: "child", ParentSessionID: root.SessionID,
		Metadata: json.RawMessage(`{"schedule_id":"` + other.ID + `"}`)})
	grandchild := start(t, c, orchestrator.StartRunParams{AgentName: "ticker", Prompt: "grandchild", ParentSessionID: child.SessionID})
	plain := start(t, c, orchestrator.StartRunParams{AgentName: "ticker", Prompt: "plain"})
	for _, tc := range []struct {
		name string
		f    orchestrator.ScheduleFilter
		want string
	}{
		{"root", orchestrator.ScheduleFilter{TreeOf: root.SessionID}, mine.ID},
		{"child claiming another", orchestrator.ScheduleFilter{TreeOf: child.SessionID}, mine.ID},
		{"grandchild", orchestrator.ScheduleFilter{TreeOf: grandchild.SessionID}, mine.ID},
		{"no schedule", orchestrator.ScheduleFilter{TreeOf: plain.SessionID}, ""},
		{"unknown session", orchestrator.ScheduleFilter{TreeOf: "ses_nope"}, ""},
		{"other agent", orchestrator.ScheduleFilter{TreeOf: root.SessionID, AgentName: "someone"}, ""},
		{"past the cursor", orchestrator.ScheduleFilter{TreeOf: root.SessionID, AfterID: mine.ID}, ""},
		{"active only", orchestrator.ScheduleFilter{TreeOf: root.SessionID, Active: true}, ""},
	} {
		list, err := c.ListSchedules(ctx, tc.f)
		var got string
		if len(list) == 1 {
			got = list[0].ID
		}
		if err != nil || len(list) > 1 || got != tc.want {
			t.Errorf("%s: ListSchedules = %d schedules (%q), %v; want %q", tc.name, len(list), got, err, tc.want)
		}
	}
}
