package gofunc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/gofunc"
)

// TestOverLimitOutputSchemaNotCompiled: an invocation whose output_schema is beyond a limit (one a
// coordinator refuses, here handed to the executor directly) fails with schema_too_complex before the task
// runs: the executor measures the schema in the same linear pre-pass as the coordinator and never compiles
// it. The second time, the refusal comes from the executor's cache.
func TestOverLimitOutputSchemaNotCompiled(t *testing.T) {
	t.Parallel()
	ran := false
	task := gofunc.NewRawTask("t", "", nil, nil, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		ran = true
		return json.RawMessage(`{}`), nil
	})
	ex := gofunc.New(task)
	inv := invocation(task, `{}`)
	inv.OutputSchema = json.RawMessage(strings.Repeat(`{"properties":{"a":`, 800) + `{}` + strings.Repeat(`}}`, 800))
	for range 2 {
		_, err := ex.Execute(t.Context(), inv, nil)
		var e *orchestrator.Error
		if !errors.As(err, &e) || e.Code != "schema_too_complex" || e.Details["measure"] != "depth" || !errors.Is(err, orchestrator.ErrInvalid) {
			t.Fatalf("Execute with a deep output_schema: %v, want schema_too_complex for depth", err)
		}
	}
	if ran {
		t.Error("the task ran")
	}
}
