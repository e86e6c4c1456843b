package orchestrator

import (
	"encoding/json"
	"time"
)

// Webhook is the durable delivery of a session's outcome to the callback_url a caller gave when it
// started the run. It is written in the same transaction that ends the run, so it survives a crash, and is
// delivered at least once, signed as Standard Webhooks specifies: receivers verify it with package
// [github.com/agentorchestrator/orchestrator/webhook] and deduplicate by its webhook-id header (the
// webhook's ID).
type Webhook struct {
	ID        string          `json:"id"`
	URL       string          `json:"url"`
	SessionID string          `json:"session_id"`
	RunID     string          `json:"run_id"`
	Payload   json.RawMessage `json:"payload"`
	// Status is pending, delivered or failed (gave up after the last attempt).
	Status WebhookStatus `json:"status"`
	// Attempts counts the deliveries tried so far.
	Attempts int `json:"attempts"`
	// NextAttemptAt is when the next delivery is due; while one is in flight it is the end of its lease.
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// WebhookStatus is the state of a webhook delivery.
type WebhookStatus string

const (
	WebhookPending   WebhookStatus = "pending"
	WebhookDelivered WebhookStatus = "delivered"
	WebhookFailed    WebhookStatus = "failed"
)

// WebhookPayload is the JSON body POSTed to a callback_url when the run ends.
type WebhookPayload struct {
	Event     string        `json:"event"` // "session.ended"
	SessionID string        `json:"session_id"`
	RunID     string        `json:"run_id"`
	AgentName string        `json:"agent_name"`
	Status    SessionStatus `json:"status"`
	Result    *Result       `json:"result,omitempty"`
	Error     string        `json:"error,omitempty"`
	EndedAt   time.Time     `json:"ended_at"`
}
