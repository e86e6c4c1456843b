package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
	"github.com/agentorchestrator/orchestrator/webhook"
)

// A run with a callback_url: when its session ends, the coordinator POSTs the result there, signed with
// Config.WebhookSecret, and the receiver checks the signature with webhook.Verify before it trusts the
// body. Deliveries go to public addresses only unless WebhookAllowHosts opens others (here the loopback
// receiver).
func ExampleConfig_webhooks() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	received := make(chan orchestrator.WebhookPayload, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body) // verify the raw body, before decoding it
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p orchestrator.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select { // a delivery may come more than once: a real receiver deduplicates by its webhook-id
		case received <- p:
		default:
		}
	}))
	defer receiver.Close()

	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	coord, err := coordinator.New(coordinator.Config{
		Store:             store,
		WebhookSecret:     []byte(secret),
		WebhookAllowHosts: []string{"127.0.0.1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil { // delivers the webhooks
		log.Fatal(err)
	}
	defer coord.Stop()

	tasks := gofunc.New(gofunc.NewTask("greet", "Greets someone", func(ctx context.Context, p struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello " + p.Name, nil
	}))
	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: tasks, Blueprints: tasks.Blueprints()})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	res, err := coord.StartRun(ctx, orchestrator.StartRunParams{
		AgentName:   "greet",
		Parameters:  json.RawMessage(`{"name": "world"}`),
		CallbackURL: receiver.URL + "/hooks/agents",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("started:", res.Status)
	p := <-received
	fmt.Println(p.Event, p.AgentName, p.Status, p.SessionID == res.SessionID, string(p.Result.ResultData))
	// Output:
	// started: pending
	// session.ended greet completed true "hello world"
}
