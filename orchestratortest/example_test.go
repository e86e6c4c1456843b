package orchestratortest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/orchestratortest"
)

// Shop is code under test: it starts agents through any orchestrator.Coordinator.
type Shop struct{ Agents orchestrator.Coordinator }

// Checkout sends the order's receipt by starting the agent "send-receipt", and a gift note for gifts.
func (s *Shop) Checkout(ctx context.Context, order string, gift bool) error {
	params, _ := json.Marshal(map[string]any{"order": order, "copies": 1})
	if _, err := s.Agents.StartRun(ctx, orchestrator.StartRunParams{AgentName: "send-receipt", Parameters: params}); err != nil {
		return err
	}
	if gift {
		_, err := s.Agents.StartRun(ctx, orchestrator.StartRunParams{AgentName: "gift-note", Prompt: "Write a note for " + order})
		return err
	}
	return nil
}

// Summarize asks the AI agent "summarizer" for a summary and waits for it.
func (s *Shop) Summarize(ctx context.Context, text string) (string, error) {
	res, err := s.Agents.StartRun(ctx, orchestrator.StartRunParams{AgentName: "summarizer", Prompt: text, Mode: orchestrator.ModeSync})
	if err != nil {
		return "", err
	}
	return res.Result.ResultText, nil
}

// A test asserts which agents the code under test started, and with which parameters, without a real
// runner. The test's *testing.T is the TB; an example has none, so exampleT stands in for it.
func ExampleRequireStarted() {
	t := &exampleT{}
	defer t.cleanup()
	ctx := context.Background()

	c := orchestratortest.New(t, orchestratortest.Config{Agents: []*orchestrator.Blueprint{
		{Name: "send-receipt", Type: orchestrator.AgentTypeDeterministic, Command: "send-receipt"},
		{Name: "gift-note", Description: "Writes gift notes"},
	}})
	shop := &Shop{Agents: c}
	if err := shop.Checkout(ctx, "order-42", false); err != nil {
		t.Fatalf("Checkout: %v", err)
	}

	run := orchestratortest.RequireStarted(ctx, t, c, "send-receipt", &orchestratortest.RequireStartedOpts{
		Parameters: map[string]any{"order": "order-42"}, // contained in the run's parameters
	})
	fmt.Println(run.AgentName, string(run.Parameters))
	orchestratortest.RequireNotStarted(ctx, t, c, "gift-note", nil)
	fmt.Println("no gift note")
	// Output:
	// send-receipt {"copies":1,"order":"order-42"}
	// no gift note
}

// RequireManyStarted checks every run started, in order: nothing missing, nothing more.
func ExampleRequireManyStarted() {
	t := &exampleT{}
	defer t.cleanup()
	ctx := context.Background()

	c := orchestratortest.New(t, orchestratortest.Config{Agents: []*orchestrator.Blueprint{
		{Name: "send-receipt", Type: orchestrator.AgentTypeDeterministic, Command: "send-receipt"},
		{Name: "gift-note", Description: "Writes gift notes"},
	}})
	shop := &Shop{Agents: c}
	if err := shop.Checkout(ctx, "order-7", true); err != nil {
		t.Fatalf("Checkout: %v", err)
	}

	runs := orchestratortest.RequireManyStarted(ctx, t, c, []orchestratortest.ExpectedStart{
		{AgentName: "send-receipt", Opts: &orchestratortest.RequireStartedOpts{Parameters: map[string]any{"order": "order-7"}}},
		{AgentName: "gift-note", Opts: &orchestratortest.RequireStartedOpts{Prompt: "Write a note for order-7"}},
	})
	for _, r := range runs {
		fmt.Println(r.AgentName, r.Mode)
	}
	// Output:
	// send-receipt async_poll
	// gift-note async_poll
}

// The executor answers as the test says, so code that waits for an agent's result can be tested; and
// every run it was asked to execute is recorded.
func ExampleNew() {
	t := &exampleT{}
	defer t.cleanup()
	ctx := context.Background()

	c := orchestratortest.New(t, orchestratortest.Config{
		Agents: []*orchestrator.Blueprint{{Name: "summarizer", Description: "Summarizes text"}},
		Executor: orchestratortest.ExecutorFunc(func(ctx context.Context, inv *orchestrator.Invocation, _ orchestrator.EventSink) (*orchestrator.Result, error) {
			return &orchestrator.Result{ResultType: "agent", ResultText: "A short summary."}, nil
		}),
	})
	shop := &Shop{Agents: c}
	summary, err := shop.Summarize(ctx, "A very long text.")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	fmt.Println(summary)
	for _, inv := range c.Invocations() {
		fmt.Println(inv.AgentName, string(inv.Parameters))
	}
	// Output:
	// A short summary.
	// summarizer {"prompt":"A very long text."}
}

// exampleT stands in for a test's *testing.T in the examples: a failure panics, which fails the example,
// and cleanup runs what the helpers registered, last first.
type exampleT struct{ cleanups []func() }

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) cleanup() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}
