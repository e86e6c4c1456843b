package httpapi

import (
	"net/http"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// POST /runs takes a retry policy; a bad one is 400 invalid_retry_policy naming the field, and the
// session carries its attempts.
func TestStartRunRetryPolicy(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.client(t, adminTok).CreateAgent(ctx, aiAgent("writer")))
	for _, tc := range []struct{ body, field string }{
		{`{"max_attempts":0}`, "max_attempts"},
		{`{"max_attempts":101}`, "max_attempts"},
		{`{"max_attempts":2,"initial_interval_seconds":-1}`, "initial_interval_seconds"},
		{`{"max_attempts":2,"backoff_coefficient":0.5}`, "backoff_coefficient"},
		{`{"max_attempts":2,"max_interval_seconds":-3}`, "max_interval_seconds"},
	} {
		rec := serve(env.handler, http.MethodPost, "/runs", clientTok, []byte(`{"agent_name":"writer","prompt":"hi","retry":`+tc.body+`}`))
		body := errorBody(t, rec, http.StatusBadRequest)
		if body["error"] != "invalid_retry_policy" || !strings.Contains(body["message"].(string), tc.field) {
			t.Errorf("retry %s: %v, want invalid_retry_policy naming %s", tc.body, body, tc.field)
		}
	}
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.client(t, clientTok).StartRun(ctx, orchestrator.StartRunParams{
		AgentName: "writer", Prompt: "hi", Retry: &orchestrator.RetryPolicy{MaxAttempts: 4}}))
	s := must[*orchestrator.Session](t, "GetSession")(env.client(t, clientTok).GetSession(ctx, res.SessionID))
	if s.Attempt != 1 || s.MaxAttempts != 4 || s.Retry == nil || s.Retry.MaxAttempts != 4 {
		t.Fatalf("session over HTTP: attempt %d of %d, retry %+v; want 1 of 4", s.Attempt, s.MaxAttempts, s.Retry)
	}
	r := must[*orchestrator.Run](t, "GetRun")(env.client(t, clientTok).GetRun(ctx, res.RunID))
	if r.Attempt != 1 {
		t.Fatalf("run over HTTP: attempt %d, want 1", r.Attempt)
	}
}
