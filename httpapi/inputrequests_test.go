package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

func TestInputRequestsAPI(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	client := env.client(t, clientTok)
	runner, reg := env.runnerClient(t, registration("host-a", crawler()))

	res, err := client.StartRun(ctxT(t), orchestrator.StartRunParams{AgentName: "web-crawler",
		Parameters: json.RawMessage(`{"url":"https://a.example"}`), RequireApproval: true, ApprovalTimeoutSeconds: 600})
	if err != nil || res.Status != orchestrator.SessionWaiting {
		t.Fatalf("gated start: %+v, %v; want waiting", res, err)
	}
	inbox, err := client.ListInputRequests(ctxT(t), orchestrator.InputRequestFilter{Statuses: []orchestrator.InputRequestStatus{orchestrator.InputOpen}})
	if err != nil || len(inbox) != 1 || inbox[0].SessionID != res.SessionID || inbox[0].ExpiresAt == nil {
		t.Fatalf("inbox: %+v, %v", inbox, err)
	}
	id := inbox[0].ID

	// An answer that does not match the schema: 400 with every error at its $.path, and nothing changes.
	rec := serve(env.handler, "POST", "/input-requests/"+id+"/answer", clientTok, []byte(`{"answer":{"approved":"yes"}}`))
	body := errorBody(t, rec, http.StatusBadRequest)
	if body["error"] != "answer_validation_failed" {
		t.Fatalf("invalid answer: %v", body)
	}
	errs, _ := body["validation_errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["path"] != "$.approved" || body["schema"] == nil {
		t.Fatalf("validation_errors = %v, schema %v; want one at $.approved and the schema", body["validation_errors"], body["schema"])
	}
	errorBody(t, serve(env.handler, "POST", "/input-requests/"+id+"/answer", clientTok, []byte(`{"answr":{}}`)), http.StatusBadRequest)
	errorBody(t, serve(env.handler, "POST", "/input-requests/inp_nope/answer", clientTok, []byte(`{"answer":{"approved":true}}`)), http.StatusNotFound)

	// A runner's own credential reads the requests of sessions it holds only, and never answers.
	if _, err := runner.AnswerInputRequest(ctxT(t), id, orchestrator.AnswerParams{Answer: json.RawMessage(`{"approved":true}`)}); !errors.Is(err, orchestrator.ErrForbidden) {
		t.Fatalf("runner's answer: %v, want forbidden", err)
	}
	if _, err := runner.GetInputRequest(ctxT(t), id, 0); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("runner reads a request of a session it never held: %v, want not found", err)
	}
	errorBody(t, serve(env.handler, "GET", "/input-requests", credential(reg), nil), http.StatusBadRequest)

	// A long poll parked on the request returns with the answer.
	got := make(chan *orchestrator.InputRequest, 1)
	go func() {
		r, err := client.GetInputRequest(ctxT(t), id, time.Minute)
		if err != nil {
			t.Errorf("GetInputRequest: %v", err)
		}
		got <- r
	}()
	answered, err := client.AnswerInputRequest(ctxT(t), id, orchestrator.AnswerParams{Answer: json.RawMessage(`{"approved":true}`)})
	if err != nil || answered.Status != orchestrator.InputAnswered || answered.AnsweredBy != "client" {
		t.Fatalf("answer: %+v, %v; want answered by client", answered, err)
	}
	select {
	case r := <-got:
		if r.Status != orchestrator.InputAnswered {
			t.Fatalf("long poll: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not return with the answer")
	}
	rec = serve(env.handler, "POST", "/input-requests/"+id+"/answer", clientTok, []byte(`{"answer":{"approved":false}}`))
	if b := errorBody(t, rec, http.StatusConflict); b["error"] != "request_closed" || b["status"] != "answered" {
		t.Fatalf("second answer: %v", b)
	}

	// The approved run reaches the runner, whose agent may then ask a question for its session, and
	// read it, but not answer it.
	work, err := runner.PollWork(ctxT(t), orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1})
	if err != nil || len(work.Runs) != 1 {
		t.Fatalf("poll after the approval: %+v, %v", work, err)
	}
	check(t, "started", runner.ReportRun(ctxT(t), orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunRunning}))
	q, err := runner.AskHuman(ctxT(t), orchestrator.AskParams{SessionID: res.SessionID, Prompt: "Which region?"})
	if err != nil || q.Kind != orchestrator.InputQuestion || string(q.Schema) != orchestrator.DefaultQuestionSchema {
		t.Fatalf("question: %+v, %v", q, err)
	}
	if r, err := runner.GetInputRequest(ctxT(t), q.ID, 0); err != nil || r.Status != orchestrator.InputOpen {
		t.Fatalf("runner reads its own question: %+v, %v", r, err)
	}
	if list, err := runner.ListInputRequests(ctxT(t), orchestrator.InputRequestFilter{SessionID: res.SessionID}); err != nil || len(list) != 2 {
		t.Fatalf("runner lists its session's requests: %+v, %v", list, err)
	}
	if s, _ := client.GetSession(ctxT(t), res.SessionID); s.Status != orchestrator.SessionWaiting {
		t.Fatalf("session with an open question: %s, want waiting", s.Status)
	}
	if list, err := client.ListSessions(ctxT(t), orchestrator.SessionFilter{Statuses: []orchestrator.SessionStatus{orchestrator.SessionWaiting}}); err != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions ?status=waiting: %+v, %v", list, err)
	}
	rec = serve(env.handler, "POST", "/sessions/"+res.SessionID+"/input-requests", clientTok, []byte(`{"prompt":"x","schema":{"type":"strang"}}`))
	if b := errorBody(t, rec, http.StatusBadRequest); b["error"] != "invalid_schema" {
		t.Fatalf("question with a malformed schema: %v", b)
	}
	if _, err := client.AnswerInputRequest(ctxT(t), q.ID, orchestrator.AnswerParams{Answer: json.RawMessage(`{"answer":"eu"}`)}); err != nil {
		t.Fatalf("answer the question: %v", err)
	}
	if s, _ := client.GetSession(ctxT(t), res.SessionID); s.Status != orchestrator.SessionRunning {
		t.Fatalf("session after the answer: %s, want running", s.Status)
	}
}
