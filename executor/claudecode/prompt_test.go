package claudecode

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
)

var answerSchema = json.RawMessage(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`)

func TestRenderPrompt(t *testing.T) {
	t.Parallel()
	inputsIntro := "The task comes with these inputs: the invocation's parameters other than the prompt, as one JSON object.\n"
	tests := []struct {
		name, params, schema, want string
	}{
		{"prompt only", `{"prompt":"  Research X  "}`, ``, "Research X"},
		{"rich inputs, sorted, numbers as written, no HTML escaping", `{"prompt":"Review","severity":"error","files":["a<b>.go"],"depth":2.50}`, ``,
			"Review\n\n" + inputsIntro + "<inputs>\n{\n  \"depth\": 2.50,\n  \"files\": [\n    \"a<b>.go\"\n  ],\n  \"severity\": \"error\"\n}\n</inputs>"},
		{"no prompt", `{"url":"https://x.com"}`, ``, inputsIntro + "<inputs>\n{\n  \"url\": \"https://x.com\"\n}\n</inputs>"},
		{"a prompt that is not a string is an input", `{"prompt":{"q":1}}`, ``, inputsIntro + "<inputs>\n{\n  \"prompt\": {\n    \"q\": 1\n  }\n}\n</inputs>"},
		{"output schema", `{"prompt":"Answer"}`, `{"type":"object"}`,
			"Answer\n\nOutput format: when you have finished, your final answer must be ONLY a JSON document that matches the JSON Schema below"},
	}
	for _, tt := range tests {
		got, err := renderPrompt(json.RawMessage(tt.params), json.RawMessage(tt.schema))
		if err != nil {
			t.Errorf("%s: renderPrompt(%s) error = %v", tt.name, tt.params, err)
			continue
		}
		if tt.schema == "" && got != tt.want || tt.schema != "" && !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: renderPrompt(%s)\n got %q\nwant %q", tt.name, tt.params, got, tt.want)
		}
		if tt.schema != "" && !strings.HasSuffix(got, "<output_schema>\n{\n  \"type\": \"object\"\n}\n</output_schema>") {
			t.Errorf("%s: the prompt does not end with the schema: %q", tt.name, got)
		}
	}
	for _, params := range []string{``, `null`, `{}`, `{"prompt":"   "}`, `[]`, `"x"`} {
		if got, err := renderPrompt(json.RawMessage(params), nil); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("renderPrompt(%s) = %q, %v; want ErrInvalid", params, got, err)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		answer, want string
		data         string // structuredData
	}{
		{` {"a":1} `, `{"a":1}`, `{"a":1}`},
		{"```json\n{\"a\": 1}\n```", `{"a": 1}`, `{"a": 1}`},
		{"```\n[1, 2]\n```\n", `[1, 2]`, `[1, 2]`},
		{"Here it is:\n```json\n{\"a\": 0}\n```\nand the final one:\n```json\n{\"a\": 2}\n```\nDone.", `{"a": 2}`, ``},
		{"42", `42`, ``},
		{`"text"`, `"text"`, ``},
		{"no JSON here", ``, ``},
		{"```json\n{broken\n```", ``, ``},
	}
	for _, tt := range tests {
		got, err := parseAnswer(tt.answer)
		if tt.want == "" {
			if err == nil {
				t.Errorf("parseAnswer(%q) = %s, want an error", tt.answer, got)
			}
		} else if err != nil || string(got) != tt.want {
			t.Errorf("parseAnswer(%q) = %s, %v; want %s", tt.answer, got, err, tt.want)
		}
		if data := structuredData(tt.answer); string(data) != tt.data {
			t.Errorf("structuredData(%q) = %s, want %q", tt.answer, data, tt.data)
		}
	}
}

func TestCheckAnswerAndFeedback(t *testing.T) {
	t.Parallel()
	schema, err := orchestrator.CompileSchema(answerSchema)
	if err != nil {
		t.Fatal(err)
	}
	if data, problems := checkAnswer(schema, "```json\n{\"answer\":\"x\"}\n```"); len(problems) != 0 || string(data) != `{"answer":"x"}` {
		t.Errorf("valid answer: %s, %v", data, problems)
	}
	_, problems := checkAnswer(schema, "I think it is 42.")
	if len(problems) != 1 || problems[0].Path != "$" || !strings.Contains(problems[0].Message, "not a JSON document") {
		t.Errorf("prose answer: problems = %v", problems)
	}
	_, problems = checkAnswer(schema, `{"answer":1,"extra":true}`)
	if len(problems) != 1 || problems[0].Path != "$.answer" {
		t.Fatalf("wrong type: problems = %v", problems)
	}
	fb := feedbackPrompt(answerSchema, problems)
	if !strings.Contains(fb, "- $.answer: ") || !strings.Contains(fb, "<output_schema>\n{\n  \"type\": \"object\"") {
		t.Errorf("feedback = %q", fb)
	}
}

func TestParseOptions(t *testing.T) {
	t.Parallel()
	o, err := parseOptions(map[string]any{"permissionMode": "plan", "maxTurns": json.Number("3"), "allowed_tools": []string{"Read"}, "model": nil})
	if err != nil || o.permissionMode != "plan" || o.maxTurns != 3 || len(o.allowedTools) != 1 || o.model != "" {
		t.Errorf("parseOptions = %+v, %v", o, err)
	}
	for _, cfg := range []map[string]any{
		{"max_turns": 0.0}, {"max_turns": 2.5}, {"max_turns": "x"}, {"allowed_tools": 3.0}, {"allowed_tools": []any{1.0}},
		{"system_prompt_mode": "prepend"}, {"permission_mode": true},
	} {
		if _, err := parseOptions(cfg); !errors.Is(err, orchestrator.ErrInvalid) {
			t.Errorf("parseOptions(%v) error = %v, want ErrInvalid", cfg, err)
		}
	}
}
