package mcpserver_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/mcpserver"
)

// The MCP SDK's own INFO records (several per HTTP request) reach the configured logger as DEBUG: a log at
// INFO shows none, a log at DEBUG still has them.
func TestSDKRequestLogsAreDebug(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{Logger: log}), nil, nil)
	call(t, cs, "list_agent_blueprints", map[string]any{})
	call(t, cs, "list_agent_blueprints", map[string]any{})

	levels := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		levels[rec.Level]++
		if rec.Level == "INFO" {
			t.Errorf("an INFO record for MCP requests: %s", line)
		}
	}
	if levels["DEBUG"] < 3 {
		t.Errorf("log levels %v: want the SDK's records as DEBUG (the test shows nothing otherwise)", levels)
	}

	// At INFO, nothing is written for the same calls.
	var quiet lockedBuffer
	cs = connectHTTP(t, f.serveMCP(t, mcpserver.Config{Logger: slog.New(slog.NewJSONHandler(&quiet, nil))}), nil, nil)
	call(t, cs, "list_agent_blueprints", map[string]any{})
	if quiet.String() != "" {
		t.Errorf("a log at INFO got %s", quiet.String())
	}
}
