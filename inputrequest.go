package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// InputRequest is a question a session waits on a person to answer: an approval gate in front of a run
// ([ApprovalPolicy], [StartRunParams].RequireApproval), or a question an agent asked while it ran
// ([HumanInput.AskHuman]). While a session has an open request its status is [SessionWaiting].
//
// It is written by the coordinator in the transaction that makes the session wait, and answered once: the
// answer is a guarded update from open, so of concurrent answers exactly one is written and the others
// get ErrConflict (code request_closed). docs/human-input.md describes the whole flow.
type InputRequest struct {
	ID        string `json:"request_id"`
	SessionID string `json:"session_id"`
	// RunID is the run the request belongs to: the run an approval holds back, or the run that asked.
	RunID     string           `json:"run_id,omitempty"`
	AgentName string           `json:"agent_name,omitempty"`
	Kind      InputRequestKind `json:"kind"`
	// Prompt is what the person is asked, in plain text.
	Prompt string `json:"prompt"`
	// Schema is the JSON Schema the answer must match. An approval's is always [ApprovalSchema].
	Schema json.RawMessage    `json:"schema"`
	Status InputRequestStatus `json:"status"`
	// Answer is the answer once it is answered: an object matching Schema.
	Answer json.RawMessage `json:"answer,omitempty"`
	// AnsweredBy names who answered: the role of the credential that answered ("admin", "client"), or
	// what the answer came through ("mcp", "link"), with the name the answerer gave after a colon when it
	// gave one.
	AnsweredBy string    `json:"answered_by,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// ExpiresAt is when an open request expires; nil when it waits until it is answered or its session
	// ends.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// ClosedAt is when it was answered, expired or cancelled.
	ClosedAt *time.Time `json:"closed_at,omitempty"`
}

// InputRequestKind says what an input request asks.
type InputRequestKind string

const (
	// InputApproval holds a run back until a person approves it; its answer is an [Approval].
	InputApproval InputRequestKind = "approval"
	// InputQuestion is a question an agent asked, answered with an object matching its schema.
	InputQuestion InputRequestKind = "question"
)

// InputRequestStatus is the state of an input request:
//
//	open → answered | expired | cancelled
//
// A request is cancelled when its session ends (stopped, or its run ended) before anyone answered.
type InputRequestStatus string

const (
	InputOpen      InputRequestStatus = "open"
	InputAnswered  InputRequestStatus = "answered"
	InputExpired   InputRequestStatus = "expired"
	InputCancelled InputRequestStatus = "cancelled"
)

// ApprovalSchema is the schema of every approval's answer: {"approved": true|false, "comment"?: "…"}.
const ApprovalSchema = `{"type":"object","properties":{"approved":{"type":"boolean","description":"true runs it, false refuses it"},"comment":{"type":"string","description":"why; a refusal's comment becomes the session's error"}},"required":["approved"],"additionalProperties":false}`

// Approval is the answer to an approval request.
type Approval struct {
	Approved bool   `json:"approved"`
	Comment  string `json:"comment,omitempty"`
}

// ApprovalPolicy is a blueprint's approval gate: when Required, every session of the agent is created
// waiting for a person's approval, and no runner gets its run until it is approved.
type ApprovalPolicy struct {
	Required bool `json:"required"`
	// TimeoutSeconds, when positive, fails the session with error code approval_timeout when nobody
	// answered in time. Zero waits until someone answers or the session is stopped. At most 30 days.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// MaxInputTimeout bounds how long an input request may stay open: 30 days.
const MaxInputTimeout = 30 * 24 * time.Hour

// Timeout returns TimeoutSeconds as a duration (zero for none).
func (p *ApprovalPolicy) Timeout() time.Duration {
	if p == nil || p.TimeoutSeconds <= 0 {
		return 0
	}
	return time.Duration(p.TimeoutSeconds * float64(time.Second))
}

// AskParams is a question an agent asks a person (POST /sessions/{id}/input-requests).
type AskParams struct {
	// SessionID is the asking session; its run must be running.
	SessionID string `json:"-"`
	Prompt    string `json:"prompt"`
	// Schema is the JSON Schema of the answer; it must describe an object. Empty means
	// {"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}: one line of text.
	Schema json.RawMessage `json:"schema,omitempty"`
	// TimeoutSeconds, when positive, expires the question after this long; the agent then reads status
	// expired and goes on without an answer. Zero waits until answered or the session ends.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// DefaultQuestionSchema is the answer schema of a question asked without one.
const DefaultQuestionSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`

// AnswerParams answers an input request (POST /input-requests/{id}/answer).
type AnswerParams struct {
	// Answer must match the request's schema.
	Answer json.RawMessage `json:"answer"`
	// AnsweredBy is recorded with the answer; the HTTP API sets it from the caller's credential.
	AnsweredBy string `json:"-"`
}

// InputRequestFilter selects input requests, oldest first.
type InputRequestFilter struct {
	Statuses  []InputRequestStatus
	SessionID string
	// ExpiresBefore selects requests whose ExpiresAt is set and before it (the expiry sweep).
	ExpiresBefore time.Time
	AfterID       string
	Limit         int
}

// HumanInput is the part of a Coordinator that lets sessions wait for people. The in-process coordinator
// and the HTTP client implement it; callers reach it with a type assertion on their Coordinator.
type HumanInput interface {
	// AskHuman opens a question for the session, which must be running: the session becomes waiting
	// until it is answered, expires or the session ends.
	AskHuman(ctx context.Context, p AskParams) (*InputRequest, error)
	// GetInputRequest returns a request; when wait is positive and the request is open, it waits up to
	// wait for it to close and returns it as it is then.
	GetInputRequest(ctx context.Context, id string, wait time.Duration) (*InputRequest, error)
	// ListInputRequests lists requests, oldest first.
	ListInputRequests(ctx context.Context, f InputRequestFilter) ([]*InputRequest, error)
	// AnswerInputRequest answers an open request. An answer that does not match the schema is ErrInvalid
	// (code answer_validation_failed, with validation_errors); a request no longer open is ErrConflict
	// (code request_closed).
	AnswerInputRequest(ctx context.Context, id string, p AnswerParams) (*InputRequest, error)
}
