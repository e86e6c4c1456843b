package store

import (
	"encoding/json"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// Agent is an agent as the coordinator records it: a blueprint under its registered name, bound to the
// runner that owns it (deterministic agents) or to the coordinator's registry (AI agents). Callers see
// it as an [orchestrator.AgentInfo].
type Agent struct {
	// Name is the registered name callers use; it differs from Blueprint.Name after a collision
	// ("web-crawler@lnch_…").
	Name      string                  `json:"name"`
	Blueprint *orchestrator.Blueprint `json:"blueprint"`
	// RunnerID is the owning runner, empty for registry agents.
	RunnerID  string    `json:"runner_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Type is the agent's type.
func (a *Agent) Type() orchestrator.AgentType { return a.Blueprint.Type }

// IdempotencyKey is a create remembered under the key its caller gave: a digest of the request, to tell a
// retry from a different request, and the answer.
type IdempotencyKey struct {
	Key         string
	RequestHash string
	RunID       string
	SessionID   string
	CreatedAt   time.Time
}

// Webhook is the durable delivery of a session's outcome to the callback_url a caller gave when it
// started the run. It is written in the same transaction that ends the run, so it survives a crash, and is
// delivered at least once, signed as Standard Webhooks specifies: receivers verify it with package
// [github.com/agentorchestrator/orchestrator/webhook] and deduplicate by its webhook-id header (the
// webhook's ID). Its body is an [orchestrator.WebhookPayload].
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

// Artifact is an artifact's record: what callers see, and Key, where its bytes are in the coordinator's
// bucket. Each upload gets a fresh key, so that a record never points at bytes that are still being
// written, and a replaced or deleted artifact's key goes to the garbage queue
// ([Store.ListArtifactGarbage]) for the coordinator to delete from the bucket.
type Artifact struct {
	orchestrator.Artifact
	Key string
}
