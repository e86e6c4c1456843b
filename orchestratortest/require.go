package orchestratortest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentorchestrator/orchestrator"
)

// RequireStartedOpts are what a run must have besides its agent. Zero fields match any run.
type RequireStartedOpts struct {
	// Parameters must be contained in the run's parameters: each member of this JSON object (a struct, a
	// map, or json.RawMessage) must be in the run's, with an equal value; objects nested in it are matched
	// the same way, anything else (arrays, strings, numbers) must be equal. The run's parameters may hold
	// more: the schema's defaults, other members.
	Parameters any
	// Prompt must be the prompt of an AI agent's run (its parameter "prompt").
	Prompt string
	// Metadata must be contained in the run's metadata, as Parameters.
	Metadata any
	// Mode must be the run's mode (sync, async_poll, async_callback).
	Mode orchestrator.Mode
	// Type is start (the default: a new session) or resume.
	Type orchestrator.RunType
	// ParentSessionID must be the session the run's session was started from.
	ParentSessionID string
	// ProjectDir must be the run's project directory.
	ProjectDir string
	// Demands that are set must be the run's; each tag must be among the run's demanded tags.
	Demands *orchestrator.Demands
	// Status must be the run's status now.
	Status orchestrator.RunStatus
}

// ExpectedStart is one run [RequireManyStarted] expects.
type ExpectedStart struct {
	AgentName string
	Opts      *RequireStartedOpts
}

// RequireStarted fails the test unless exactly one run of agentName that matches opts was started, and
// returns that run. It reads the runs c holds when it is called.
func RequireStarted(ctx context.Context, tb TB, c orchestrator.Coordinator, agentName string, opts *RequireStartedOpts) *orchestrator.Run {
	tb.Helper()
	runs := listRuns(ctx, tb, c, agentName)
	var matched []*orchestrator.Run
	var why []string
	for _, r := range runs {
		if m := mismatch(ctx, c, r, opts); m != "" {
			why = append(why, fmt.Sprintf("%s: %s", r.ID, m))
			continue
		}
		matched = append(matched, r)
	}
	switch len(matched) {
	case 1:
		return matched[0]
	case 0:
		if len(runs) == 0 {
			tb.Fatalf("RequireStarted: no run of agent %q was started", agentName)
		} else {
			tb.Fatalf("RequireStarted: none of the %d runs of agent %q matches:\n\t%s", len(runs), agentName, strings.Join(why, "\n\t"))
		}
	default:
		tb.Fatalf("RequireStarted: %d runs of agent %q match, want 1 (%s); use RequireManyStarted", len(matched), agentName, runIDs(matched))
	}
	return nil
}

// RequireNotStarted fails the test if a run of agentName that matches opts was started.
func RequireNotStarted(ctx context.Context, tb TB, c orchestrator.Coordinator, agentName string, opts *RequireStartedOpts) {
	tb.Helper()
	var matched []*orchestrator.Run
	for _, r := range listRuns(ctx, tb, c, agentName) {
		if mismatch(ctx, c, r, opts) == "" {
			matched = append(matched, r)
		}
	}
	if len(matched) > 0 {
		tb.Fatalf("RequireNotStarted: %d runs of agent %q match, want none (%s)", len(matched), agentName, runIDs(matched))
	}
}

// RequireManyStarted fails the test unless the runs started (of the Type each expects: start by default)
// are exactly the expected ones, in the order they were started, and returns them in that order.
func RequireManyStarted(ctx context.Context, tb TB, c orchestrator.Coordinator, expected []ExpectedStart) []*orchestrator.Run {
	tb.Helper()
	types := map[orchestrator.RunType]bool{}
	for _, e := range expected {
		types[runType(e.Opts)] = true
	}
	if len(types) == 0 {
		types[orchestrator.RunTypeStart] = true
	}
	var runs []*orchestrator.Run
	for _, r := range listRuns(ctx, tb, c, "") {
		if types[r.Type] {
			runs = append(runs, r)
		}
	}
	var problems []string
	for i, e := range expected {
		if i >= len(runs) {
			problems = append(problems, fmt.Sprintf("run %d: want agent %q, but only %d runs were started", i+1, e.AgentName, len(runs)))
			break
		}
		r := runs[i]
		if r.AgentName != e.AgentName {
			problems = append(problems, fmt.Sprintf("run %d (%s): agent %q, want %q", i+1, r.ID, r.AgentName, e.AgentName))
		} else if m := mismatch(ctx, c, r, e.Opts); m != "" {
			problems = append(problems, fmt.Sprintf("run %d (%s) of agent %q: %s", i+1, r.ID, r.AgentName, m))
		}
	}
	for i := len(expected); i < len(runs); i++ {
		problems = append(problems, fmt.Sprintf("run %d (%s) of agent %q was not expected", i+1, runs[i].ID, runs[i].AgentName))
	}
	if len(problems) > 0 {
		tb.Fatalf("RequireManyStarted: %d runs started, %d expected:\n\t%s", len(runs), len(expected), strings.Join(problems, "\n\t"))
	}
	return runs
}

// listRuns returns every run of agentName (every run when it is empty), oldest first.
func listRuns(ctx context.Context, tb TB, c orchestrator.Coordinator, agentName string) []*orchestrator.Run {
	tb.Helper()
	const page = 500
	var all []*orchestrator.Run
	f := orchestrator.RunFilter{AgentName: agentName, Limit: page}
	for {
		runs, err := c.ListRuns(ctx, f)
		if err != nil {
			tb.Fatalf("orchestratortest: list the runs: %v", err)
			return nil
		}
		all = append(all, runs...)
		if len(runs) < page {
			return all
		}
		f.AfterID = runs[len(runs)-1].ID
	}
}

func runType(opts *RequireStartedOpts) orchestrator.RunType {
	if opts == nil || opts.Type == "" {
		return orchestrator.RunTypeStart
	}
	return opts.Type
}

// mismatch says why r does not match opts, or "" when it does.
func mismatch(ctx context.Context, c orchestrator.Coordinator, r *orchestrator.Run, opts *RequireStartedOpts) string {
	if t := runType(opts); r.Type != t {
		return fmt.Sprintf("type %s, want %s", r.Type, t)
	}
	if opts == nil {
		return ""
	}
	var why []string
	if opts.Parameters != nil {
		if m := notContained("parameters", opts.Parameters, r.Parameters); m != "" {
			why = append(why, m)
		}
	}
	if opts.Prompt != "" {
		if m := notContained("parameters", map[string]string{"prompt": opts.Prompt}, r.Parameters); m != "" {
			why = append(why, m)
		}
	}
	if opts.Metadata != nil {
		if m := notContained("metadata", opts.Metadata, r.Metadata); m != "" {
			why = append(why, m)
		}
	}
	field := func(name, got, want string) {
		if want != "" && got != want {
			why = append(why, fmt.Sprintf("%s %q, want %q", name, got, want))
		}
	}
	field("mode", string(r.Mode), string(opts.Mode))
	field("status", string(r.Status), string(opts.Status))
	field("project_dir", r.ProjectDir, opts.ProjectDir)
	if opts.ParentSessionID != "" { // runs do not carry it: their sessions do
		s, err := c.GetSession(ctx, r.SessionID)
		if err != nil {
			why = append(why, fmt.Sprintf("its session: %v", err))
		} else {
			field("parent session", s.ParentSessionID, opts.ParentSessionID)
		}
	}
	if d := opts.Demands; d != nil {
		field("demanded hostname", r.Demands.Hostname, d.Hostname)
		field("demanded project_dir", r.Demands.ProjectDir, d.ProjectDir)
		field("demanded executor_type", r.Demands.ExecutorType, d.ExecutorType)
		field("demanded executor_profile", r.Demands.ExecutorProfile, d.ExecutorProfile)
		field("demanded runner_id", r.Demands.RunnerID, d.RunnerID)
		for _, t := range d.Tags {
			if !slices.Contains(r.Demands.Tags, t) {
				why = append(why, fmt.Sprintf("demanded tags %q, want %q among them", r.Demands.Tags, t))
			}
		}
	}
	return strings.Join(why, "; ")
}

// notContained says how want is not contained in got ("" when it is).
func notContained(name string, want any, got json.RawMessage) string {
	raw, err := rawJSON(want)
	if err != nil {
		return fmt.Sprintf("the expected %s cannot be marshalled: %v", name, err)
	}
	var w, g any
	if err := json.Unmarshal(raw, &w); err != nil {
		return fmt.Sprintf("the expected %s are not JSON: %v", name, err)
	}
	if len(got) > 0 {
		if err := json.Unmarshal(got, &g); err != nil {
			return fmt.Sprintf("the run's %s are not JSON: %v", name, err)
		}
	}
	if !contains(w, g) {
		return fmt.Sprintf("%s %s, want %s contained", name, compact(got), compact(raw))
	}
	return ""
}

// contains reports whether want is contained in got: objects member by member, recursively; anything
// else equal.
func contains(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !contains(wv, gv) {
			return false
		}
	}
	return true
}

func compact(raw []byte) string {
	if len(raw) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func runIDs(runs []*orchestrator.Run) string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return strings.Join(ids, ", ")
}
