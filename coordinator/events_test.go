package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestAppendEventsRefusesMalformedText: event data that is not UTF-8, or holds an escaped NUL or half a
// surrogate pair, is refused whole, so nothing a strict JSON reader (or PostgreSQL) rejects is stored.
func TestAppendEventsRefusesMalformedText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "helper")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	good := orchestrator.Event{Type: "progress", Data: json.RawMessage(`{"message":"fine \u00e9 \ud83c\udf89"}`)}
	for _, data := range []string{
		"{\"message\":\"\xff\"}",
		"{\"message\":\"caf\xc3\"}",
		`{"message":"a\u0000b"}`,
		`{"a\u0000":1}`,
		`{"message":"\ud83c"}`,
	} {
		_, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{good, {Type: "progress", Data: json.RawMessage(data)}})
		if orchestrator.ErrorCode(err) != "invalid_encoding" {
			t.Errorf("AppendEvents with data %q: %v, want invalid_encoding", data, err)
		}
	}
	evs, err := c.ListEvents(ctx, res.SessionID, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "progress" {
			t.Errorf("a refused append stored %s", e.Data)
		}
	}
	if _, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{good}); err != nil {
		t.Errorf("AppendEvents of well-formed text: %v", err)
	}
}

// TestAppendEventsRefusesReservedTypes: a runner or an agent cannot write the coordinator's lifecycle
// markers or callback records, which a sync answer and a parent's callback trust, and a refused batch
// stores nothing.
func TestAppendEventsRefusesReservedTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "helper")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"})
	good := orchestrator.Event{Type: "progress", Data: json.RawMessage(`{"message":"fine"}`)}
	for _, typ := range []string{orchestrator.EventRunStarted, orchestrator.EventRunEnded, orchestrator.EventCallback} {
		forged := orchestrator.Event{Type: typ, Data: json.RawMessage(`{"run_id":"` + res.RunID + `","status":"completed"}`)}
		_, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{good, forged})
		if orchestrator.ErrorCode(err) != "reserved_event_type" || !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("AppendEvents of a %s event: %v, want reserved_event_type", typ, err)
		}
	}
	evs, err := c.ListEvents(ctx, res.SessionID, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "progress" || e.Type == orchestrator.EventRunEnded || e.Type == orchestrator.EventCallback {
			t.Errorf("a refused append stored a %s event: %s", e.Type, e.Data)
		}
	}
}

// TestRunStartedComesFirst: events that reach the coordinator before the runner's started report (an
// executor posting through the runner's gateway while the report is on its way) mark the run started,
// so run_started is the run's first event whatever path its events took; the late started report then
// changes nothing.
func TestRunStartedComesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "helper")
	ai := registerAI(t, c, "host-ai")
	for _, resume := range []bool{false, true} {
		p := orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}
		if resume {
			first := start(t, c, p)
			poll(t, c, ai.RunnerID, 1)
			report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: first.RunID, Status: orchestrator.RunCompleted,
				Result: &orchestrator.Result{ResultType: "agent", ResultText: "one"}})
			p = orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: first.SessionID, Prompt: "again"}
		}
		res := start(t, c, p)
		if w := poll(t, c, ai.RunnerID, 1); len(w.Runs) != 1 {
			t.Fatalf("poll: %+v", w)
		}
		before, err := c.ListEvents(ctx, res.SessionID, 0, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		var after int64
		if len(before) > 0 {
			after = before[len(before)-1].Seq
		}
		if _, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{orchestrator.NewEvent("message", map[string]any{"role": "assistant", "content": "hi"})}); err != nil {
			t.Fatal(err)
		}
		if s, _ := c.GetSession(ctx, res.SessionID); s.Status != orchestrator.SessionRunning || s.RunnerID != ai.RunnerID {
			t.Errorf("resume %v: session after its first event = %s on %q, want running on %s", resume, s.Status, s.RunnerID, ai.RunnerID)
		}
		if r, _ := c.GetRun(ctx, res.RunID); r.Status != orchestrator.RunRunning || r.StartedAt == nil {
			t.Errorf("resume %v: run after its first event = %s started %v, want running with started_at", resume, r.Status, r.StartedAt)
		}
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning}) // late: harmless
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted})
		evs, err := c.ListEvents(ctx, res.SessionID, after, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range evs {
			types = append(types, e.Type)
		}
		if got, want := strings.Join(types, ","), "run_started,message,result,run_ended"; got != want {
			t.Errorf("resume %v: the run's events = %s, want %s", resume, got, want)
		}
	}
}
