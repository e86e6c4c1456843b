package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// maxEventText bounds what one event shows on a line (tool inputs, results, unknown events' data): the
// whole event is a --json away.
const maxEventText = 400

// describeEvent renders an event's payload as text for people: a stderr event is its line, a message its
// text, a tool call its name and input, and so on. Events of types it does not know show their data as
// compact JSON.
func describeEvent(ev *orchestrator.Event) string {
	var d map[string]json.RawMessage
	_ = json.Unmarshal(ev.Data, &d)
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(d[k], &s)
		return s
	}
	switch ev.Type {
	case orchestrator.EventStderr:
		line := str("line")
		if b, _ := boolField(d["truncated"]); b {
			line += " […]"
		}
		return line
	case orchestrator.EventProgress:
		if m := str("message"); m != "" {
			return m
		}
	case orchestrator.EventMessage:
		return messageText(d)
	case orchestrator.EventToolCall:
		in := string(d["input"])
		if in == "" {
			in = str("input_preview")
		}
		return "→ " + str("name") + " " + cut(in, maxEventText)
	case orchestrator.EventToolResult:
		prefix := "← "
		if b, _ := boolField(d["is_error"]); b {
			prefix = "← error: "
		}
		return prefix + cut(str("content"), maxEventText)
	case orchestrator.EventRunStarted:
		s := "run " + str("run_id") + " started"
		if r := str("runner_id"); r != "" {
			s += " on " + r
		}
		return s
	case orchestrator.EventRunEnded:
		s := "run " + str("run_id") + " " + str("status")
		if e := str("error"); e != "" {
			s += ": " + e
		}
		return s
	case orchestrator.EventResult:
		var r orchestrator.Result
		_ = json.Unmarshal(ev.Data, &r)
		return resultSummary(&r)
	case orchestrator.EventExecutorSession:
		return "executor session " + str("executor_session_id")
	case orchestrator.EventOutputTruncated:
		if m := str("message"); m != "" {
			return m
		}
	}
	return cut(compactJSON(rawObject(ev.Data)), maxEventText)
}

// rawObject is data for compactJSON: the decoded object when it decodes, else the bytes as a string.
func rawObject(data json.RawMessage) any {
	v, err := decodeJSON(data)
	if err != nil {
		return string(data)
	}
	return v
}

func boolField(raw json.RawMessage) (bool, error) {
	var b bool
	err := json.Unmarshal(raw, &b)
	return b, err
}

// messageText is the text of a conversation message: its text blocks (or its content string), with tool
// uses named.
func messageText(d map[string]json.RawMessage) string {
	var role string
	_ = json.Unmarshal(d["role"], &role)
	var parts []string
	var text string
	if json.Unmarshal(d["content"], &text) == nil {
		parts = append(parts, text)
	} else {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(d["content"], &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "tool_use":
				parts = append(parts, "→ "+b.Name)
			}
		}
	}
	s := strings.Join(parts, "\n")
	if role != "" && role != "assistant" {
		s = role + ": " + s
	}
	return s
}

// resultSummary says in a few words what a result holds: "exit 0, result_data (1.2 kB)".
func resultSummary(r *orchestrator.Result) string {
	var parts []string
	if r.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit %d", *r.ExitCode))
	}
	switch {
	case len(r.ResultData) > 0:
		parts = append(parts, "result_data ("+byteSize(len(r.ResultData))+")")
	case r.ResultText != "":
		parts = append(parts, "result_text ("+byteSize(len(r.ResultText))+")")
	}
	if r.Truncated {
		parts = append(parts, "truncated")
	}
	if r.Error != "" {
		parts = append(parts, "error: "+r.Error)
	}
	if len(parts) == 0 {
		return "result: none"
	}
	return "result: " + strings.Join(parts, ", ")
}

func byteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// cut shortens s to at most n runes, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// sanitize makes text safe to write to a terminal: control characters other than tab — escape
// sequences an agent printed included — become visible (^[ for ESC) instead of acting on the terminal.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r != '\t' && (unicode.IsControl(r) || r == unicode.ReplacementChar) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
