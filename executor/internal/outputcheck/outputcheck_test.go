package outputcheck

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

func TestApply(t *testing.T) {
	t.Parallel()
	schema, err := orchestrator.CompileSchema(json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		res       orchestrator.Result
		wantError string
		wantErrs  bool
	}{
		{"valid", orchestrator.Result{ResultData: json.RawMessage(`{"a":1}`)}, "", false},
		{"invalid", orchestrator.Result{ResultData: json.RawMessage(`{"a":"x"}`)}, Prefix + "$.a: ", true},
		{"no JSON", orchestrator.Result{ResultText: "hi"}, Prefix + "stdout is not valid JSON", false},
		{"truncated", orchestrator.Result{Truncated: true}, Prefix + "stdout exceeded the output limit", false},
	}
	for _, tt := range tests {
		res := tt.res
		Apply(&res, schema, "stdout")
		if !strings.HasPrefix(res.Error, tt.wantError) || (tt.wantError == "") != (res.Error == "") || tt.wantErrs != (len(res.ValidationErrors) > 0) {
			t.Errorf("%s: Error = %q, ValidationErrors = %v; want prefix %q, errors %v", tt.name, res.Error, res.ValidationErrors, tt.wantError, tt.wantErrs)
		}
	}
	res := orchestrator.Result{ResultText: "x"}
	Apply(&res, nil, "stdout")
	if res.Error != "" {
		t.Errorf("nil schema set Error %q", res.Error)
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	var errs []orchestrator.FieldError
	for _, p := range []string{"$.a", "$.b", "", "$.d", "$.e", "$.f", "$.g"} {
		errs = append(errs, orchestrator.FieldError{Path: p, Message: "bad"})
	}
	want := "$.a: bad; $.b: bad; $: bad; $.d: bad; $.e: bad (and 2 more)"
	if got := Summarize(errs); got != want {
		t.Errorf("Summarize = %q, want %q", got, want)
	}
}
