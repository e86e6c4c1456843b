package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/agentorchestrator/orchestrator/webhook"
)

// A receiver of the coordinator's callback_url deliveries. The secret is the coordinator's
// -webhook-secret.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body) // verify the raw body, before decoding it
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p struct {
			SessionID string `json:"session_id"`
			Status    string `json:"status"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// A delivery may come more than once: deduplicate by its id.
		fmt.Printf("delivery %s: session %s %s\n", r.Header.Get(webhook.HeaderID), p.SessionID, p.Status)
	})
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	// What the coordinator sends.
	send := func(id string, body []byte, sign bool) int {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
		now := time.Now()
		sig, _ := webhook.Sign(secret, id, now, body)
		if !sign {
			sig = "v1,forged"
		}
		req.Header.Set(webhook.HeaderID, id)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := []byte(`{"event":"session.ended","session_id":"ses_1","status":"completed"}`)
	fmt.Println(send("wh_1", body, true))
	fmt.Println(send("wh_2", body, false))
	// Output:
	// delivery wh_1: session ses_1 completed
	// 200
	// 401
}
