package orchestrator

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDemandsMerge(t *testing.T) {
	t.Parallel()
	base := Demands{Hostname: "web-1", ExecutorType: "claude-code", Tags: []string{"py", "gpu"}}
	tests := []struct {
		name     string
		d, more  Demands
		want     Demands
		conflict string // the field named in the error; empty means success
	}{
		{name: "nothing added", d: base, more: Demands{}, want: Demands{Hostname: "web-1", ExecutorType: "claude-code", Tags: []string{"gpu", "py"}}},
		{name: "both empty", d: Demands{}, more: Demands{}, want: Demands{}},
		{
			name: "new constraints narrow",
			d:    base,
			more: Demands{ProjectDir: "/src", ExecutorProfile: "fast", RunnerID: "lnch_1", Tags: []string{"big"}},
			want: Demands{Hostname: "web-1", ProjectDir: "/src", ExecutorType: "claude-code", ExecutorProfile: "fast",
				RunnerID: "lnch_1", Tags: []string{"big", "gpu", "py"}},
		},
		{
			name: "repeating a constraint is fine",
			d:    base,
			more: Demands{Hostname: "web-1", ExecutorType: "claude-code", Tags: []string{"gpu", "gpu"}},
			want: Demands{Hostname: "web-1", ExecutorType: "claude-code", Tags: []string{"gpu", "py"}},
		},
		{name: "empty side takes the other", d: Demands{}, more: base, want: Demands{Hostname: "web-1", ExecutorType: "claude-code", Tags: []string{"gpu", "py"}}},
		{name: "hostname conflict", d: base, more: Demands{Hostname: "web-2"}, conflict: "hostname"},
		{name: "executor_type conflict", d: base, more: Demands{ExecutorType: "process"}, conflict: "executor_type"},
		{name: "project_dir conflict", d: Demands{ProjectDir: "/a"}, more: Demands{ProjectDir: "/b"}, conflict: "project_dir"},
		{name: "executor_profile conflict", d: Demands{ExecutorProfile: "a"}, more: Demands{ExecutorProfile: "b"}, conflict: "executor_profile"},
		{name: "runner_id conflict", d: Demands{RunnerID: "lnch_1"}, more: Demands{RunnerID: "lnch_2"}, conflict: "runner_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := Demands{Hostname: tt.d.Hostname, Tags: append([]string(nil), tt.d.Tags...)}
			got, err := tt.d.Merge(tt.more)
			if tt.conflict != "" {
				if err == nil {
					t.Fatalf("%+v.Merge(%+v) = %+v, want a conflict on %s", tt.d, tt.more, got, tt.conflict)
				}
				if !errors.Is(err, ErrInvalid) || ErrorCode(err) != "demands_conflict" || !strings.Contains(err.Error(), tt.conflict) {
					t.Errorf("%+v.Merge(%+v) error %v (code %q); want demands_conflict naming %s, wrapping ErrInvalid",
						tt.d, tt.more, err, ErrorCode(err), tt.conflict)
				}
				if !reflect.DeepEqual(got, tt.d) {
					t.Errorf("%+v.Merge(%+v) returned %+v with its error, want the receiver unchanged", tt.d, tt.more, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%+v.Merge(%+v): %v", tt.d, tt.more, err)
			}
			if !reflect.DeepEqual(got, tt.want) && !(len(got.Tags) == 0 && len(tt.want.Tags) == 0 && got.String() == tt.want.String()) {
				t.Errorf("%+v.Merge(%+v)\ngot  %+v\nwant %+v", tt.d, tt.more, got, tt.want)
			}
			if !reflect.DeepEqual(tt.d.Tags, before.Tags) {
				t.Errorf("Merge changed the receiver's tags: %v, was %v", tt.d.Tags, before.Tags)
			}
		})
	}
}

func TestDemandsMatches(t *testing.T) {
	t.Parallel()
	runner := &RunnerInfo{
		ID: "lnch_1", Hostname: "web-1", ProjectDir: "/src", ExecutorType: "claude-code", ExecutorProfile: "fast",
		Tags: []string{"gpu", "py"}, AcceptsAgents: true,
	}
	tagged := *runner
	tagged.RequireMatchingTags = true
	noAgents := *runner
	noAgents.AcceptsAgents = false

	tests := []struct {
		name   string
		d      Demands
		typ    AgentType
		runner *RunnerInfo
		want   bool
	}{
		{"no demands, AI run", Demands{}, AgentTypeAgent, runner, true},
		{"every field matching", Demands{RunnerID: "lnch_1", Hostname: "web-1", ProjectDir: "/src", ExecutorType: "claude-code",
			ExecutorProfile: "fast", Tags: []string{"py", "gpu"}}, AgentTypeAgent, runner, true},
		{"runner_id of another runner", Demands{RunnerID: "lnch_2"}, AgentTypeAgent, runner, false},
		{"hostname", Demands{Hostname: "web-2"}, AgentTypeAgent, runner, false},
		{"project_dir", Demands{ProjectDir: "/other"}, AgentTypeAgent, runner, false},
		{"executor_type", Demands{ExecutorType: "process"}, AgentTypeAgent, runner, false},
		{"executor_profile", Demands{ExecutorProfile: "slow"}, AgentTypeAgent, runner, false},
		{"subset of tags", Demands{Tags: []string{"gpu"}}, AgentTypeAgent, runner, true},
		{"a tag the runner lacks", Demands{Tags: []string{"gpu", "tpu"}}, AgentTypeAgent, runner, false},
		{"runner that takes no AI runs", Demands{}, AgentTypeAgent, &noAgents, false},
		{"deterministic run names its runner", Demands{RunnerID: "lnch_1"}, AgentTypeDeterministic, &noAgents, true},
		{"deterministic run without a runner", Demands{}, AgentTypeDeterministic, runner, false},
		{"deterministic run for another runner", Demands{RunnerID: "lnch_2"}, AgentTypeDeterministic, runner, false},
		{"require_matching_tags, no tag demanded", Demands{}, AgentTypeAgent, &tagged, false},
		{"require_matching_tags, held tag demanded", Demands{Tags: []string{"py"}}, AgentTypeAgent, &tagged, true},
		{"require_matching_tags, unheld tag demanded", Demands{Tags: []string{"tpu"}}, AgentTypeAgent, &tagged, false},
		{"require_matching_tags, pinned deterministic run", Demands{RunnerID: tagged.ID}, AgentTypeDeterministic, &tagged, true},
	}
	for _, tt := range tests {
		if got := tt.d.Matches(tt.typ, tt.runner); got != tt.want {
			t.Errorf("%s: %+v.Matches(%s, %+v) = %v, want %v", tt.name, tt.d, tt.typ, tt.runner, got, tt.want)
		}
	}
}

func TestDemandsValidateAndString(t *testing.T) {
	t.Parallel()
	for _, d := range []Demands{
		{Tags: []string{"has space"}},
		{Tags: []string{"a,b"}},
		{Tags: []string{""}},
		{Hostname: "a\x00b"},
		{ProjectDir: strings.Repeat("x", 4097)},
	} {
		if err := d.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil, want an error", d)
		}
	}
	if err := (Demands{Hostname: "h", Tags: []string{"gpu"}}).Validate(); err != nil {
		t.Errorf("Validate(valid demands): %v", err)
	}

	if got := (Demands{}).String(); got != "nothing" {
		t.Errorf("Demands{}.String() = %q, want %q", got, "nothing")
	}
	d := Demands{Hostname: "web-1", Tags: []string{"gpu", "py"}, RunnerID: "lnch_1"}
	if got, want := d.String(), "runner_id=lnch_1 hostname=web-1 tags=[gpu,py]"; got != want {
		t.Errorf("%+v.String() = %q, want %q", d, got, want)
	}
	for _, tc := range []struct {
		d    Demands
		want bool
	}{{Demands{}, true}, {Demands{Tags: []string{}}, true}, {d, false}, {Demands{ExecutorProfile: "p"}, false}} {
		if got := tc.d.IsZero(); got != tc.want {
			t.Errorf("%+v.IsZero() = %v, want %v", tc.d, got, tc.want)
		}
	}
}
