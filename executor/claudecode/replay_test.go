//go:build linux

package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
)

// The tests in this file replay what the real Claude Code CLI printed — 2.1.197 (npm
// @anthropic-ai/claude-code) and 2.1.332 (the native binary of @anthropic-ai/claude-agent-sdk) — against a
// stand-in Anthropic API (testdata/README.md says how each file was made).

var versions = []string{"v2.1.197", "v2.1.332"}

// usageSum adds up the usage events a run emitted, per model and in total.
func usageSum(t *testing.T, rec *recorder) *orchestrator.Usage {
	t.Helper()
	sum := &orchestrator.Usage{}
	for _, ev := range rec.all() {
		if ev.Type != orchestrator.EventUsage {
			continue
		}
		var d orchestrator.Usage
		if err := ev.DecodeData(&d); err != nil {
			t.Fatal(err)
		}
		if d.CostUSD != 0 || d.Models != nil {
			t.Errorf("usage event %s: want tokens only, with no cost and no models", ev.Data)
		}
		addUsage(sum, &orchestrator.Usage{InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
			CacheReadInputTokens: d.CacheReadInputTokens, CacheCreationInputTokens: d.CacheCreationInputTokens,
			Models: map[string]*orchestrator.ModelUsage{d.Model: {InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
				CacheReadInputTokens: d.CacheReadInputTokens, CacheCreationInputTokens: d.CacheCreationInputTokens}}})
	}
	return sum
}

// requireEventsAddUp checks that a run's usage events add up, token for token and per model, to its
// Result.Usage.
func requireEventsAddUp(t *testing.T, res *orchestrator.Result, rec *recorder) {
	t.Helper()
	got := usageSum(t, rec)
	want := &orchestrator.Usage{}
	if res.Usage != nil {
		want.InputTokens, want.OutputTokens = res.Usage.InputTokens, res.Usage.OutputTokens
		want.CacheReadInputTokens, want.CacheCreationInputTokens = res.Usage.CacheReadInputTokens, res.Usage.CacheCreationInputTokens
		for name, m := range res.Usage.Models {
			if want.Models == nil {
				want.Models = map[string]*orchestrator.ModelUsage{}
			}
			want.Models[name] = &orchestrator.ModelUsage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
				CacheReadInputTokens: m.CacheReadInputTokens, CacheCreationInputTokens: m.CacheCreationInputTokens}
		}
	}
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("the usage events add up to %s, want the result's %s", mustJSON(got), mustJSON(want))
	}
}

// Three one-call turns of one Claude session (a start and two resumes) use 11 input tokens each. 2.1.332's
// result line counts the whole session in modelUsage and total_cost_usd (11, 22, 33);
// model_usage_since_last_result has the turn's own figures, and wins.
func TestReplayUsageAcrossResumes(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{})
			files := []string{v + "-resume-turn1.jsonl", v + "-resume-turn2.jsonl", v + "-resume-turn3.jsonl"}
			inv := f.replay(t, files...)
			var costs []float64
			for turn := 1; turn <= 3; turn++ {
				res, rec := mustExecute(t, f, inv)
				if res.Failed() || res.Usage == nil {
					t.Fatalf("turn %d: %+v", turn, res)
				}
				if res.Usage.InputTokens != 11 || res.Usage.OutputTokens != 7 || res.Usage.CacheReadInputTokens != 3 || res.Usage.CacheCreationInputTokens != 5 {
					t.Errorf("turn %d: usage %s, want 11 input, 7 output, 3 cache reads, 5 cache writes", turn, mustJSON(res.Usage))
				}
				if len(res.Usage.Models) != 1 {
					t.Errorf("turn %d: models %s, want one", turn, mustJSON(res.Usage.Models))
				}
				requireEventsAddUp(t, res, rec)
				costs = append(costs, res.Usage.CostUSD)
				ids := rec.executorSessions()
				next := *inv
				next.Mode, next.ExecutorSessionID = orchestrator.RunTypeResume, inv.ExecutorSessionID
				if len(ids) == 1 {
					next.ExecutorSessionID = ids[0]
				}
				inv = &next
			}
			if costs[0] <= 0 || costs[1] != costs[0] || costs[2] != costs[0] {
				t.Errorf("costs of the turns = %v, want the same for each", costs)
			}
		})
	}
}

// An output-schema correction resumes the session within one run: each API call is counted once. With
// 2.1.332 that is 11 + 11 input tokens (not 11 + 22); 2.1.197's first turn also asked for a session title
// (another 11), which its result line counts.
func TestReplaySchemaCorrectionUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		version     string
		input, outp int64
	}{{"v2.1.332", 22, 14}, {"v2.1.197", 33, 21}} {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{})
			inv := f.replay(t, tt.version+"-json-turn1.jsonl", tt.version+"-json-turn2-correction.jsonl")
			inv.OutputSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
			res, rec := mustExecute(t, f, inv)
			if res.Failed() || string(res.ResultData) != `{"answer": "fixed"}` {
				t.Fatalf("result = %+v", res)
			}
			if res.Usage.InputTokens != tt.input || res.Usage.OutputTokens != tt.outp {
				t.Errorf("usage = %s, want %d input and %d output tokens", mustJSON(res.Usage), tt.input, tt.outp)
			}
			requireEventsAddUp(t, res, rec)
			if n := len(f.calls(t)); n != 2 {
				t.Errorf("%d calls, want the answer and its correction", n)
			}
		})
	}
}

// Live usage: one usage event per API message, as its first line arrives. The CLI prints a message once
// per content block, repeating its id and usage: every captured file, of both versions, gives one event
// per distinct message id (a "<synthetic>" error message used nothing and gives none).
func TestReplayLiveUsageOncePerMessage(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/v2.1.*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	repeated := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{} // message id -> input tokens
		lines := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			var l streamLine
			if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message == nil || l.Message.Usage == nil {
				continue
			}
			lines++
			if u := l.Message.Usage; u.InputTokens+u.OutputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens > 0 {
				want[l.Message.ID] = l.Message.Usage.InputTokens
			}
		}
		if lines > len(want) && len(want) > 0 {
			repeated++
		}
		rec := &recorder{}
		s := &turnStream{sessionID: "ses_1", sink: rec, ctx: context.Background(), log: slog.New(slog.DiscardHandler),
			onSession: func(string) {}, usage: newMeter()}
		s.read(bufio.NewReader(bytes.NewReader(data)))
		got := map[string]int64{}
		var models []string
		for _, ev := range rec.all() {
			if ev.Type == orchestrator.EventUsage {
				var d orchestrator.Usage
				_ = ev.DecodeData(&d)
				got[d.Model] += d.InputTokens
				models = append(models, d.Model)
			}
		}
		var sum int64
		for _, n := range want {
			sum += n
		}
		if len(models) != len(want) || (len(want) > 0 && got[models[0]] != sum) {
			t.Errorf("%s: usage events for models %v (input %v), want one for each of the %d messages (input %d)", file, models, got, len(want), sum)
		}
		for _, m := range models {
			if m == "" || strings.Contains(m, "[") {
				t.Errorf("%s: usage event model %q", file, m)
			}
		}
	}
	if repeated < 2 {
		t.Errorf("only %d fixtures repeat a message over several lines: the test shows nothing", repeated)
	}
}

// How a failed turn is classified, on the lines each version printed: the result's api_error_status, the
// assistant line's error kind when there was no status (a connection failure), and a usage limit with its
// reset time (the rate_limit_event's resetsAt).
func TestReplayAPIErrors(t *testing.T) {
	t.Parallel()
	fiveHours := time.Unix(1795840539, 0).UTC()
	newYork := time.Unix(1796106939, 0).UTC()
	for _, tt := range []struct {
		file      string
		code      string
		retryAt   *time.Time
		retries   int // progress events of the CLI's own retries
		errPrefix string
	}{
		{file: "api-529", code: "api_overloaded", retries: 1, errPrefix: "API Error: 529 Overloaded"},
		{file: "api-429", code: "api_rate_limited", retries: 1, errPrefix: "API Error: Request rejected (429)"},
		{file: "api-500", code: "api_error", retries: 1, errPrefix: "API Error: 500"},
		{file: "api-400", code: "", errPrefix: "API Error: 400 fake invalid request"},
		{file: "api-unreachable", code: "api_error", retries: 1, errPrefix: "API Error: "},
		{file: "usage-limit", code: "usage_limit", retryAt: &fiveHours, errPrefix: "You've hit your "},
		{file: "usage-limit-new-york", code: "usage_limit", retryAt: &newYork, errPrefix: "You've hit your "},
		{file: "max-budget", code: "budget_exceeded", errPrefix: "Claude Code ended with error_max_budget_usd: Reached maximum budget"},
	} {
		for _, v := range versions {
			t.Run(v+"-"+tt.file, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, Config{})
				res, rec := mustExecute(t, f, f.replay(t, v+"-"+tt.file+".jsonl"))
				if !res.Failed() || !strings.HasPrefix(res.Error, tt.errPrefix) {
					t.Errorf("result error = %q, want it to begin %q", res.Error, tt.errPrefix)
				}
				if res.ErrorCode != tt.code {
					t.Errorf("error code = %q, want %q", res.ErrorCode, tt.code)
				}
				if (res.RetryAt == nil) != (tt.retryAt == nil) || (res.RetryAt != nil && !res.RetryAt.Equal(*tt.retryAt)) {
					t.Errorf("retry at = %v, want %v", res.RetryAt, tt.retryAt)
				}
				retries := 0
				for _, p := range eventsOf(t, rec, orchestrator.EventProgress) {
					if msg, _ := p["message"].(string); strings.HasPrefix(msg, "Claude API retry ") {
						retries++
					}
				}
				if retries != tt.retries {
					t.Errorf("%d retry progress events, want %d", retries, tt.retries)
				}
			})
		}
	}
	t.Run("ten retries of an unreachable API", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, Config{})
		res, rec := mustExecute(t, f, f.replay(t, "v2.1.197-api-unreachable-10-retries.jsonl"))
		var msgs []string
		for _, p := range eventsOf(t, rec, orchestrator.EventProgress) {
			if msg, _ := p["message"].(string); strings.HasPrefix(msg, "Claude API retry ") {
				msgs = append(msgs, msg)
			}
		}
		if res.ErrorCode != "api_error" || len(msgs) != 10 ||
			msgs[0] != "Claude API retry 1/10 in 0.5 s: no answer (connection failed)" || msgs[9] != "Claude API retry 10/10 in 39.3 s: no answer (connection failed)" {
			t.Errorf("result %+v, retry messages %q", res, msgs)
		}
	})
}

// An api_retry line is a progress event at once ("Claude API retry 1/1 in 0.6 s: 529 overloaded"); the
// retry that succeeds ends the run as usual.
func TestReplayRetryProgress(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{})
			res, rec := mustExecute(t, f, f.replay(t, v+"-api-529-retried.jsonl"))
			if res.Failed() || res.ResultText != "hello after a retry" || res.ErrorCode != "" {
				t.Fatalf("result = %+v", res)
			}
			p := eventsOf(t, rec, orchestrator.EventProgress)
			if len(p) != 2 {
				t.Fatalf("progress events = %v, want the retry and the result's statistics", p)
			}
			msg, _ := p[0]["message"].(string)
			if !strings.HasPrefix(msg, "Claude API retry 1/1 in 0.") || !strings.HasSuffix(msg, " s: 529 overloaded") ||
				p[0]["attempt"] != 1.0 || p[0]["max_retries"] != 1.0 || p[0]["error_status"] != 529.0 || p[0]["error"] != "overloaded" {
				t.Errorf("retry progress = %v", p[0])
			}
		})
	}
}

// A retry after a 529 resumes the Claude session (Invocation.Attempt 2, Mode resume, with the
// continuation prompt): the CLI kept the session, and the resumed turn completes.
func TestReplayResumeAfterOverload(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{})
			inv := f.replay(t, v+"-resume-529-turn1.jsonl", v+"-resume-529-turn2.jsonl")
			inv.Attempt = 1
			first, rec := mustExecute(t, f, inv)
			ids := rec.executorSessions()
			if first.ErrorCode != "api_overloaded" || len(ids) != 1 {
				t.Fatalf("first attempt = %+v, executor sessions %q", first, ids)
			}
			retry := *inv
			retry.Mode, retry.ExecutorSessionID, retry.Attempt = orchestrator.RunTypeResume, ids[0], 2
			retry.Parameters = json.RawMessage(`{"prompt":"The model API failed (529 overloaded); continue where you left off."}`)
			res, _ := mustExecute(t, f, &retry)
			if res.Failed() || !strings.HasPrefix(res.ResultText, "resumed; earlier answers: ") {
				t.Fatalf("second attempt = %+v", res)
			}
			calls := f.calls(t)
			if i := slices.Index(calls[1].Args, "--resume"); i < 0 || calls[1].Args[i+1] != ids[0] || !strings.HasPrefix(calls[1].Stdin, "The model API failed") {
				t.Errorf("second attempt's argv %q, stdin %q", calls[1].Args, calls[1].Stdin)
			}
		})
	}
}

// MCP readiness on the real lines: 2.1.197 without MCP_CONNECTION_NONBLOCKING=0 or alwaysLoad starts with
// slow servers pending (the run fails, naming the first), with them it waits about 5 s (a server that
// takes 8 s is still pending); 2.1.332 waits. A server that cannot start is failed in both, with no
// reason given. Optional servers let the run go on.
func TestReplayMCPReadiness(t *testing.T) {
	t.Parallel()
	slow := map[string]json.RawMessage{
		"fast":  json.RawMessage(`{"command":"slowmcp","args":["0s"]}`),
		"slow3": json.RawMessage(`{"command":"slowmcp","args":["3s"]}`),
		"slow8": json.RawMessage(`{"command":"slowmcp","args":["8s"]}`),
	}
	withMissing := map[string]json.RawMessage{"missing": json.RawMessage(`{"command":"/nonexistent/server"}`)}
	for k, v := range slow {
		withMissing[k] = v
	}
	for _, tt := range []struct {
		file     string
		servers  map[string]json.RawMessage
		optional []any
		wantErr  string
	}{
		{file: "v2.1.197-slow-mcp-default.jsonl", servers: slow, wantErr: `MCP server "slow3" pending (still connecting when the session started); `},
		{file: "v2.1.197-slow-mcp-default.jsonl", servers: slow, optional: []any{"slow3", "slow8"}},
		{file: "v2.1.197-slow-mcp-nonblocking0.jsonl", servers: slow, wantErr: `MCP server "slow8" pending`},
		{file: "v2.1.197-slow-mcp-alwaysload-nonblocking0.jsonl", servers: withMissing, wantErr: `MCP server "slow8" pending`},
		{file: "v2.1.197-slow-mcp-alwaysload-nonblocking0.jsonl", servers: withMissing, optional: []any{"slow8"}, wantErr: `MCP server "missing" failed;`},
		{file: "v2.1.332-slow-mcp-alwaysload-nonblocking0.jsonl", servers: withMissing, wantErr: `MCP server "missing" failed;`},
		{file: "v2.1.332-slow-mcp-alwaysload-nonblocking0.jsonl", servers: withMissing, optional: []any{"missing"}},
		{file: "v2.1.332-slow-mcp-connected.jsonl", servers: slow},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, Config{MCPServerURL: func(*orchestrator.Invocation) string { return "" }})
			inv := f.replay(t, tt.file)
			inv.Blueprint.MCPServers = tt.servers
			if tt.optional != nil {
				inv.Blueprint.ExecutorConfig = map[string]any{"optional_mcp_servers": tt.optional}
			}
			res, rec := mustExecute(t, f, inv)
			if tt.wantErr == "" {
				if res.Failed() {
					t.Errorf("result = %+v, want completed", res)
				}
				return
			}
			if !strings.HasPrefix(res.Error, tt.wantErr) || res.ErrorCode != "" {
				t.Errorf("result error = %q (code %q), want it to begin %q", res.Error, res.ErrorCode, tt.wantErr)
			}
			name := strings.Split(tt.wantErr, `"`)[1]
			found := false
			for _, ev := range eventsOf(t, rec, EventMCPServer) {
				found = found || ev["name"] == name && ev["optional"] == false && ev["server"] != nil
			}
			if !found {
				t.Errorf("no mcp_server event names %s: %v", name, eventsOf(t, rec, EventMCPServer))
			}
		})
	}
}

// The reset time of a usage limit read from the message alone (no rate_limit_event): the CLI writes it in
// its own time zone, with the date when it is more than a day ahead.
func TestParseReset(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 3, 35, 39, 0, time.UTC)
	for _, tt := range []struct {
		text string
		want time.Time // zero: none
	}{
		{"You've hit your session limit · resets 4:35am (UTC)", time.Date(2026, 11, 28, 4, 35, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 3am (UTC)", time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 12pm (UTC)", time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets Dec 1, 1:35am (America/New_York)", time.Date(2026, 12, 1, 6, 35, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2, 9pm (Europe/Paris)", time.Date(2027, 1, 2, 20, 0, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2, 2027, 9pm (UTC)", time.Date(2027, 1, 2, 21, 0, 0, 0, time.UTC)},
		{"You've hit your limit · resets 4pm (Nowhere/Atlantis)", time.Time{}},
		{"You've hit your limit · resets Feb 30, 4pm (UTC)", time.Time{}},
		{"You've hit your limit", time.Time{}},
	} {
		got, ok := parseReset(tt.text, now)
		if ok != !tt.want.IsZero() || !got.Equal(tt.want) {
			t.Errorf("parseReset(%q) = %v, %v; want %v", tt.text, got, ok, tt.want)
		}
	}
	// The older message with the time after a bar.
	at, ok := usageLimit("Claude AI usage limit reached|1795840539", nil, now)
	if !ok || at == nil || at.Unix() != 1795840539 {
		t.Errorf("usageLimit(…|epoch) = %v, %v", at, ok)
	}
	// A usage limit on the real lines without their rate_limit_event: the message's time.
	for _, v := range versions {
		data, err := os.ReadFile(filepath.Join("testdata", v+"-usage-limit.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var res *streamLine
		kind := ""
		for _, line := range bytes.Split(data, []byte("\n")) {
			var l streamLine
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			switch l.Type {
			case "assistant":
				kind = l.errorKind()
			case "result":
				res = &l
			}
		}
		code, at := classify(res, kind, nil, now)
		if code != "usage_limit" || at == nil || !at.Equal(time.Date(2026, 11, 28, 4, 35, 0, 0, time.UTC)) {
			t.Errorf("%s without its rate_limit_event: %q, %v", v, code, at)
		}
	}
}
