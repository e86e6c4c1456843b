package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentorchestrator/orchestrator"
)

// renderPrompt renders a run's parameters as the prompt Claude Code gets (rich AI inputs):
// parameters.prompt, when it is a string, comes first; the other parameters follow as one JSON object in
// an <inputs> block, introduced by a sentence that says what it is. With an output schema, instructions to
// answer with only a JSON document matching it (the schema included) end the prompt.
//
// Parameters must be a JSON object (empty means none); a run with neither a prompt nor other parameters
// has nothing to ask and is an [orchestrator.ErrInvalid] error.
func renderPrompt(parameters, outputSchema json.RawMessage) (string, error) {
	var params map[string]json.RawMessage
	if p := bytes.TrimSpace(parameters); len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &params); err != nil || params == nil {
			return "", orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "parameters must be a JSON object")
		}
	}
	var b strings.Builder
	if raw, ok := params["prompt"]; ok {
		var prompt string
		if json.Unmarshal(raw, &prompt) == nil {
			b.WriteString(strings.TrimSpace(prompt))
			delete(params, "prompt")
		}
	}
	if len(params) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("The task comes with these inputs: the invocation's parameters other than the prompt, as one JSON object.\n")
		b.WriteString("<inputs>\n")
		b.Write(indentJSON(params))
		b.WriteString("\n</inputs>")
	}
	if b.Len() == 0 {
		return "", orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_parameters", "the parameters have no prompt and no inputs: there is nothing to ask the agent")
	}
	if s := bytes.TrimSpace(outputSchema); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		b.WriteString("\n\n")
		b.WriteString(schemaInstructions(outputSchema))
	}
	return b.String(), nil
}

// schemaInstructions tell the agent how to answer when the run has an output schema.
func schemaInstructions(schema json.RawMessage) string {
	return "Output format: when you have finished, your final answer must be ONLY a JSON document that matches " +
		"the JSON Schema below, with no text before or after it and no Markdown code fence. The answer is " +
		"validated against the schema; an answer that does not match is sent back to you with the errors.\n" +
		"<output_schema>\n" + string(indentJSON(schema)) + "\n</output_schema>"
}

// feedbackPrompt asks the agent, in the same Claude Code session, to correct an answer that did not match
// the output schema: it lists every problem and repeats the schema.
func feedbackPrompt(schema json.RawMessage, problems []orchestrator.FieldError) string {
	var b strings.Builder
	b.WriteString("Your previous answer does not match the required output schema:\n")
	for _, p := range problems {
		path := p.Path
		if path == "" {
			path = "$"
		}
		fmt.Fprintf(&b, "- %s: %s\n", path, p.Message)
	}
	b.WriteString("\nAnswer again with ONLY the corrected JSON document (no text before or after it, no Markdown " +
		"code fence), matching this JSON Schema:\n<output_schema>\n")
	b.Write(indentJSON(schema))
	b.WriteString("\n</output_schema>")
	return b.String()
}

// indentJSON indents a JSON value (an object's keys sorted) for a prompt; numbers keep their text.
func indentJSON(v any) []byte {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case map[string]json.RawMessage:
		// encoding/json sorts map keys, and json.RawMessage keeps the numbers' text. No HTML escaping: the
		// reader is a model, and "a < b" should stay readable.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		raw = buf.Bytes()
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return bytes.TrimSpace(raw)
	}
	return bytes.TrimSpace(out.Bytes())
}

var fenced = regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n[ \t]*```")

// errNotJSON is the problem reported for an answer that holds no JSON document.
var errNotJSON = errors.New("the answer is not a JSON document (answer with only the JSON, no prose and no code fence)")

// parseAnswer extracts the JSON document of an answer that should be one: the answer itself (trimmed), or
// the content of a Markdown code fence around it (```json … ```), or, failing both, the last fenced block
// in the answer that holds valid JSON.
func parseAnswer(answer string) (json.RawMessage, error) {
	if data, ok := wholeJSON(answer); ok {
		return data, nil
	}
	matches := fenced.FindAllStringSubmatch(answer, -1)
	for i := len(matches) - 1; i >= 0; i-- {
		if t := bytes.TrimSpace([]byte(matches[i][1])); len(t) > 0 && json.Valid(t) {
			return json.RawMessage(t), nil
		}
	}
	return nil, errNotJSON
}

// wholeJSON returns the answer as JSON when all of it is a JSON document, fenced or not.
func wholeJSON(answer string) (json.RawMessage, bool) {
	t := bytes.TrimSpace([]byte(answer))
	if len(t) > 0 && json.Valid(t) {
		return json.RawMessage(t), true
	}
	if m := fenced.FindSubmatchIndex(t); m != nil && m[0] == 0 && m[1] == len(t) {
		inner := bytes.TrimSpace(t[m[2]:m[3]])
		if len(inner) > 0 && json.Valid(inner) {
			return json.RawMessage(inner), true
		}
	}
	return nil, false
}

// structuredData is the result_data of an answer without an output schema: the answer when all of it is a
// JSON object or array (fenced or not); plain text has none.
func structuredData(answer string) json.RawMessage {
	data, ok := wholeJSON(answer)
	if !ok || (data[0] != '{' && data[0] != '[') {
		return nil
	}
	return data
}

// checkAnswer validates an answer against schema: the JSON document and nil, or the problems (an answer
// that holds no JSON is one problem at "$").
func checkAnswer(schema *orchestrator.Schema, answer string) (json.RawMessage, []orchestrator.FieldError) {
	data, err := parseAnswer(answer)
	if err != nil {
		return nil, []orchestrator.FieldError{{Path: "$", Message: err.Error()}}
	}
	var instance any
	if err := json.Unmarshal(data, &instance); err != nil {
		return nil, []orchestrator.FieldError{{Path: "$", Message: err.Error()}}
	}
	return data, schema.Validate(instance)
}
