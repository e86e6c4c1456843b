package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// Rerunner is a Coordinator that starts ended sessions again: a person who has fixed what made a session
// fail (a flaky host, a bad input, a blueprint) runs it again without typing its parameters again. The
// in-process coordinator and the HTTP client implement it.
type Rerunner interface {
	// RerunSession starts a new session of the ended session id's agent with its parameters, after
	// applying p.Parameters to them as a JSON merge patch, and validates them again as StartRun does.
	// The new session carries RerunOf = id. A session that has not ended is ErrConflict (code
	// session_active); an unknown one ErrNotFound.
	RerunSession(ctx context.Context, id string, p RerunParams) (*StartRunResult, error)
	// RerunSessions re-runs the ended sessions that f selects, newest first, each as RerunSession would
	// with no patch. One session that cannot be re-run (its agent is gone, its parameters no longer
	// validate) does not stop the others: it is listed in the answer's Errors. With f.DryRun set it
	// only says which sessions it would re-run.
	RerunSessions(ctx context.Context, f RerunFilter) (*RerunBatch, error)
}

// RerunParams is a request to re-run one session (POST /sessions/{id}/rerun).
type RerunParams struct {
	// Parameters is an RFC 7386 JSON merge patch over the original session's parameters: a member
	// replaces the original's, a null removes it, and the rest is kept. Empty keeps them all.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// MaxRerunBatch is the most sessions one RerunSessions call re-runs, and its default limit.
const MaxRerunBatch = 1000

// RerunFilter selects the sessions RerunSessions re-runs (POST /sessions/rerun).
type RerunFilter struct {
	// Statuses are the ended statuses to select: completed, failed or stopped. Empty means failed.
	Statuses []SessionStatus `json:"status,omitempty"`
	// AgentName selects one agent's sessions; empty selects every agent's.
	AgentName string `json:"agent_name,omitempty"`
	// CreatedAfter selects sessions created after it; nil selects them however old.
	CreatedAfter *time.Time `json:"created_after,omitempty"`
	// Limit bounds how many sessions are selected, the newest first: 1 to MaxRerunBatch; zero means
	// MaxRerunBatch.
	Limit int `json:"limit,omitempty"`
	// DryRun selects without re-running: the answer lists the sessions a real call would re-run.
	DryRun bool `json:"dry_run,omitempty"`
}

// RerunBatch is the answer to RerunSessions.
type RerunBatch struct {
	// Count is how many sessions were re-run (a dry run: would be).
	Count int `json:"count"`
	// SessionIDs are the sessions that were re-run (a dry run: would be), newest first.
	SessionIDs []string `json:"session_ids"`
	// Reruns are the new sessions, one per entry of SessionIDs, in the same order. Empty for a dry run.
	Reruns []*RerunOutcome `json:"reruns,omitempty"`
	// Errors are the selected sessions that could not be re-run, and why. They are not counted.
	Errors []*RerunFailure `json:"errors,omitempty"`
}

// RerunOutcome is one re-run of a batch: the new session and its first run.
type RerunOutcome struct {
	RerunOf   string `json:"rerun_of"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

// RerunFailure is one session of a batch that could not be re-run.
type RerunFailure struct {
	SessionID string `json:"session_id"`
	// Code is the machine code of the error (as an API error's "error"), Message its text.
	Code    string `json:"error"`
	Message string `json:"message"`
}
