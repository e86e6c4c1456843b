package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// The API mounted under a path prefix of a service's own http.ServeMux, beside its other routes. The
// handler's routes are rooted at "/", so http.StripPrefix takes the prefix off, and a Client is given the
// prefix in its base URL.
func ExampleNewHandler_serveMux() {
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
	tokens, err := httpapi.ParseTokens("admin-secret", "client-secret", "")
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) { // the service's own route
		fmt.Fprintf(w, "order %s", r.PathValue("id"))
	})
	mux.Handle("/orchestrator/", http.StripPrefix("/orchestrator", httpapi.NewHandler(coord, httpapi.Config{Tokens: tokens})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	admin, err := httpapi.NewClient(srv.URL+"/orchestrator", httpapi.ClientConfig{Token: "admin-secret"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := admin.CreateAgent(ctx, &orchestrator.Blueprint{Name: "researcher", Description: "Researches things"}); err != nil {
		log.Fatal(err)
	}
	agents, err := admin.ListAgents(ctx, orchestrator.ListAgentsParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agents:", len(agents), agents[0].Name)

	for _, path := range []string{"/orders/42", "/orchestrator/health", "/orchestrator/agents"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body = []byte("(no token)")
		}
		fmt.Printf("%s %d %s\n", path, resp.StatusCode, bytes.TrimSpace(body))
	}
	// Output:
	// agents: 1 researcher
	// /orders/42 200 order 42
	// /orchestrator/health 200 {"status":"ok"}
	// /orchestrator/agents 401 (no token)
}
