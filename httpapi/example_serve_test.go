package httpapi_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// A service shuts down gracefully when its context ends (in a program, on SIGTERM: ctx, stop :=
// signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)). Serve stops accepting requests and lets those
// in flight finish; the runner takes no more work but lets the runs in progress finish within its
// ShutdownGrace and reports them; then the coordinator's sweeps stop and the store closes.
func ExampleServe() {
	ctx, stop := context.WithCancel(context.Background())
	store, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	coord, err := coordinator.New(coordinator.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	if err := coord.Start(ctx); err != nil {
		log.Fatal(err)
	}

	started, release := make(chan struct{}), make(chan struct{})
	tasks := gofunc.New(gofunc.NewTask("report", "Writes a report", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release // still working when the shutdown begins
		return "done", nil
	}))
	worker, err := runner.New(runner.Config{
		Coordinator: coord, Executor: tasks, Blueprints: tasks.Blueprints(), ShutdownGrace: time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- worker.Run(ctx) }()
	<-worker.Registered()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- httpapi.Serve(ctx, ln, httpapi.NewHandler(coord, httpapi.Config{}), 10*time.Second, nil)
	}()

	client, err := httpapi.NewClient("http://"+ln.Addr().String(), httpapi.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.StartRun(context.Background(), orchestrator.StartRunParams{AgentName: "report"})
	if err != nil {
		log.Fatal(err)
	}
	<-started

	stop() // the signal
	fmt.Println("http server stopped:", <-served)
	close(release)
	fmt.Println("runner stopped:", <-ran)
	coord.Stop()
	s, err := coord.GetSession(context.Background(), res.SessionID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the run in progress:", s.Status, s.Result.ResultText)
	fmt.Println("store closed:", store.Close())
	// Output:
	// http server stopped: <nil>
	// runner stopped: <nil>
	// the run in progress: completed "done"
	// store closed: <nil>
}
