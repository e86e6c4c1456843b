package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// A coordinator served over HTTP with role tokens, and a Client using it like a local Coordinator.
func Example() {
	ctx := context.Background()
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	tokens, err := httpapi.ParseTokens("admin-secret", "client-secret", "runner-secret")
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{Tokens: tokens}))
	defer srv.Close()

	admin, _ := httpapi.NewClient(srv.URL, httpapi.ClientConfig{Token: "admin-secret"})
	client, _ := httpapi.NewClient(srv.URL, httpapi.ClientConfig{Token: "client-secret"})
	if _, err := admin.CreateAgent(ctx, &orchestrator.Blueprint{Name: "researcher", Description: "Researches things"}); err != nil {
		log.Fatal(err)
	}
	res, err := client.StartRun(ctx, orchestrator.StartRunParams{AgentName: "researcher", Prompt: "What is SSE?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", res.Status)

	_, err = client.GetSession(ctx, "ses_missing")
	fmt.Println("not found:", errors.Is(err, orchestrator.ErrNotFound), orchestrator.ErrorCode(err))
	_, err = client.CreateAgent(ctx, &orchestrator.Blueprint{Name: "x"})
	fmt.Println("forbidden:", errors.Is(err, orchestrator.ErrForbidden))
	// Output:
	// status: pending
	// not found: true session_not_found
	// forbidden: true
}
