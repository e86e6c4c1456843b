package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentorchestrator/orchestrator/internal/tags"
)

// Demands are what a run requires of the runner that executes it (docs/lifecycles.md). Every field that
// is set must match; an empty field matches any runner.
type Demands struct {
	// Hostname must equal the runner's hostname.
	Hostname string `json:"hostname,omitempty"`
	// ProjectDir must equal the runner's project directory.
	ProjectDir string `json:"project_dir,omitempty"`
	// ExecutorType must equal the runner's executor type (for example "claude-code").
	ExecutorType string `json:"executor_type,omitempty"`
	// ExecutorProfile must equal the runner's executor profile.
	ExecutorProfile string `json:"executor_profile,omitempty"`
	// Tags must all be held by the runner.
	Tags []string `json:"tags,omitempty"`
	// RunnerID pins the run to one runner. The coordinator sets it for deterministic agents (the runner that
	// announced the blueprint) and for resumed sessions whose executor state lives on one runner.
	RunnerID string `json:"runner_id,omitempty"`
}

// IsZero reports whether d demands nothing.
func (d Demands) IsZero() bool {
	return d.Hostname == "" && d.ProjectDir == "" && d.ExecutorType == "" && d.ExecutorProfile == "" &&
		len(d.Tags) == 0 && d.RunnerID == ""
}

// Validate checks the demanded values are well-formed.
func (d Demands) Validate() error {
	for _, tag := range d.Tags {
		if err := tags.Validate(tag); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"hostname", d.Hostname}, {"project_dir", d.ProjectDir},
		{"executor_type", d.ExecutorType}, {"executor_profile", d.ExecutorProfile}, {"runner_id", d.RunnerID}} {
		if len(f.v) > 4096 || strings.ContainsRune(f.v, 0) {
			return fmt.Errorf("%s is not valid", f.name)
		}
	}
	return nil
}

// Merge adds more's constraints to d. Demands only ever narrow: tags are united, and a field set on both
// sides must agree — a request may add a constraint but never loosen or replace one (docs/decisions.md).
func (d Demands) Merge(more Demands) (Demands, error) {
	out := d
	out.Tags = slices.Clone(d.Tags)
	pairs := []struct {
		name string
		dst  *string
		add  string
	}{
		{"hostname", &out.Hostname, more.Hostname},
		{"project_dir", &out.ProjectDir, more.ProjectDir},
		{"executor_type", &out.ExecutorType, more.ExecutorType},
		{"executor_profile", &out.ExecutorProfile, more.ExecutorProfile},
		{"runner_id", &out.RunnerID, more.RunnerID},
	}
	for _, p := range pairs {
		switch {
		case p.add == "" || p.add == *p.dst:
		case *p.dst == "":
			*p.dst = p.add
		default:
			return d, Errorf(ErrInvalid, "demands_conflict",
				"demanded %s %q conflicts with %q already demanded", p.name, p.add, *p.dst)
		}
	}
	for _, t := range more.Tags {
		if !slices.Contains(out.Tags, t) {
			out.Tags = append(out.Tags, t)
		}
	}
	slices.Sort(out.Tags)
	return out, nil
}

// String describes the demands for error messages ("hostname=web-1 tags=[gpu]").
func (d Demands) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("runner_id", d.RunnerID)
	add("hostname", d.Hostname)
	add("project_dir", d.ProjectDir)
	add("executor_type", d.ExecutorType)
	add("executor_profile", d.ExecutorProfile)
	if len(d.Tags) > 0 {
		parts = append(parts, "tags=["+strings.Join(d.Tags, ",")+"]")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// Matches reports whether runner r can execute a run of agent type t with demands d. Stores implement the
// same rule in their claim query; this is the reference the conformance suite checks them against.
func (d Demands) Matches(t AgentType, r *RunnerInfo) bool {
	if d.RunnerID != "" && d.RunnerID != r.ID {
		return false
	}
	if t != AgentTypeAgent && t != AgentTypeDeterministic {
		return false // only known agent types are ever claimed
	}
	if t == AgentTypeAgent && !r.AcceptsAgents {
		return false
	}
	if t == AgentTypeDeterministic && d.RunnerID == "" {
		return false // a deterministic run always names the runner that owns its blueprint
	}
	if (d.Hostname != "" && d.Hostname != r.Hostname) ||
		(d.ProjectDir != "" && d.ProjectDir != r.ProjectDir) ||
		(d.ExecutorType != "" && d.ExecutorType != r.ExecutorType) ||
		(d.ExecutorProfile != "" && d.ExecutorProfile != r.ExecutorProfile) {
		return false
	}
	for _, t := range d.Tags {
		if !slices.Contains(r.Tags, t) {
			return false
		}
	}
	// Tagged-only runners take only runs that demand at least one of their tags; since every demanded tag is
	// held (checked above), that is: the run demands some tag. A run pinned to the runner (its own
	// deterministic blueprint, a resume of its session) is the runner's own business and always qualifies.
	if r.RequireMatchingTags && len(d.Tags) == 0 && d.RunnerID == "" {
		return false
	}
	return true
}
