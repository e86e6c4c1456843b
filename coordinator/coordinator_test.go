package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/pgtest"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// newStore opens a fresh SQLite file store, closed when the test ends.
func newStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.New(context.Background(), filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// stores are the stores a test that depends on the store's dialect runs on: a SQLite file always, and a
// PostgreSQL schema of its own when ORCHESTRATOR_TEST_POSTGRES_URL is set.
func stores(t *testing.T) map[string]func(t *testing.T) *sqlstore.Store {
	kinds := map[string]func(t *testing.T) *sqlstore.Store{"SQLite": newStore}
	if base := pgtest.URL(); base != "" {
		kinds["Postgres"] = func(t *testing.T) *sqlstore.Store {
			st, err := sqlstore.New(context.Background(), pgtest.Schema(t, base, "coordtest"), nil)
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}
	return kinds
}

// newCoordinator returns a coordinator over cfg.Store, or over a fresh SQLite file store if it is nil.
func newCoordinator(t *testing.T, cfg coordinator.Config) *coordinator.Coordinator {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newStore(t)
	}
	c, err := coordinator.New(cfg)
	if err != nil {
		t.Fatalf("coordinator.New: %v", err)
	}
	return c
}

// clock is a coordinator clock (Config.Now) that a test moves by hand, so that thresholds pass without
// waiting for them.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var crawlerSchema = json.RawMessage(`{"type":"object","required":["url"],"properties":{"url":{"type":"string","format":"uri"},"depth":{"type":"integer","default":2}}}`)

func crawler() *orchestrator.Blueprint {
	return &orchestrator.Blueprint{
		Name:             "web-crawler",
		Type:             orchestrator.AgentTypeDeterministic,
		Description:      "Crawls websites to specified depth",
		Command:          "python -m crawler.main",
		ParametersSchema: crawlerSchema,
	}
}

func register(t *testing.T, c orchestrator.Coordinator, host string, bps ...*orchestrator.Blueprint) *orchestrator.Registration {
	t.Helper()
	reg, err := c.RegisterRunner(context.Background(), &orchestrator.RunnerRegistration{
		Hostname: host, ProjectDir: "/work", ExecutorType: "deterministic", Blueprints: bps,
	})
	if err != nil {
		t.Fatalf("RegisterRunner(%s): %v", host, err)
	}
	return reg
}

func registerAI(t *testing.T, c orchestrator.Coordinator, host string) *orchestrator.Registration {
	t.Helper()
	reg, err := c.RegisterRunner(context.Background(), &orchestrator.RunnerRegistration{
		Hostname: host, ProjectDir: "/work", ExecutorType: "claude-code",
	})
	if err != nil {
		t.Fatalf("RegisterRunner(%s): %v", host, err)
	}
	return reg
}

// createAgent adds an AI agent with defaults to the registry.
func createAgent(t *testing.T, c orchestrator.Coordinator, name string) {
	t.Helper()
	if _, err := c.CreateAgent(context.Background(), &orchestrator.Blueprint{Name: name}); err != nil {
		t.Fatalf("CreateAgent(%s): %v", name, err)
	}
}

func poll(t *testing.T, c orchestrator.Coordinator, runnerID string, max int) *orchestrator.Work {
	t.Helper()
	w, err := c.PollWork(context.Background(), orchestrator.PollParams{RunnerID: runnerID, Max: max})
	if err != nil {
		t.Fatalf("PollWork(%s): %v", runnerID, err)
	}
	return w
}

func start(t *testing.T, c orchestrator.Coordinator, p orchestrator.StartRunParams) *orchestrator.StartRunResult {
	t.Helper()
	res, err := c.StartRun(context.Background(), p)
	if err != nil {
		t.Fatalf("StartRun(%s): %v", p.AgentName, err)
	}
	return res
}

func report(t *testing.T, c orchestrator.Coordinator, rep orchestrator.RunReport) {
	t.Helper()
	if err := c.ReportRun(context.Background(), rep); err != nil {
		t.Fatalf("ReportRun(%s %s): %v", rep.RunID, rep.Status, err)
	}
}

func TestRegisterCollisionAndListing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	b := register(t, c, "host-b", crawler())
	if got := a.Blueprints[0].RegisteredName; got != "web-crawler" {
		t.Errorf("first runner's name = %q, want web-crawler", got)
	}
	if got, want := b.Blueprints[0].RegisteredName, "web-crawler@"+b.RunnerID; got != want {
		t.Errorf("second runner's name = %q, want %q", got, want)
	}
	if a.RunnerID == b.RunnerID || !strings.HasPrefix(a.RunnerID, "lnch_") {
		t.Errorf("runner ids %q, %q: want distinct lnch_ ids", a.RunnerID, b.RunnerID)
	}
	// The id is stable: registering again (presenting the runner's secret) gives the same one and the
	// same name.
	again, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{
		Hostname: "host-a", ProjectDir: "/work", ExecutorType: "deterministic", Blueprints: []*orchestrator.Blueprint{crawler()},
		RunnerSecret: a.RunnerSecret,
	})
	if err != nil {
		t.Fatalf("RegisterRunner(host-a) again: %v", err)
	}
	if again.RunnerID != a.RunnerID || again.Blueprints[0].RegisteredName != "web-crawler" {
		t.Errorf("re-registration = %+v, want id %s and name web-crawler", again, a.RunnerID)
	}
	if _, err := c.CreateAgent(ctx, &orchestrator.Blueprint{Name: "researcher", Description: "Research assistant"}); err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	agents, err := c.ListAgents(ctx, orchestrator.ListAgentsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 3 {
		t.Fatalf("ListAgents returned %d agents, want 3", len(agents))
	}
	for _, ag := range agents {
		switch ag.Type {
		case orchestrator.AgentTypeDeterministic:
			if len(ag.ParametersSchema) == 0 {
				t.Errorf("deterministic agent %s has no inline parameters_schema", ag.Name)
			}
		case orchestrator.AgentTypeAgent:
			if len(ag.ParametersSchema) != 0 {
				t.Errorf("AI agent %s lists the implicit schema inline: %s", ag.Name, ag.ParametersSchema)
			}
		}
	}
	info, err := c.GetAgent(ctx, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	if string(info.ParametersSchema) != string(orchestrator.ImplicitPromptSchema) {
		t.Errorf("researcher schema = %s, want the implicit prompt schema", info.ParametersSchema)
	}
	if _, err := c.GetAgent(ctx, "nope"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("GetAgent(nope) error = %v, want ErrNotFound", err)
	}
}

func TestStartRunValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	register(t, c, "host-a", crawler())

	_, err := c.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:  "web-crawler",
		Parameters: json.RawMessage(`{"url":"not-a-url","depth":"deep"}`),
	})
	var ve *orchestrator.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("StartRun with bad parameters: error %v, want *ValidationError", err)
	}
	if !errors.Is(err, orchestrator.ErrInvalidParameters) || !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("validation error does not match ErrInvalidParameters and ErrInvalid")
	}
	want := []orchestrator.FieldError{
		{Path: "$.depth", Message: "'deep' is not of type 'integer'", SchemaPath: "properties.depth.type"},
		{Path: "$.url", Message: "'not-a-url' is not a valid URI", SchemaPath: "properties.url.format"},
	}
	if len(ve.Errors) != len(want) {
		t.Fatalf("validation errors = %+v, want %+v", ve.Errors, want)
	}
	for i := range want {
		if ve.Errors[i] != want[i] {
			t.Errorf("error %d = %+v, want %+v", i, ve.Errors[i], want[i])
		}
	}
	if string(ve.Schema) != string(crawlerSchema) || ve.AgentName != "web-crawler" {
		t.Errorf("error carries schema %s agent %q, want the agent's schema and name", ve.Schema, ve.AgentName)
	}
	sessions, err := c.ListSessions(ctx, orchestrator.SessionFilter{})
	if err != nil || len(sessions.Sessions) != 0 {
		t.Errorf("a rejected run created sessions: %v %v", sessions, err)
	}

	// Defaults are applied and stored with the run.
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`)})
	run, err := c.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	if err := json.Unmarshal(run.Parameters, &params); err != nil || params["depth"] != float64(2) {
		t.Errorf("stored parameters = %s, want depth defaulted to 2", run.Parameters)
	}

	// Resuming a deterministic session is refused with the documented message.
	_, err = c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Type: orchestrator.RunTypeResume,
		SessionID: res.SessionID, Prompt: "again"})
	if err == nil || !errors.Is(err, orchestrator.ErrInvalid) || err.Error() != "Deterministic agents do not support resumption" {
		t.Errorf("resume deterministic: error %v, want ErrInvalid \"Deterministic agents do not support resumption\"", err)
	}
	// Naming a deterministic agent is enough, whatever session (or none) the request names.
	for _, sid := range []string{"", "ses_unknown"} {
		_, err = c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Type: orchestrator.RunTypeResume, SessionID: sid, Prompt: "again"})
		if err == nil || err.Error() != "Deterministic agents do not support resumption" {
			t.Errorf("resume web-crawler with session %q: %v", sid, err)
		}
	}
	// The legacy "mode": "resume" means the same.
	_, err = c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: "resume", SessionID: res.SessionID})
	if err == nil || err.Error() != "Deterministic agents do not support resumption" {
		t.Errorf("mode resume: error %v", err)
	}

	for _, tc := range []struct {
		name string
		p    orchestrator.StartRunParams
		code string
	}{
		{"unknown agent", orchestrator.StartRunParams{AgentName: "nope"}, "agent_not_found"},
		{"no agent", orchestrator.StartRunParams{}, "invalid_request"},
		{"bad mode", orchestrator.StartRunParams{AgentName: "web-crawler", Mode: "later"}, "invalid_request"},
		{"prompt and parameters", orchestrator.StartRunParams{AgentName: "web-crawler", Prompt: "x", Parameters: json.RawMessage(`{"url":"https://x"}`)}, "invalid_request"},
		{"parameters not an object", orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`[1]`)}, "invalid_request"},
		{"callback without parent", orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeAsyncCallback, Parameters: json.RawMessage(`{"url":"https://x"}`)}, "invalid_request"},
		{"callback to deterministic parent", orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeAsyncCallback, ParentSessionID: res.SessionID, Parameters: json.RawMessage(`{"url":"https://x"}`)}, "callback_to_deterministic"},
		{"bad output schema", orchestrator.StartRunParams{AgentName: "web-crawler", OutputSchema: json.RawMessage(`{"type":"strang"}`), Parameters: json.RawMessage(`{"url":"https://x"}`)}, "invalid_schema"},
		{"conflicting demands", orchestrator.StartRunParams{AgentName: "web-crawler", Demands: &orchestrator.Demands{RunnerID: "lnch_other"}, Parameters: json.RawMessage(`{"url":"https://x"}`)}, "demands_conflict"},
	} {
		_, err := c.StartRun(ctx, tc.p)
		if got := orchestrator.ErrorCode(err); got != tc.code {
			t.Errorf("%s: error %v (code %q), want code %q", tc.name, err, got, tc.code)
		}
	}
}

func TestDeterministicRunsGoToTheirOwner(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	b := register(t, c, "host-b", crawler())
	ai := registerAI(t, c, "host-ai")

	toA := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	toB := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler@" + b.RunnerID, Parameters: json.RawMessage(`{"url":"https://b.example"}`)})

	if w := poll(t, c, ai.RunnerID, 5); len(w.Runs) != 0 {
		t.Errorf("AI runner claimed deterministic runs: %+v", w.Runs)
	}
	wb := poll(t, c, b.RunnerID, 5)
	if len(wb.Runs) != 1 || wb.Runs[0].Run.ID != toB.RunID || wb.Runs[0].BlueprintName != "web-crawler" {
		t.Fatalf("runner b got %+v, want only run %s with blueprint web-crawler", wb.Runs, toB.RunID)
	}
	wa := poll(t, c, a.RunnerID, 5)
	if len(wa.Runs) != 1 || wa.Runs[0].Run.ID != toA.RunID {
		t.Fatalf("runner a got %+v, want only run %s", wa.Runs, toA.RunID)
	}
}

func TestPollWakesWhenRunArrives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{PollTimeout: time.Minute})
	a := register(t, c, "host-a", crawler())
	got := make(chan *orchestrator.Work, 1)
	go func() {
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: a.RunnerID, Wait: time.Minute, Max: 1})
		if err != nil {
			t.Errorf("PollWork: %v", err)
		}
		got <- w
	}()
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	select {
	case w := <-got:
		if len(w.Runs) != 1 || w.Runs[0].Run.ID != res.RunID {
			t.Fatalf("parked poll returned %+v, want run %s", w, res.RunID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a parked poll was not woken by a new run")
	}
}

// lookCountingStore counts the store look-ups a runner's poll makes, one GetRunner per look.
type lookCountingStore struct {
	store.Store
	looks atomic.Int64
}

func (s *lookCountingStore) GetRunner(ctx context.Context, id string) (*orchestrator.RunnerInfo, error) {
	s.looks.Add(1)
	return s.Store.GetRunner(ctx, id)
}

// TestFullRunnersPollWakesForStopsOnly: a poll with no free slot (Max 0) can take stops only, so new
// runs, which wake polls for runs, must not make it look again; a stop does. The coordinator runs in a
// synctest bubble, so that "the poll is parked" and "the poll did not look again" are facts
// (synctest.Wait: every goroutine is blocked), not guesses after a sleep.
func TestFullRunnersPollWakesForStopsOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		counted := &lookCountingStore{Store: newStore(t)}
		c := newCoordinator(t, coordinator.Config{Store: counted, PollTimeout: time.Minute})
		a := register(t, c, "host-a", crawler())
		held := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 {
			t.Fatalf("poll: %+v", w)
		}

		before := counted.looks.Load()
		got := make(chan *orchestrator.Work, 1)
		go func() {
			w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: a.RunnerID, Wait: time.Minute, Max: 0})
			if err != nil {
				t.Errorf("PollWork: %v", err)
			}
			got <- w
		}()
		synctest.Wait() // parked after its first look
		if n := counted.looks.Load() - before; n != 1 {
			t.Fatalf("the poll looked %d times before parking, want 1", n)
		}
		for range 3 {
			start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://b.example"}`)})
		}
		synctest.Wait() // a poll the new runs woke would have looked again by now
		if n := counted.looks.Load() - before; n != 1 {
			t.Errorf("the poll looked %d times after runs were created, want 1: new runs woke a full runner's poll", n)
		}
		if _, err := c.StopRun(ctx, held.RunID); err != nil {
			t.Fatal(err)
		}
		select {
		case w := <-got:
			if len(w.Stop) != 1 || w.Stop[0] != held.SessionID || len(w.Runs) != 0 {
				t.Fatalf("parked poll returned %+v, want only the stop of %s", w, held.SessionID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a full runner's parked poll was not woken by a stop")
		}
		if n := counted.looks.Load() - before; n != 2 {
			t.Errorf("the poll looked %d times, want 2: once on arrival, once for the stop", n)
		}
	})
}

func TestRunLifecycleAndResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	w := poll(t, c, a.RunnerID, 1)
	if len(w.Runs) != 1 {
		t.Fatalf("poll: %+v", w)
	}
	runID := res.RunID
	// Only the holder may report.
	err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: "lnch_intruder", RunID: runID, Status: orchestrator.RunRunning})
	if !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("report by a runner that does not hold the run: %v, want ErrConflict", err)
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunRunning})
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunRunning}) // repeated: harmless
	if s, _ := c.GetSession(ctx, res.SessionID); s.Status != orchestrator.SessionRunning {
		t.Errorf("session status after start = %s, want running", s.Status)
	}
	if _, err := c.AppendEvents(ctx, res.SessionID, []orchestrator.Event{
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]string{"line": "fetching /"}),
		orchestrator.NewEvent(orchestrator.EventStderr, map[string]string{"line": "done"}),
	}); err != nil {
		t.Fatal(err)
	}
	exit := 0
	result := &orchestrator.Result{ResultType: "deterministic", ResultText: `{"pages":3}`, ResultData: json.RawMessage(`{"pages":3}`), ExitCode: &exit}
	rep := orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunCompleted, Result: result}
	report(t, c, rep)
	report(t, c, rep) // a retried report is harmless
	if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runID, Status: orchestrator.RunFailed}); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("contradicting report: %v, want ErrConflict", err)
	}
	s, err := c.WaitSession(ctx, res.SessionID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != orchestrator.SessionCompleted || s.Result == nil || string(s.Result.ResultData) != `{"pages":3}` || *s.Result.ExitCode != 0 {
		t.Fatalf("session = %+v (result %+v), want completed with the reported result", s, s.Result)
	}
	evs, err := c.ListEvents(ctx, res.SessionID, 0, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, ","), "run_started,stderr,stderr,result,run_ended"; got != want {
		t.Errorf("event types = %s, want %s", got, want)
	}
	page, err := c.ListEvents(ctx, res.SessionID, 2, 2, 0)
	if err != nil || len(page) != 2 || page[0].Seq != 3 {
		t.Errorf("page after 2 limit 2 = %v %v, want seqs 3,4", page, err)
	}
}

func TestResultEventWinsOverLastMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "researcher")
	ai := registerAI(t, c, "host-ai")
	for _, tc := range []struct {
		name   string
		events []orchestrator.Event
		want   string
	}{
		{"message only", []orchestrator.Event{
			orchestrator.NewEvent("message", map[string]any{"role": "assistant", "content": []map[string]string{{"type": "text", "text": "the answer"}}}),
		}, "the answer"},
		{"result event wins", []orchestrator.Event{
			orchestrator.NewEvent("result", map[string]any{"result_type": "agent", "result_text": "structured"}),
			orchestrator.NewEvent("message", map[string]any{"role": "assistant", "content": "chatter"}),
		}, "structured"},
	} {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "go"})
		w := poll(t, c, ai.RunnerID, 1)
		if len(w.Runs) != 1 {
			t.Fatalf("%s: poll %+v", tc.name, w)
		}
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
		if _, err := c.AppendEvents(ctx, res.SessionID, tc.events); err != nil {
			t.Fatal(err)
		}
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted})
		s, _ := c.GetSession(ctx, res.SessionID)
		if s.Result == nil || s.Result.ResultText != tc.want {
			t.Errorf("%s: result %+v, want text %q", tc.name, s.Result, tc.want)
		}
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a := register(t, c, "host-a", crawler())
	params := json.RawMessage(`{"url":"https://a.example"}`)

	// A pending run stops without reaching a runner.
	pending := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: params})
	run, err := c.StopRun(ctx, pending.RunID)
	if err != nil || run.Status != orchestrator.RunStopped {
		t.Fatalf("stop pending run: %+v %v, want stopped", run, err)
	}
	if w := poll(t, c, a.RunnerID, 5); len(w.Runs) != 0 {
		t.Errorf("a stopped run reached the runner: %+v", w.Runs)
	}

	// A running run's stop reaches its runner's parked poll at once.
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: params})
	poll(t, c, a.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	got := make(chan *orchestrator.Work, 1)
	go func() {
		w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: a.RunnerID, Wait: time.Minute})
		if err != nil {
			t.Errorf("PollWork: %v", err)
		}
		got <- w
	}()
	if _, err := c.StopSession(ctx, res.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StopSession(ctx, res.SessionID); err != nil { // twice is harmless
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if len(w.Stop) != 1 || w.Stop[0] != res.SessionID {
			t.Fatalf("poll returned %+v, want a stop for %s", w, res.SessionID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not reach the parked poll")
	}
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunStopped, Error: "stopped"})
	if s, _ := c.GetSession(ctx, res.SessionID); s.Status != orchestrator.SessionStopped {
		t.Errorf("session after stop = %s, want stopped", s.Status)
	}
}

// runningParent sets up the callback scenario: an orchestrator agent on an AI runner with its session's
// run started, and runner a offering the web crawler its children run on.
func runningParent(t *testing.T, c orchestrator.Coordinator, prompt string) (a, ai *orchestrator.Registration, parent *orchestrator.StartRunResult) {
	t.Helper()
	createAgent(t, c, "orchestrator")
	a = register(t, c, "host-a", crawler())
	ai = registerAI(t, c, "host-ai")
	parent = start(t, c, orchestrator.StartRunParams{AgentName: "orchestrator", Prompt: prompt})
	poll(t, c, ai.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: parent.RunID, Status: orchestrator.RunRunning})
	return a, ai, parent
}

func TestCallbacksAreDeliveredTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a, ai, parent := runningParent(t, c, "crawl two sites")

	// Two children end while the parent runs.
	var children []string
	for _, u := range []string{"https://one.example", "https://two.example"} {
		ch := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeAsyncCallback,
			ParentSessionID: parent.SessionID, Parameters: json.RawMessage(`{"url":"` + u + `"}`)})
		children = append(children, ch.SessionID)
	}
	w := poll(t, c, a.RunnerID, 5)
	if len(w.Runs) != 2 {
		t.Fatalf("runner a got %d runs, want 2", len(w.Runs))
	}
	for i, asg := range w.Runs {
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: asg.Run.ID, Status: orchestrator.RunRunning})
		code := i // the second child fails
		report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: asg.Run.ID, Status: []orchestrator.RunStatus{orchestrator.RunCompleted, orchestrator.RunFailed}[i],
			Result: &orchestrator.Result{ResultType: "deterministic", ResultText: "out", ResultData: json.RawMessage(`{"n":1}`), ExitCode: &code}})
	}
	if s, _ := c.GetSession(ctx, parent.SessionID); s.Status != orchestrator.SessionRunning {
		t.Fatalf("parent was disturbed while running: %s", s.Status)
	}
	// The parent's run fails; both callbacks still arrive, in one resume.
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: parent.RunID, Status: orchestrator.RunFailed, Error: "model error"})
	w = poll(t, c, ai.RunnerID, 5)
	if len(w.Runs) != 1 {
		t.Fatalf("AI runner got %d runs after the parent ended, want 1 resume", len(w.Runs))
	}
	resume := w.Runs[0].Run
	if resume.SessionID != parent.SessionID || resume.Type != orchestrator.RunTypeResume {
		t.Fatalf("resume run = %+v", resume)
	}
	var p struct{ Prompt string }
	if err := json.Unmarshal(resume.Parameters, &p); err != nil {
		t.Fatal(err)
	}
	for _, id := range children {
		if !strings.Contains(p.Prompt, id) {
			t.Errorf("resume prompt does not mention child %s:\n%s", id, p.Prompt)
		}
	}
	if !strings.Contains(p.Prompt, `"result_data": {`) || !strings.Contains(p.Prompt, "child_failed") {
		t.Errorf("resume prompt lacks the structured results:\n%s", p.Prompt)
	}
}

func TestCallbackResumesIdleParentAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	a, ai, parent := runningParent(t, c, "crawl")
	child := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Mode: orchestrator.ModeAsyncCallback,
		ParentSessionID: parent.SessionID, Parameters: json.RawMessage(`{"url":"https://one.example"}`)})
	report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: parent.RunID, Status: orchestrator.RunCompleted})
	poll(t, c, a.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: child.RunID, Status: orchestrator.RunRunning})
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: child.RunID, Status: orchestrator.RunCompleted})
	s, _ := c.GetSession(ctx, parent.SessionID)
	if s.Status != orchestrator.SessionPending {
		t.Fatalf("idle parent status after the child ended = %s, want pending (resumed)", s.Status)
	}
	w := poll(t, c, ai.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].Run.SessionID != parent.SessionID {
		t.Fatalf("AI runner got %+v, want the parent's resume", w.Runs)
	}
}

func TestRunnerGoesOffline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{StaleAfter: time.Minute, OfflineAfter: 3 * time.Minute, Now: clk.Now})
	a := register(t, c, "host-a", crawler())
	res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	poll(t, c, a.RunnerID, 1)
	report(t, c, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning})
	pendingRun := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://b.example"}`)})
	status := func() orchestrator.RunnerStatus {
		t.Helper()
		runners, err := c.ListRunners(ctx)
		if err != nil || len(runners) != 1 {
			t.Fatalf("ListRunners = %v, %v", runners, err)
		}
		return runners[0].Status
	}

	clk.Advance(time.Minute - time.Second)
	c.Sweep(ctx, false)
	if st := status(); st != orchestrator.RunnerOnline {
		t.Fatalf("a runner quiet for less than StaleAfter is %s, want online", st)
	}
	clk.Advance(2 * time.Second)
	c.Sweep(ctx, false)
	if st := status(); st != orchestrator.RunnerStale {
		t.Fatalf("a runner quiet for more than StaleAfter is %s, want stale", st)
	}
	if s, _ := c.GetSession(ctx, res.SessionID); s.Status != orchestrator.SessionRunning {
		t.Fatalf("a stale runner's session is %s, want still running", s.Status)
	}
	clk.Advance(2 * time.Minute)
	c.Sweep(ctx, false)
	if st := status(); st != orchestrator.RunnerOffline {
		t.Fatalf("a runner quiet for more than OfflineAfter is %s, want offline", st)
	}
	s, _ := c.GetSession(ctx, res.SessionID)
	if s.Status != orchestrator.SessionFailed || s.Error != "Runner disconnected during execution" {
		t.Errorf("running session after runner loss = %s %q, want failed \"Runner disconnected during execution\"", s.Status, s.Error)
	}
	if r, _ := c.GetRun(ctx, pendingRun.RunID); r.Status != orchestrator.RunFailed {
		t.Errorf("pending run pinned to the lost runner = %s, want failed", r.Status)
	}
	if agents, _ := c.ListAgents(ctx, orchestrator.ListAgentsParams{}); len(agents) != 0 {
		t.Errorf("blueprints of an offline runner are still listed: %+v", agents)
	}
	if err := c.Heartbeat(ctx, a.RunnerID); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("heartbeat of an offline runner: %v, want ErrNotFound", err)
	}
	if err := c.ReportRun(ctx, orchestrator.RunReport{RunnerID: a.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted}); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("late report from the lost runner: %v, want ErrConflict", err)
	}
}

func TestConcurrentPollersNeverShareARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No redelivery: on a machine slow enough that the claims outlast RedeliverAfter, the pollers would be
	// handed their own claimed runs again, forever.
	c := newCoordinator(t, coordinator.Config{RedeliverAfter: time.Hour})
	createAgent(t, c, "researcher")
	var ids []string
	for i := range 4 {
		ids = append(ids, registerAI(t, c, "host-"+string(rune('a'+i))).RunnerID)
	}
	const n = 200
	for range n {
		start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "go"})
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{}
		wg   sync.WaitGroup
	)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				w, err := c.PollWork(ctx, orchestrator.PollParams{RunnerID: id, Max: 3})
				if err != nil {
					t.Error(err)
					return
				}
				if len(w.Runs) == 0 {
					return
				}
				mu.Lock()
				for _, asg := range w.Runs {
					if prev, dup := seen[asg.Run.ID]; dup {
						t.Errorf("run %s claimed by %s and %s", asg.Run.ID, prev, id)
					}
					seen[asg.Run.ID] = id
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d runs, want %d", len(seen), n)
	}
}

func TestPutAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	register(t, c, "host-a", crawler())
	bps := []*orchestrator.Blueprint{
		{Name: "researcher", Description: "v1", SystemPrompt: "You research."},
		{Name: "reviewer", Description: "Reviews code"},
	}
	if err := c.PutAgents(ctx, bps); err != nil {
		t.Fatal(err)
	}
	if err := c.PutAgents(ctx, []*orchestrator.Blueprint{{Name: "researcher", Description: "v2"}}); err != nil {
		t.Fatal(err)
	}
	info, err := c.GetAgent(ctx, "researcher")
	if err != nil || info.Description != "v2" || info.Type != orchestrator.AgentTypeAgent {
		t.Errorf("researcher after update = %+v %v, want description v2, type agent", info, err)
	}
	// All or nothing: a runner's name in the list changes nothing.
	err = c.PutAgents(ctx, []*orchestrator.Blueprint{{Name: "reviewer", Description: "v9"}, {Name: "web-crawler"}})
	if orchestrator.ErrorCode(err) != "agent_owned_by_runner" {
		t.Errorf("PutAgents over a runner's agent: %v, want agent_owned_by_runner", err)
	}
	if info, _ := c.GetAgent(ctx, "reviewer"); info.Description != "Reviews code" {
		t.Errorf("a rejected PutAgents changed reviewer to %q", info.Description)
	}
	if err := c.PutAgents(ctx, []*orchestrator.Blueprint{{Name: "bad", Type: orchestrator.AgentTypeDeterministic, Command: "x"}}); !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("PutAgents of a deterministic blueprint: %v, want ErrInvalid", err)
	}
}

func TestResumeWithCallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "orchestrator")
	ai := registerAI(t, c, "host-ai")
	finish := func(runID string) {
		t.Helper()
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: runID, Status: orchestrator.RunRunning})
		report(t, c, orchestrator.RunReport{RunnerID: ai.RunnerID, RunID: runID, Status: orchestrator.RunCompleted,
			Result: &orchestrator.Result{ResultType: "agent", ResultText: "done"}})
	}
	parent := start(t, c, orchestrator.StartRunParams{AgentName: "orchestrator", Prompt: "lead"})
	poll(t, c, ai.RunnerID, 1)
	finish(parent.RunID)
	child := start(t, c, orchestrator.StartRunParams{AgentName: "orchestrator", Prompt: "help", ParentSessionID: parent.SessionID})
	poll(t, c, ai.RunnerID, 1)
	finish(child.RunID) // async_poll: no callback
	if s, _ := c.GetSession(ctx, parent.SessionID); s.Status != orchestrator.SessionCompleted {
		t.Fatalf("parent after an async_poll child ended = %s, want completed (no callback)", s.Status)
	}
	res := start(t, c, orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: child.SessionID,
		Mode: orchestrator.ModeAsyncCallback, Prompt: "more"})
	poll(t, c, ai.RunnerID, 1)
	finish(res.RunID)
	w := poll(t, c, ai.RunnerID, 1)
	if len(w.Runs) != 1 || w.Runs[0].Run.SessionID != parent.SessionID || w.Runs[0].Run.Type != orchestrator.RunTypeResume {
		t.Fatalf("after the async_callback resume ended, the runner got %+v, want the parent's resume", w.Runs)
	}
	// A session without a parent has no one to call back.
	_, err := c.StartRun(ctx, orchestrator.StartRunParams{Type: orchestrator.RunTypeResume, SessionID: parent.SessionID,
		Mode: orchestrator.ModeAsyncCallback, Prompt: "x"})
	if !errors.Is(err, orchestrator.ErrInvalid) {
		t.Errorf("async_callback resume of a session without a parent: %v, want ErrInvalid", err)
	}
}

func TestUnmatchedRunsAreParked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	c := newCoordinator(t, coordinator.Config{ParkAfter: time.Minute, Now: clk.Now})
	createAgent(t, c, "researcher")
	ai := registerAI(t, c, "host-ai")
	nowhere := start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "x",
		Demands: &orchestrator.Demands{Hostname: "gpu-box"}})
	ok := start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "y"})
	c.Sweep(ctx, true)
	if r, _ := c.GetRun(ctx, nowhere.RunID); r.Parked {
		t.Fatalf("a run younger than ParkAfter was parked")
	}
	clk.Advance(2 * time.Minute) // older than ParkAfter
	if err := c.Heartbeat(ctx, ai.RunnerID); err != nil {
		t.Fatal(err)
	}
	c.Sweep(ctx, true)
	if r, _ := c.GetRun(ctx, nowhere.RunID); !r.Parked || r.Status != orchestrator.RunPending {
		t.Fatalf("run no runner matches: parked %v status %s, want parked and pending", r.Parked, r.Status)
	}
	if r, _ := c.GetRun(ctx, ok.RunID); r.Parked {
		t.Fatalf("a run a live runner matches was parked")
	}
	// A runner that matches registers: the run is unparked and that runner gets it.
	gpu, err := c.RegisterRunner(ctx, &orchestrator.RunnerRegistration{Hostname: "gpu-box", ProjectDir: "/work", ExecutorType: "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := c.GetRun(ctx, nowhere.RunID); r.Parked {
		t.Fatalf("the run is still parked after a matching runner registered")
	}
	w := poll(t, c, gpu.RunnerID, 5)
	found := false
	for _, asg := range w.Runs {
		found = found || asg.Run.ID == nowhere.RunID
	}
	if !found {
		t.Errorf("the matching runner did not get the unparked run: %+v", w.Runs)
	}
}

// A backlog of more than a sweep's page of runs that a live runner will take must not hide the runs behind
// it from the no-match sweep: each sweep reads on from where the previous one stopped, so a run nobody can
// take still fails after its timeout, and is parked after ParkAfter.
func TestSweepReachesRunsBehindABacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	failed := func(r *orchestrator.Run) bool { return r.Status == orchestrator.RunFailed }
	for _, tc := range []struct {
		name  string
		cfg   coordinator.Config
		check func(r *orchestrator.Run) bool
		// deleteCursor deletes, after the first sweep, the run that sweep's page ended with: the next
		// sweep starts over from the oldest, and the one after it reaches the run.
		deleteCursor bool
	}{
		{"no-match timeout", coordinator.Config{NoMatchTimeout: time.Minute, ParkAfter: time.Hour}, failed, false},
		{"parking", coordinator.Config{ParkAfter: time.Minute},
			func(r *orchestrator.Run) bool { return r.Parked && r.Status == orchestrator.RunPending }, false},
		{"the page's last run deleted", coordinator.Config{NoMatchTimeout: time.Minute, ParkAfter: time.Hour}, failed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			tc.cfg.Now = clk.Now
			c := newCoordinator(t, tc.cfg)
			createAgent(t, c, "researcher")
			register(t, c, "host-a", crawler())
			registerAI(t, c, "host-ai")
			// 1,001 runs pinned to the live crawler runner, older than the run nobody can take: more than
			// the 1,000 runs a sweep examines.
			const backlog = 1001
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := g; i < backlog; i += 8 {
						_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler",
							Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			nowhere := start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "x",
				Demands: &orchestrator.Demands{Hostname: "gpu-box"}})
			clk.Advance(2 * time.Minute) // older than the timeout and ParkAfter
			c.Sweep(ctx, true)           // the first page holds only the backlog
			if r, _ := c.GetRun(ctx, nowhere.RunID); r.Status != orchestrator.RunPending || r.Parked {
				t.Fatalf("after the first sweep the run behind the backlog is %s (parked %v): the page was not the backlog's", r.Status, r.Parked)
			}
			if tc.deleteCursor {
				page, err := c.ListRuns(ctx, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunPending}, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Store().DeleteSession(ctx, page[len(page)-1].SessionID); err != nil {
					t.Fatal(err)
				}
				c.Sweep(ctx, true) // starts over: the first page again
				if r, _ := c.GetRun(ctx, nowhere.RunID); r.Status != orchestrator.RunPending {
					t.Fatalf("after the sweep that started over the run behind the backlog is %s", r.Status)
				}
			}
			c.Sweep(ctx, true)
			r, err := c.GetRun(ctx, nowhere.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(r) {
				t.Errorf("after the second sweep the run behind the backlog is %s (parked %v, error %q)", r.Status, r.Parked, r.Error)
			}
			// The runs the crawler runner will take are untouched: none failed, none parked.
			failed, err := c.ListRuns(ctx, orchestrator.RunFilter{Statuses: []orchestrator.RunStatus{orchestrator.RunFailed}, AgentName: "web-crawler"})
			if err != nil || len(failed) != 0 {
				t.Errorf("failed crawler runs: %d, %v; want none", len(failed), err)
			}
			parked, err := c.ListRuns(ctx, orchestrator.RunFilter{Parked: new(true), AgentName: "web-crawler"})
			if err != nil || len(parked) != 0 {
				t.Errorf("parked crawler runs: %d, %v; want none", len(parked), err)
			}
		})
	}
}

// A runner going offline fails the runs pinned to it, and only those.
func TestOfflineRunnerFailsOnlyItsOwnRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{})
	createAgent(t, c, "researcher")
	a := register(t, c, "host-a", crawler())
	b := register(t, c, "host-b", crawler())
	mine := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
	theirs := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler@" + b.RunnerID, Parameters: json.RawMessage(`{"url":"https://b.example"}`)})
	ai := start(t, c, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "x"})
	if err := c.DeregisterRunner(ctx, a.RunnerID); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.GetRun(ctx, mine.RunID); r.Status != orchestrator.RunFailed {
		t.Errorf("the run pinned to the gone runner is %s, want failed", r.Status)
	}
	for _, id := range []string{theirs.RunID, ai.RunID} {
		if r, _ := c.GetRun(ctx, id); r.Status != orchestrator.RunPending {
			t.Errorf("run %s (not the gone runner's) is %s, want pending", id, r.Status)
		}
	}
}

// TestReportRuns: final reports recorded together, each with the answer ReportRun would give. On
// PostgreSQL the group's ends are written with one statement per table.
func TestReportRuns(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testReportRuns(t, open(t))
		})
	}
}

func testReportRuns(t *testing.T, st *sqlstore.Store) {
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{Store: st})
	a := register(t, c, "host-a", crawler())
	var sessions []string
	for range 4 {
		res := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		sessions = append(sessions, res.SessionID)
	}
	w := poll(t, c, a.RunnerID, 4)
	if len(w.Runs) != 4 {
		t.Fatalf("poll: %d runs, want 4", len(w.Runs))
	}
	runs := make([]*orchestrator.Run, 4)
	for _, asg := range w.Runs {
		runs[slices.Index(sessions, asg.Run.SessionID)] = asg.Run
	}
	ended := func(i int, st orchestrator.RunStatus) orchestrator.RunReport {
		return orchestrator.RunReport{RunnerID: a.RunnerID, RunID: runs[i].ID, Status: st,
			Result: &orchestrator.Result{ResultText: fmt.Sprintf(`{"run":%d}`, i), ResultData: json.RawMessage(fmt.Sprintf(`{"run":%d}`, i))}}
	}

	// Every report applies: one transaction records them all.
	for i, err := range c.ReportRuns(ctx, []orchestrator.RunReport{ended(0, orchestrator.RunCompleted), ended(1, orchestrator.RunFailed)}) {
		if err != nil {
			t.Errorf("report %d: %v", i, err)
		}
	}
	// One does not (the run ended already as failed): each report is then answered on its own.
	reps := []orchestrator.RunReport{
		ended(2, orchestrator.RunCompleted),
		ended(1, orchestrator.RunCompleted),
		ended(0, orchestrator.RunCompleted), // a repeat
		{RunnerID: a.RunnerID, RunID: runs[3].ID, Status: orchestrator.RunRunning},
		{RunnerID: a.RunnerID, RunID: runs[3].ID, Status: "finished"},
		ended(2, orchestrator.RunCompleted), // the same report twice in one batch
	}
	errs := c.ReportRuns(ctx, reps)
	for i, want := range []string{"", "run_ended", "", "", "invalid_request", ""} {
		if got := ""; errs[i] != nil {
			got = orchestrator.ErrorCode(errs[i])
			if got != want {
				t.Errorf("report %d: %v (%s), want %q", i, errs[i], got, want)
			}
		} else if want != "" {
			t.Errorf("report %d: nil, want %s", i, want)
		}
	}
	for i, want := range []orchestrator.SessionStatus{orchestrator.SessionCompleted, orchestrator.SessionFailed, orchestrator.SessionCompleted, orchestrator.SessionRunning} {
		s, err := c.GetSession(ctx, sessions[i])
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != want {
			t.Errorf("session %d is %s, want %s", i, s.Status, want)
		}
		if want != orchestrator.SessionRunning && (s.Result == nil || string(s.Result.ResultData) != fmt.Sprintf(`{"run":%d}`, i)) {
			t.Errorf("session %d result %+v", i, s.Result)
		}
	}
	evs, err := c.ListEvents(ctx, sessions[2], 0, 100, 0)
	if err != nil || len(evs) != 2 {
		t.Errorf("session 2 events %v %v, want result and run_ended once", evs, err)
	}
}

// TestStartRunSeesAgentChangesAtOnce: StartRun's agent cache never outlives a change made through the
// same coordinator.
func TestStartRunSeesAgentChangesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCoordinator(t, coordinator.Config{AgentCacheTTL: time.Hour})
	startHelper := func() error {
		_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "hi"})
		return err
	}
	if err := startHelper(); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("StartRun before the agent exists: %v, want ErrNotFound", err)
	}
	createAgent(t, c, "helper") // a miss is not cached: the new agent is found at once
	if err := startHelper(); err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	if _, err := c.UpdateAgent(ctx, "helper", &orchestrator.Blueprint{Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := startHelper(); orchestrator.ErrorCode(err) != "agent_disabled" {
		t.Fatalf("StartRun after disabling: %v, want agent_disabled", err)
	}
	if err := c.DeleteAgent(ctx, "helper"); err != nil {
		t.Fatal(err)
	}
	if err := startHelper(); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("StartRun after deleting: %v, want ErrNotFound", err)
	}

	// A runner's blueprints go with it.
	reg := register(t, c, "host-a", crawler())
	crawl := func() error {
		_, err := c.StartRun(ctx, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://a.example"}`)})
		return err
	}
	if err := crawl(); err != nil {
		t.Fatalf("StartRun web-crawler: %v", err)
	}
	if err := c.DeregisterRunner(ctx, reg.RunnerID); err != nil {
		t.Fatal(err)
	}
	if err := crawl(); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("StartRun after the owner deregistered: %v, want ErrNotFound", err)
	}
}
