package orchestrator

import (
	"time"
)

// WebhookPayload is the JSON body POSTed to a callback_url when the run ends ("session.ended"), and when
// the session opens an input request ("input_requested", with InputRequest and no EndedAt).
type WebhookPayload struct {
	Event     string        `json:"event"` // "session.ended" or "input_requested"
	SessionID string        `json:"session_id"`
	RunID     string        `json:"run_id"`
	AgentName string        `json:"agent_name"`
	Status    SessionStatus `json:"status"`
	Result    *Result       `json:"result,omitempty"`
	Error     string        `json:"error,omitempty"`
	EndedAt   time.Time     `json:"ended_at,omitzero"`
	// InputRequest is the request an input_requested webhook announces.
	InputRequest *InputRequest `json:"input_request,omitempty"`
}
