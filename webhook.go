package orchestrator

import (
	"time"
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
