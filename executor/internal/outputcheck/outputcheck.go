// Package outputcheck applies an output_schema to an executor's result the way deterministic agents need it
// ("validate-or-fail", docs/executors.md): no retries, the first invalid output fails the run with every validation
// error attached. It is shared by the executors under executor/.
package outputcheck

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentorchestrator/orchestrator"
)

// Prefix starts every Error this package sets, so callers and tests can recognise an output_schema failure.
const Prefix = "output does not match output_schema: "

// maxListed bounds how many field errors are spelled out in Result.Error; all of them are in
// Result.ValidationErrors.
const maxListed = 5

// Apply checks res.ResultData against schema and, when it does not match, marks res failed: Error is set and
// ValidationErrors lists every failure. what names the output in messages ("stdout", "the task's result").
// ResultText and ResultData are left as they are, so the caller can see what the program produced; the
// result is failed either way ([orchestrator.Result.Failed]).
func Apply(res *orchestrator.Result, schema *orchestrator.Schema, what string) {
	if schema == nil || res == nil {
		return
	}
	switch {
	case res.Truncated:
		res.Error = Prefix + what + " exceeded the output limit and was truncated, so it cannot be validated"
		return
	case len(res.ResultData) == 0:
		res.Error = Prefix + what + " is not valid JSON"
		return
	}
	var instance any
	if err := json.Unmarshal(res.ResultData, &instance); err != nil {
		res.Error = Prefix + what + " is not valid JSON"
		return
	}
	errs := schema.Validate(instance)
	if len(errs) == 0 {
		return
	}
	res.ValidationErrors = errs
	res.Error = Prefix + Summarize(errs)
}

// Summarize renders field errors as "$.a: message; $.b: message", naming at most a few and counting the rest.
func Summarize(errs []orchestrator.FieldError) string {
	var b strings.Builder
	for i, fe := range errs {
		if i == maxListed {
			fmt.Fprintf(&b, " (and %d more)", len(errs)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		path := fe.Path
		if path == "" {
			path = "$"
		}
		b.WriteString(path)
		b.WriteString(": ")
		b.WriteString(fe.Message)
	}
	return b.String()
}
