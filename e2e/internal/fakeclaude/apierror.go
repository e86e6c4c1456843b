package main

import (
	"encoding/json"
	"fmt"
	"time"
)

// helpText is the part of Claude Code's --help that the executor reads: the optional flags it uses.
const helpText = `Usage: claude [options] [command] [prompt]

Options:
  --max-budget-usd <amount>             Maximum dollar amount to spend on API
                                        calls (only works with --print)
  --mcp-config <configs...>             Load MCP servers from JSON files or
                                        strings (space-separated)
  --strict-mcp-config                   Only use MCP servers from --mcp-config,
                                        ignoring all other MCP configurations
`

// apiFailures are the lines Claude Code 2.1.197 prints when the model API fails (with
// CLAUDE_CODE_MAX_RETRIES=1), by the api_error input: the api_retry line's error kind, the assistant
// line's error kind, the message, and the result's api_error_status (0: null).
var apiFailures = map[string]struct {
	retry, kind, text string
	status            int
}{
	"529":         {"overloaded", "server_error", "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.", 529},
	"429":         {"rate_limit", "rate_limit", "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit", 429},
	"500":         {"server_error", "server_error", "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.", 500},
	"connection":  {"unknown", "server_error", "API Error: Unable to connect to API (ConnectionRefused)", 0},
	"usage_limit": {"", "rate_limit", "", 429}, // the message names the reset time
}

// apiError ends the turn as the CLI does when the model API fails: its retry (none for a usage limit, which
// announces its reset time in a rate_limit_event instead), a "<synthetic>" assistant message with the
// error kind, and an error result with api_error_status; exit status 1.
func apiError(inv *Invocation, out *stream, in inputs) int {
	var which any
	_ = json.Unmarshal(in.APIError, &which)
	key := fmt.Sprint(which)
	f, ok := apiFailures[key]
	if !ok {
		return fail(inv, out, "api_error %s: want 529, 429, 500, \"connection\" or \"usage_limit\"", in.APIError)
	}
	msg := f.text
	if key == "usage_limit" {
		reset := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
		if in.UsageLimitReset != "" {
			t, err := time.Parse(time.RFC3339, in.UsageLimitReset)
			if err != nil {
				return fail(inv, out, "usage_limit_reset: %v", err)
			}
			reset = t.UTC()
		}
		out.line(map[string]any{"type": "rate_limit_event", "uuid": uuid(), "rate_limit_info": map[string]any{
			"status": "rejected", "resetsAt": reset.Unix(), "rateLimitType": "five_hour", "overageStatus": "rejected",
			"overageDisabledReason": "overage_not_provisioned", "isUsingOverage": false}})
		msg = "You've hit your session limit · resets " + reset.Format("3:04pm") + " (UTC)"
	} else {
		var status any
		if f.status != 0 {
			status = f.status
		}
		out.line(map[string]any{"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1,
			"retry_delay_ms": 552.5, "error_status": status, "error": f.retry, "uuid": uuid()})
	}
	zero := map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	out.line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "uuid": uuid(), "error": f.kind,
		"message": map[string]any{"id": uuid(), "container": nil, "model": "<synthetic>", "role": "assistant",
			"stop_reason": "stop_sequence", "stop_sequence": "", "type": "message", "usage": zero,
			"content": []any{text(msg)}, "context_management": nil}})
	var status any
	if f.status != 0 {
		status = f.status
	}
	out.line(map[string]any{"type": "result", "subtype": "success", "is_error": true, "api_error_status": status,
		"duration_ms": 1115, "duration_api_ms": 0, "num_turns": 1, "result": msg, "stop_reason": "stop_sequence",
		"total_cost_usd": 0, "usage": zero, "modelUsage": map[string]any{}, "permission_denials": []any{},
		"terminal_reason": "completed", "uuid": uuid()})
	inv.Error = msg
	return 1
}
