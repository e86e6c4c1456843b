package gofunc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// SlugParams are the parameters of the agent "slug"; its parameters_schema is derived from them.
type SlugParams struct {
	Title string `json:"title" jsonschema:"the text to turn into a slug"`
}

// Slug is what "slug" returns, as result_data; its output_schema is derived from it.
type Slug struct {
	Slug string `json:"slug"`
}

// Typed Go functions served by a runner: a task's parameters arrive validated and decoded into its
// parameter type, its result is marshalled from its result type, Progress adds events to the session
// while it runs, and a returned error fails the run with exit code 1.
func ExampleNew() {
	slug := gofunc.NewTask("slug", "Makes a URL slug of a title", func(ctx context.Context, p SlugParams) (Slug, error) {
		if strings.TrimSpace(p.Title) == "" {
			return Slug{}, errors.New("title is blank")
		}
		_ = gofunc.Progress(ctx, "slugging %d characters", len(p.Title))
		return Slug{Slug: strings.ToLower(strings.Join(strings.Fields(p.Title), "-"))}, nil
	})
	tasks := gofunc.New(slug)

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
	worker, err := runner.New(runner.Config{Coordinator: coord, Executor: tasks, Blueprints: tasks.Blueprints()})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- worker.Run(runCtx) }()
	defer func() { stopRunner(); <-done }()
	<-worker.Registered()

	for _, title := range []string{"Hello Agent World", " "} {
		params, _ := json.Marshal(SlugParams{Title: title})
		res, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "slug", Parameters: params, Mode: orchestrator.ModeSync})
		if err != nil {
			log.Fatal(err)
		}
		var out Slug
		_ = json.Unmarshal(res.Result.ResultData, &out)
		fmt.Printf("%s exit=%d slug=%q error=%q\n", res.Status, *res.Result.ExitCode, out.Slug, res.Result.Error)
		events, _ := coord.ListEvents(ctx, res.SessionID, 0, 100, 0)
		for _, ev := range events {
			if ev.Type == orchestrator.EventProgress {
				fmt.Println("  progress:", string(ev.Data))
			}
		}
	}
	// Output:
	// completed exit=0 slug="hello-agent-world" error=""
	//   progress: {"message":"slugging 17 characters"}
	// failed exit=1 slug="" error="title is blank"
}
