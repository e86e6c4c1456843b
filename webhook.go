package orchestrator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Webhook is the durable delivery of a session's outcome to the callback_url a caller gave when it
// started the run. It is written in the same transaction that ends the run, so it survives a crash, and is
// delivered at least once: receivers deduplicate by the X-Orchestrator-Delivery header (the webhook id).
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

// Webhook request headers.
const (
	// HeaderWebhookSignature carries "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)).
	HeaderWebhookSignature = "X-Orchestrator-Signature"
	// HeaderWebhookTimestamp is the Unix time (seconds) the request was signed at.
	HeaderWebhookTimestamp = "X-Orchestrator-Timestamp"
	// HeaderWebhookDelivery is the webhook id: the same on every retry of one delivery.
	HeaderWebhookDelivery = "X-Orchestrator-Delivery"
)

// SignWebhook returns the signature header value for body signed at timestamp (Unix seconds). The
// timestamp is part of the signed text so that a captured request cannot be replayed later unnoticed.
func SignWebhook(secret []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook checks a received webhook: the signature header value, the timestamp header value and the
// raw body, against the shared secret. Requests signed more than maxAge ago (or that far in the future) are
// refused; maxAge <= 0 means 5 minutes. The comparison is constant-time.
func VerifyWebhook(secret []byte, signature, timestamp string, body []byte, maxAge time.Duration) error {
	if maxAge <= 0 {
		maxAge = 5 * time.Minute
	}
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return errors.New("webhook: bad timestamp")
	}
	age := time.Since(time.Unix(ts, 0))
	if age > maxAge || age < -maxAge {
		return fmt.Errorf("webhook: timestamp is %s away from now", age.Round(time.Second))
	}
	want := SignWebhook(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(strings.TrimSpace(signature))) {
		return errors.New("webhook: signature mismatch")
	}
	return nil
}
