// Package orchestratortest helps the tests of programs that start agents. A service that invokes agents
// through an [orchestrator.Coordinator] can run its tests against an in-memory coordinator, with a runner
// whose executor only records what it is asked and answers as the test says, and then assert which runs
// were started, with which parameters:
//
//	func TestCheckout(t *testing.T) {
//		c := orchestratortest.New(t, orchestratortest.Config{
//			Agents: []*orchestrator.Blueprint{{Name: "send-receipt", Type: orchestrator.AgentTypeDeterministic}},
//		})
//		shop := NewShop(c) // the code under test takes an orchestrator.Coordinator
//		if err := shop.Checkout(t.Context(), "order-42"); err != nil {
//			t.Fatal(err)
//		}
//		orchestratortest.RequireStarted(t.Context(), t, c, "send-receipt", &orchestratortest.RequireStartedOpts{
//			Parameters: map[string]any{"order": "order-42"},
//		})
//	}
//
// # The coordinator
//
// [New] builds a [coordinator.Coordinator] on SQLite in memory and a runner in the same process, and
// stops and closes them when the test ends. The deterministic agents of [Config].Agents are announced by
// that runner, exactly as a real runner announces its blueprints (their commands are not run); the AI
// agents are created in the coordinator's registry. Every run goes to [Config].Executor, recorded first
// ([Coordinator.Invocations]); by default it completes at once with an empty result, so sync calls
// return.
//
// # Assertions
//
// [RequireStarted], [RequireNotStarted] and [RequireManyStarted] read the runs a coordinator holds, so
// they work on any [orchestrator.Coordinator] — the one New returns, an embedded coordinator of one's
// own, or an httpapi.Client. A run matches when every field set in [RequireStartedOpts] matches it;
// Parameters and Metadata match when they are contained in the run's (the coordinator adds the schema's
// defaults). On a mismatch they fail the test with Fatalf, listing the runs they saw and why each did not
// match.
//
// The helpers take a [TB], which *testing.T and *testing.B implement, so that their own failures can be
// tested too.
package orchestratortest
