// Package storetest is the conformance suite for [store.Store] implementations. Every
// implementation runs it unchanged:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return newMyStore(t) })
//	}
//
//	func BenchmarkStore(b *testing.B) {
//		storetest.Bench(b, func(tb testing.TB) store.Store { return newMyStore(tb) })
//	}
//
// newStore must return a fresh, empty store isolated from every other store it returns (subtests run in
// parallel) and arrange for it to be closed when the test ends. A change to the Store contract changes
// this suite.
//
// Beyond the rules in the Store documentation, the suite holds stores to these: records come back equal
// (reflect.DeepEqual) to what was stored, JSON payloads byte for byte and times in UTC; lists that find
// nothing are empty, not errors; a cursor (AfterID) naming a record that does not exist is ErrNotFound;
// deleting a missing record is ErrNotFound.
//
// With -short, the stress tests run at a tenth of their size; with -race, the concurrency tests at a
// quarter of theirs.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
)

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	suites := []struct {
		name string
		fn   func(*testing.T, func(*testing.T) store.Store)
	}{
		{"Runners", testRunners},
		{"Agents", testAgents},
		{"Sessions", testSessions},
		{"Runs", testRuns},
		{"Claim", testClaim},
		{"Events", testEvents},
		{"Callbacks", testCallbacks},
		{"Webhooks", testWebhooks},
		{"Tx", testTx},
		{"Times", testTimes},
		{"Retention", testRetention},
		{"Briefs", testBriefs},
		{"BatchCreate", testBatchCreate},
		{"ConcurrentCreations", testConcurrentCreations},
		{"GroupedEnds", testGroupedEnds},
		{"Submission", testSubmission},
		{"Schedules", testSchedules},
		{"Tree", testTree},
		{"Cache", testCache},
		{"RateLimit", testRateLimit},
		{"Artifacts", testArtifacts},
		{"InputRequests", testInputRequests},
		{"Usage", testUsage},
		{"SessionTree", testSessionTree},
		{"Retries", testRetries},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.fn(t, newStore)
		})
	}
}

// ctx returns a context that ends with the test.
func ctx(t testing.TB) context.Context {
	return t.Context()
}

// base is a fixed, microsecond-precise starting time, so that fixtures are ordered by the times the
// tests give them rather than by the clock.
var base = time.Date(2026, 11, 22, 8, 30, 0, 123456000, time.UTC)

// at returns base plus n milliseconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// wantErr fails the test unless err matches target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

// must fails the test on err.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// equal fails the test unless got and want are deeply equal; it prints both as JSON (plus the
// json:"-" fields' values through %+v).
func equal(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// Fixtures. Each returns a record with every field set that the store must keep, so round trips check
// them all.

func newRunner(id string) *orchestrator.RunnerInfo {
	return &orchestrator.RunnerInfo{
		ID:                  id,
		Hostname:            "host-" + id,
		ProjectDir:          "/srv/" + id,
		ExecutorType:        "deterministic",
		ExecutorProfile:     "default",
		Executor:            json.RawMessage(`{"kind":"subprocess","max_output":1048576}`),
		Tags:                []string{"linux", "amd64"},
		RequireMatchingTags: false,
		MaxConcurrent:       4,
		AcceptsAgents:       true,
		Status:              orchestrator.RunnerOnline,
		RegisteredAt:        base,
		LastHeartbeatAt:     base,
	}
}

func newSession(id string, created time.Time) *orchestrator.Session {
	return &orchestrator.Session{
		ID:           id,
		AgentName:    "web-crawler",
		AgentType:    orchestrator.AgentTypeDeterministic,
		Status:       orchestrator.SessionPending,
		ProjectDir:   "/srv/project",
		Parameters:   json.RawMessage(`{"url": "https://example.com", "depth": 2}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Demands:      orchestrator.Demands{Hostname: "web-1", Tags: []string{"gpu", "linux"}, RunnerID: "lnch_a"},
		Metadata:     json.RawMessage(`{"env":{"A":"1"}}`),
		CreatedAt:    created,
		UpdatedAt:    created,
	}
}

func newRun(id, sessionID string, created time.Time) *orchestrator.Run {
	return &orchestrator.Run{
		ID:           id,
		SessionID:    sessionID,
		AgentName:    "web-crawler",
		AgentType:    orchestrator.AgentTypeAgent,
		Type:         orchestrator.RunTypeStart,
		Mode:         orchestrator.ModeAsyncPoll,
		Status:       orchestrator.RunPending,
		Parameters:   json.RawMessage(`{"prompt":"crawl \u00e9 <a> & b"}`),
		ProjectDir:   "/srv/project",
		OutputSchema: json.RawMessage(`{"type":"object","required":["pages"]}`),
		Metadata:     json.RawMessage(`{"trace":"abc"}`),
		CallbackURL:  "https://caller.example/hook",
		CreatedAt:    created,
	}
}

func newAgent(name string, typ orchestrator.AgentType, runnerID string, tags ...string) *store.Agent {
	bp := &orchestrator.Blueprint{
		Name:             name,
		Type:             typ,
		Description:      "does " + name,
		Tags:             tags,
		ParametersSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`),
	}
	if typ == orchestrator.AgentTypeDeterministic {
		bp.Command = "crawl --fast"
		bp.Env = map[string]string{"MODE": "fast"}
		bp.TimeoutSeconds = 30
	} else {
		bp.SystemPrompt = "You are " + name
		bp.ExecutorConfig = map[string]any{"model": "sonnet"}
	}
	return &store.Agent{Name: name, Blueprint: bp, RunnerID: runnerID, CreatedAt: base, UpdatedAt: base}
}

// ids returns the ids of runs, sessions or callbacks, for comparing lists.
func runIDs(rs []*orchestrator.Run) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func sessionIDs(ss []*orchestrator.Session) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func runnerIDs(rs []*orchestrator.RunnerInfo) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func agentNames(as []*store.Agent) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

func callbackIDs(cs []*orchestrator.Callback) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// scale returns n, or a tenth of it (at least 1) with -short.
func scale(n int) int {
	if testing.Short() {
		return max(1, n/10)
	}
	return n
}

// reversed returns a reversed copy of ids.
func reversed(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// concurrencyScale is scale for the tests of what concurrent callers do, and a quarter of that under the
// race detector: it makes a pure-Go SQLite about fifteen times slower, while a quarter of the operations
// still has the callers race, which is what those tests check and what the detector watches.
func concurrencyScale(n int) int {
	if raceDetector {
		return max(1, scale(n)/4)
	}
	return scale(n)
}

// utcNow is the time as a coordinator records it: UTC, truncated to microseconds.
func utcNow() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// runStatusesBefore returns the statuses from which a run may move to next: the guard a coordinator
// gives the update that moves it.
func runStatusesBefore(next orchestrator.RunStatus) []orchestrator.RunStatus {
	var from []orchestrator.RunStatus
	for _, s := range []orchestrator.RunStatus{orchestrator.RunPending, orchestrator.RunClaimed, orchestrator.RunRunning} {
		if s.CanTransition(next) {
			from = append(from, s)
		}
	}
	return from
}

// sessionStatusesBefore returns the statuses from which a session may move to next.
func sessionStatusesBefore(next orchestrator.SessionStatus) []orchestrator.SessionStatus {
	var from []orchestrator.SessionStatus
	for _, s := range []orchestrator.SessionStatus{orchestrator.SessionPending, orchestrator.SessionRunning,
		orchestrator.SessionCompleted, orchestrator.SessionFailed, orchestrator.SessionStopped} {
		if s.CanTransition(next) {
			from = append(from, s)
		}
	}
	return from
}
