//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// scheduledSessions lists the agent's sessions that the schedule started (metadata.schedule_id).
func scheduledSessions(a *api, agent, scheduleID string) []*orchestrator.Session {
	var page struct {
		Sessions []*orchestrator.Session `json:"sessions"`
	}
	a.json("GET", "/sessions?agent_name="+agent+"&limit=1000", nil, http.StatusOK, &page)
	var out []*orchestrator.Session
	for _, s := range page.Sessions {
		var md struct {
			ScheduleID string `json:"schedule_id"`
		}
		if json.Unmarshal(s.Metadata, &md) == nil && md.ScheduleID == scheduleID {
			out = append(out, s)
		}
	}
	return out
}

// Issue 20: a schedule every 2 s, served by the real coordinator and executed by a real runner, fires
// three times — three sessions that run to completion — and none after it is paused.
func TestScheduleEveryTwoSeconds(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "ticker-runner", blueprints: []string{testAgent("ticker")}})
	a := co.admin()

	var s orchestrator.Schedule
	a.json("POST", "/schedules", map[string]any{
		"agent_name": "ticker", "parameters": map[string]any{"tag": "tick"}, "cron": "@every 2s", "overlap": "skip",
	}, http.StatusCreated, &s)

	var fired []*orchestrator.Session
	waitFor(t, 3*runTimeout, "three firings to complete", func() (bool, string) {
		fired = scheduledSessions(a, "ticker", s.ID)
		done := 0
		for _, f := range fired {
			if f.Status == orchestrator.SessionCompleted {
				done++
			}
		}
		return done >= 3, fmt.Sprintf("%d sessions, %d completed", len(fired), done)
	})
	for _, f := range fired {
		if f.Status != orchestrator.SessionCompleted && !f.Status.Ended() {
			continue // the latest may still run
		}
		if f.Status != orchestrator.SessionCompleted {
			t.Fatalf("scheduled session %s ended %s: %s", f.ID, f.Status, f.Error)
		}
	}

	var paused orchestrator.Schedule
	a.json("PATCH", "/schedules/"+s.ID, map[string]any{"paused": true}, http.StatusOK, &paused)
	if !paused.Paused {
		t.Fatalf("PATCH paused: %+v", paused)
	}
	atPause := len(scheduledSessions(a, "ticker", s.ID))
	// Three more ticks' worth of time: a schedule that kept firing would have started sessions by then.
	quiet := time.Now().Add(3 * 2 * time.Second)
	waitFor(t, 10*time.Second, "three ticks to pass after the pause", func() (bool, string) {
		n := len(scheduledSessions(a, "ticker", s.ID))
		if n != atPause {
			t.Fatalf("%d sessions with schedule_id %s after the pause, %d when it was paused", n, s.ID, atPause)
		}
		return time.Now().After(quiet), fmt.Sprintf("%d sessions", n)
	})
	var after orchestrator.Schedule
	a.json("GET", "/schedules/"+s.ID, nil, http.StatusOK, &after)
	if !after.Paused || after.LastFiredAt == nil || after.LastFiredAt.After(paused.UpdatedAt) {
		t.Fatalf("schedule after the pause: %+v (paused at %v)", after, paused.UpdatedAt)
	}
}
