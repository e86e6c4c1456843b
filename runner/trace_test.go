package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
	"github.com/agentorchestrator/orchestrator/gateway"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
)

// traceHelperEnv selects TestTraceHelper's part: "parent" starts trace-child through the gateway, "child"
// only reports what it saw.
const traceHelperEnv = "ORCHESTRATOR_TRACE_HELPER"

// TestTraceHelper is not a test: it is the program the trace test's agents run (the test binary itself,
// selected by traceHelperEnv). It prints {"traceparent": $TRACEPARENT, "child": the child's run} as JSON.
func TestTraceHelper(t *testing.T) {
	mode := os.Getenv(traceHelperEnv)
	if mode == "" {
		t.Skip("the trace test's helper program")
	}
	out := map[string]any{"traceparent": os.Getenv("TRACEPARENT")}
	if mode == "parent" {
		// What an agent does: start a child through its gateway, passing its trace context on.
		req, _ := http.NewRequest("POST", os.Getenv(orchestrator.EnvAPIURL)+"/runs?wait=60s",
			strings.NewReader(`{"agent_name":"trace-child","mode":"sync"}`))
		req.Header.Set("Authorization", "Bearer "+os.Getenv(orchestrator.EnvAPIToken))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", os.Getenv("TRACEPARENT"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			fmt.Fprintf(os.Stderr, "POST /runs: %d %s\n", resp.StatusCode, body)
			os.Exit(1)
		}
		out["child"] = json.RawMessage(body)
	}
	json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(0)
}

// TestTraceOneTree: one POST /runs with a traceparent yields one trace — the parent's creation, claim,
// execution and report, and the same of the child its process started through the runner's gateway —
// every process saw that trace in TRACEPARENT, and both sessions show its id.
func TestTraceOneTree(t *testing.T) {
	t.Parallel()
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })

	coord := newCoordinator(t, coordinator.Config{TracerProvider: tp})
	srv := httptest.NewServer(httpapi.NewHandler(coord, httpapi.Config{}))
	t.Cleanup(srv.Close)
	client, err := httpapi.NewClient(srv.URL, httpapi.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gw := gateway.New(client, gateway.Config{})
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := func(name, mode string) *orchestrator.Blueprint {
		return &orchestrator.Blueprint{Name: name, Type: orchestrator.AgentTypeDeterministic, Description: "trace helper",
			Command: self + " -test.run=^TestTraceHelper$", Env: map[string]string{traceHelperEnv: mode}}
	}
	r, err := runner.New(runner.Config{
		Coordinator: client, Executor: deterministic.New(deterministic.Config{}), Gateway: gw,
		Blueprints: []*orchestrator.Blueprint{helper("trace-parent", "parent"), helper("trace-child", "child")},
		Hostname:   "trace-host", ProjectDir: t.TempDir(), MaxConcurrent: 2, TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	// The runner must have registered before the run is started (its blueprints are the agents).
	select {
	case <-r.Registered():
	case err := <-ran:
		t.Fatalf("runner ended before registering: %v", err)
	}

	req, _ := http.NewRequest("POST", srv.URL+"/runs?wait=60s", bytes.NewReader([]byte(`{"agent_name":"trace-parent","mode":"sync"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started orchestrator.StartRunResult
	json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if resp.StatusCode != 201 || started.Status != orchestrator.SessionCompleted {
		t.Fatalf("POST /runs: %d, %+v", resp.StatusCode, started)
	}
	cancel() // the runner ends once its runs are over: every execute span has ended
	if err := <-ran; err != nil {
		t.Fatalf("runner: %v", err)
	}

	// What the processes saw.
	var parentOut struct {
		TraceParent string `json:"traceparent"`
		Child       struct {
			SessionID string               `json:"session_id"`
			Result    *orchestrator.Result `json:"result"`
		} `json:"child"`
	}
	if err := json.Unmarshal(started.Result.ResultData, &parentOut); err != nil {
		t.Fatalf("parent's output %s: %v", started.Result.ResultData, err)
	}
	var childOut struct {
		TraceParent string `json:"traceparent"`
	}
	if parentOut.Child.Result == nil || json.Unmarshal(parentOut.Child.Result.ResultData, &childOut) != nil {
		t.Fatalf("child's result: %+v", parentOut.Child)
	}
	for who, tp := range map[string]string{"parent": parentOut.TraceParent, "child": childOut.TraceParent} {
		if !strings.HasPrefix(tp, "00-"+traceID+"-") {
			t.Errorf("the %s's process saw TRACEPARENT=%q, want trace %s", who, tp, traceID)
		}
	}
	// What the sessions show.
	for _, id := range []string{started.SessionID, parentOut.Child.SessionID} {
		s, err := client.GetSession(context.Background(), id)
		if err != nil || s.TraceID != traceID {
			t.Errorf("session %s: trace_id %q (%v), want %s", id, s.TraceID, err, traceID)
		}
	}
	// The spans: all in the one trace, each step of both runs.
	count := map[string]int{}
	for _, s := range spans.Ended() {
		if got := s.SpanContext().TraceID().String(); got != traceID {
			t.Errorf("span %s is in trace %s, want %s", s.Name(), got, traceID)
		}
		count[s.Name()]++
	}
	for _, name := range []string{"orchestrator.create_run", "orchestrator.claim", "orchestrator.execute", "orchestrator.report"} {
		if count[name] != 2 {
			t.Errorf("%d %s spans, want 2 (the parent's and the child's); all: %v", count[name], name, count)
		}
	}
}
