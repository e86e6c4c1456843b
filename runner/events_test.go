package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
)

// linesExecutor emits each of its batches of stderr lines in one Emit call, as a program's stderr pump
// does, and completes.
type linesExecutor struct{ batches [][]string }

func (e linesExecutor) Execute(ctx context.Context, _ *orchestrator.Invocation, sink orchestrator.EventSink) (*orchestrator.Result, error) {
	for _, b := range e.batches {
		evs := make([]orchestrator.Event, len(b))
		for i, line := range b {
			evs[i] = orchestrator.NewEvent(orchestrator.EventStderr, map[string]string{"line": line})
		}
		_ = sink.Emit(ctx, evs...) // the runner's sink counts what it could not store
	}
	zero := 0
	return &orchestrator.Result{ResultType: "deterministic", ExitCode: &zero}, nil
}

// runLines runs one echo run on a runner over co executing ex, and returns the session's events.
func runLines(t *testing.T, c *coordinator.Coordinator, co runner.Coordinator, ex orchestrator.Executor) []*orchestrator.Event {
	t.Helper()
	startEchoRunner(t, runner.Config{Coordinator: co, Executor: ex})
	res := syncEcho(t, c)
	if res.Status != orchestrator.SessionCompleted {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	var all []*orchestrator.Event
	for after := int64(0); ; {
		page, err := c.ListEvents(context.Background(), res.SessionID, after, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// count returns the stderr lines among events and the lines their stderr_dropped events count.
func count(t *testing.T, events []*orchestrator.Event) (lines, dropped int, drops []map[string]any) {
	t.Helper()
	for _, ev := range events {
		switch ev.Type {
		case orchestrator.EventStderr:
			lines++
		case orchestrator.EventStderrDropped:
			var d map[string]any
			if err := ev.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			n, _ := d["dropped_lines"].(float64)
			dropped += int(n)
			drops = append(drops, d)
		}
	}
	return lines, dropped, drops
}

// A batch of long stderr lines over the HTTP API's body limit (140 lines of 16 KiB, 2.2 MiB, where
// the limit is 2 MiB) reaches the coordinator whole, in calls that fit.
func TestRunnerSplitsEventsToFitTheBodyLimit(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	srv := httptest.NewServer(httpapi.NewHandler(c, httpapi.Config{}))
	t.Cleanup(srv.Close)
	client, err := httpapi.NewClient(srv.URL, httpapi.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]string, 140)
	for i := range batch {
		batch[i] = fmt.Sprintf("%04d %s", i, strings.Repeat("x", 16<<10))
	}
	events := runLines(t, c, client, linesExecutor{[][]string{batch}})
	lines, dropped, _ := count(t, events)
	if lines != len(batch) || dropped != 0 {
		t.Errorf("%d of %d lines stored, %d counted dropped; want all stored", lines, len(batch), dropped)
	}
}

// refusingEvents is a coordinator that refuses some event calls: those with more than 64 events as too
// large, those holding a "poison" line as invalid, and those holding a "lost" line with no answer at all (as
// when the coordinator cannot be reached).
type refusingEvents struct{ *coordinator.Coordinator }

func (c refusingEvents) AppendEvents(ctx context.Context, sessionID string, events []orchestrator.Event) ([]*orchestrator.Event, error) {
	if len(events) > 64 {
		return nil, orchestrator.Errorf(orchestrator.ErrTooLarge, "body_too_large", "request body exceeds 64 events")
	}
	for _, ev := range events {
		var d struct{ Line string }
		_ = json.Unmarshal(ev.Data, &d)
		switch {
		case d.Line == "poison":
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_event", "poison")
		case strings.HasPrefix(d.Line, "lost"):
			return nil, errors.New("connection refused")
		}
	}
	return c.Coordinator.AppendEvents(ctx, sessionID, events)
}

// Events the coordinator refuses cost only themselves: a call refused as too large is split, one refused as
// invalid is halved down to the event at fault, and the stderr lines it did not store — refused, or lost
// while it could not be reached — are counted in stderr_dropped events once it answers again.
func TestRunnerCountsTheLinesTheCoordinatorDidNotStore(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	first := make([]string, 300)
	for i := range first {
		first[i] = fmt.Sprint("line ", i)
	}
	first[10], first[150], first[299] = "poison", "poison", "poison"
	lost := []string{"lost 1", "lost 2", "lost 3", "lost 4"}
	events := runLines(t, c, refusingEvents{c}, linesExecutor{[][]string{first, lost, {"after"}}})
	lines, dropped, drops := count(t, events)
	if lines != 297+1 || dropped != 3+4 {
		t.Errorf("%d lines stored, %d counted dropped; want 298 stored and 7 counted", lines, dropped)
	}
	for _, d := range drops {
		if d["reason"] != "not_stored" || d["error"] == "" {
			t.Errorf("stderr_dropped %v: want reason not_stored and the error", d)
		}
	}
}
