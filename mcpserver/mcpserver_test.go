package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/mcpserver"
)

var allTools = []string{
	"answer_input_request", "ask_human", "get_agent_schema", "get_agent_session_result", "get_agent_session_status",
	"get_input_request", "get_session_tree", "list_agent_blueprints", "list_agent_sessions", "list_input_requests", "list_schedules",
	"rerun_session", "resume_agent_session", "start_agent_session", "start_agent_sessions", "stop_agent_session",
}

// exerciseTools runs every tool through cs, a client session to a server over f's coordinator, whatever
// the transport. Calls carry no context of their own: over stdio the server's flags supply it.
func exerciseTools(t *testing.T, f *fixture, cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	t.Run("list_tools", func(t *testing.T) {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
			if tool.Description == "" {
				t.Errorf("%s has no description", tool.Name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, allTools) {
			t.Fatalf("tools = %v, want %v", names, allTools)
		}
		i := slices.IndexFunc(lt.Tools, func(tool *mcp.Tool) bool { return tool.Name == "start_agent_session" })
		start := lt.Tools[i]
		for _, want := range []string{"list_agent_blueprints", "parameters_schema", `{"prompt": "your instructions"}`, "self-correct", "async_callback"} {
			if want == "self-correct" {
				want = "correct the parameters and call again"
			}
			if !strings.Contains(start.Description, want) {
				t.Errorf("start_agent_session description lacks %q", want)
			}
		}
		var schema struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Type        any    `json:"type"`
				Enum        []any  `json:"enum"`
				Default     any    `json:"default"`
				Description string `json:"description"`
			} `json:"properties"`
			AdditionalProperties any `json:"additionalProperties"`
		}
		b, _ := json.Marshal(start.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(schema.Required, []string{"agent_name"}) {
			t.Errorf("required = %v, want [agent_name]", schema.Required)
		}
		props := schema.Properties
		if props["parameters"].Type != "object" || props["output_schema"].Type != "object" {
			t.Errorf("parameters/output_schema should be free-form objects: %s", b)
		}
		if len(props["mode"].Enum) != 3 || props["mode"].Default != "sync" {
			t.Errorf("mode: enum %v default %v", props["mode"].Enum, props["mode"].Default)
		}
		for _, k := range []string{"agent_name", "parameters", "prompt", "mode", "project_dir", "output_schema"} {
			if props[k].Description == "" {
				t.Errorf("argument %s has no description", k)
			}
		}
	})

	t.Run("get_agent_schema", func(t *testing.T) {
		s := ok[mcpserver.AgentSchemaOutput](t, call(t, cs, "get_agent_schema", map[string]any{"agent_name": "add"}))
		var ps struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(s.ParametersSchema, &ps)
		if s.Type != orchestrator.AgentTypeDeterministic || !slices.Equal(ps.Required, []string{"a", "b"}) {
			t.Errorf("add schema = %+v", s)
		}
		if !strings.Contains(string(s.OutputSchema), "sum") {
			t.Errorf("add output_schema = %s", s.OutputSchema)
		}
		s = ok[mcpserver.AgentSchemaOutput](t, call(t, cs, "get_agent_schema", map[string]any{"agent_name": "echo-agent"}))
		if !sameJSON(s.ParametersSchema, []byte(orchestrator.ImplicitPromptSchema)) || string(s.OutputSchema) != "null" {
			t.Errorf("echo-agent schema = %s / %s, want the implicit prompt schema / null", s.ParametersSchema, s.OutputSchema)
		}
		e := failed(t, call(t, cs, "get_agent_schema", map[string]any{"agent_name": "nope"}))
		if e.Error != "agent_not_found" || !strings.Contains(e.Hint, "list_agent_blueprints") {
			t.Errorf("unknown agent: %+v", e)
		}
	})

	t.Run("validation_error_and_correction", func(t *testing.T) {
		res := call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": "two", "b": 3},
		})
		e := failed(t, res)
		if e.Error != "parameter_validation_failed" || e.Message != "Parameters do not match agent's parameters_schema" || e.AgentName != "add" {
			t.Fatalf("validation error body = %s", e.Raw)
		}
		if len(e.ValidationErrors) != 1 || e.ValidationErrors[0].Path != "$.a" || e.ValidationErrors[0].SchemaPath == "" ||
			!strings.Contains(e.ValidationErrors[0].Message, "integer") {
			t.Errorf("validation_errors = %+v", e.ValidationErrors)
		}
		if !strings.Contains(string(e.ParametersSchema), `"required"`) {
			t.Errorf("parameters_schema missing: %s", e.ParametersSchema)
		}
		if !strings.Contains(e.Hint, "Fix the parameters") {
			t.Errorf("hint = %q", e.Hint)
		}
		// The body's keys, in order, are the HTTP API's 400 body.
		var keys []string
		dec := json.NewDecoder(strings.NewReader(e.Raw))
		_, _ = dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			_ = dec.Decode(&skip)
		}
		if want := []string{"error", "message", "agent_name", "validation_errors", "parameters_schema"}; !slices.Equal(keys, want) {
			t.Errorf("body keys = %v, want %v", keys, want)
		}

		// The model corrects the parameters and calls again.
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 2, "b": 3},
		}))
		if out.Status != orchestrator.SessionCompleted || out.Result == nil || string(out.Result.ResultData) != `{"sum":5}` ||
			out.Result.ExitCode == nil || *out.Result.ExitCode != 0 || out.Result.ResultType == "" || out.SessionID == "" {
			t.Fatalf("corrected start = %+v (result %+v)", out, out.Result)
		}
	})

	t.Run("start_agent_sessions", func(t *testing.T) {
		out := ok[mcpserver.RunsOutput](t, call(t, cs, "start_agent_sessions", map[string]any{"sessions": []any{
			map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}},
			map[string]any{"agent_name": "echo-agent", "prompt": "fan"},
		}}))
		if len(out.Sessions) != 2 || !strings.Contains(out.Note, "get_agent_session_result") {
			t.Fatalf("start_agent_sessions = %+v", out)
		}
		for i, want := range []string{`{"sum":3}`, "echo: fan"} {
			res := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{
				"session_id": out.Sessions[i].SessionID, "wait_seconds": 30}))
			if res.Status != orchestrator.SessionCompleted || res.Result == nil ||
				(string(res.Result.ResultData) != want && res.Result.ResultText != want) {
				t.Errorf("session %d: %+v (result %+v), want %s", i, res, res.Result, want)
			}
		}
		e := failed(t, call(t, cs, "start_agent_sessions", map[string]any{"sessions": []any{
			map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}},
			map[string]any{"agent_name": "add", "parameters": map[string]any{"a": "one", "b": 2}},
		}}))
		var items struct {
			Items []struct {
				Index int    `json:"index"`
				Error string `json:"error"`
			} `json:"items"`
		}
		_ = json.Unmarshal([]byte(e.Raw), &items)
		if e.Error != "invalid_runs" || len(items.Items) != 1 || items.Items[0].Index != 1 || items.Items[0].Error != "parameter_validation_failed" {
			t.Errorf("a batch with an invalid session: %s", e.Raw)
		}
		if res := call(t, cs, "start_agent_sessions", map[string]any{"sessions": []any{}}); !res.IsError {
			t.Errorf("an empty batch: %s", text(res))
		}
	})

	t.Run("sdk_argument_errors_are_tool_errors", func(t *testing.T) {
		res := call(t, cs, "start_agent_session", map[string]any{"agent_name": "add", "mode": "fast"})
		if !res.IsError || !strings.Contains(text(res), "mode") {
			t.Errorf("bad mode: %s", text(res))
		}
		res = call(t, cs, "start_agent_session", map[string]any{"agent_name": "add", "parameters": `{"a":1}`})
		if !res.IsError {
			t.Errorf("parameters as a string: %s", text(res))
		}
		e := failed(t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "echo-agent", "prompt": "x", "parameters": map[string]any{"prompt": "y"},
		}))
		if e.Error != "invalid_request" || !strings.Contains(e.Message, "either prompt or parameters") {
			t.Errorf("prompt and parameters: %+v", e)
		}
	})

	t.Run("sync_prompt_sugar_and_resume", func(t *testing.T) {
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "echo-agent", "prompt": "hello"}))
		if out.Status != orchestrator.SessionCompleted || out.Result == nil || out.Result.ResultText != "echo: hello" {
			t.Fatalf("sync AI start = %+v", out)
		}
		again := ok[mcpserver.RunOutput](t, call(t, cs, "resume_agent_session", map[string]any{"session_id": out.SessionID, "prompt": "again"}))
		if again.SessionID != out.SessionID || again.Status != orchestrator.SessionCompleted || again.Result.ResultText != "echo: again" ||
			again.RunID == out.RunID {
			t.Fatalf("resume = %+v", again)
		}
		// A declared AI schema is validated like any other.
		e := failed(t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "reviewer", "prompt": "review"}))
		if e.Error != "parameter_validation_failed" || len(e.ValidationErrors) == 0 {
			t.Errorf("reviewer without focus: %s", e.Raw)
		}
		ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "reviewer", "parameters": map[string]any{"prompt": "review", "focus": "style"},
		}))

		add := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 1},
		}))
		e = failed(t, call(t, cs, "resume_agent_session", map[string]any{"session_id": add.SessionID, "prompt": "more"}))
		if e.Error != "resume_not_supported" || e.Message != "Deterministic agents do not support resumption" || !strings.Contains(e.Hint, "start_agent_session") {
			t.Errorf("resume deterministic: %+v", e)
		}
		e = failed(t, call(t, cs, "resume_agent_session", map[string]any{"session_id": "ses_nope", "prompt": "more"}))
		if e.Error != "session_not_found" {
			t.Errorf("resume unknown: %+v", e)
		}
	})

	t.Run("async_poll_status_and_result", func(t *testing.T) {
		key := t.Name()
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "slow", "parameters": map[string]any{"key": key}, "mode": "async_poll",
		}))
		if out.SessionID == "" || out.RunID == "" || out.Status != orchestrator.SessionPending || out.Result != nil ||
			!strings.Contains(out.Note, "get_agent_session_result") {
			t.Fatalf("async start = %+v", out)
		}
		if id := f.gates.waitStarted(t, key); id != out.SessionID {
			t.Fatalf("task runs session %s, want %s", id, out.SessionID)
		}
		st := ok[mcpserver.SessionOutput](t, call(t, cs, "get_agent_session_status", map[string]any{"session_id": out.SessionID}))
		// The runner reports "running" while the task starts, so either status may show.
		if (st.Status != orchestrator.SessionRunning && st.Status != orchestrator.SessionPending) || st.AgentName != "slow" || st.AgentType != orchestrator.AgentTypeDeterministic ||
			st.RunID != out.RunID || st.HasResult || st.CreatedAt.IsZero() {
			t.Errorf("status = %+v", st)
		}
		now := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": out.SessionID}))
		if now.Status.Ended() || now.Result != nil || now.Note == "" {
			t.Errorf("result before the end = %+v", now)
		}
		f.gates.get(key).open()
		res := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": out.SessionID, "wait_seconds": 30}))
		if res.Status != orchestrator.SessionCompleted || res.Result == nil || string(res.Result.ResultData) != `{"sum":42}` {
			t.Errorf("result after the end = %+v", res)
		}
		st = ok[mcpserver.SessionOutput](t, call(t, cs, "get_agent_session_status", map[string]any{"session_id": out.SessionID}))
		if st.Status != orchestrator.SessionCompleted || !st.HasResult || st.EndedAt == nil {
			t.Errorf("status after the end = %+v", st)
		}
		e := failed(t, call(t, cs, "get_agent_session_status", map[string]any{"session_id": "ses_nope"}))
		if e.Error != "session_not_found" {
			t.Errorf("unknown session: %+v", e)
		}
		e = failed(t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": "ses_nope", "wait_seconds": 1}))
		if e.Error != "session_not_found" {
			t.Errorf("unknown session result: %+v", e)
		}
	})

	t.Run("stop", func(t *testing.T) {
		key := t.Name()
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "slow", "parameters": map[string]any{"key": key}, "mode": "async_poll",
		}))
		f.gates.waitStarted(t, key)
		st := ok[mcpserver.SessionOutput](t, call(t, cs, "stop_agent_session", map[string]any{"session_id": out.SessionID}))
		if st.SessionID != out.SessionID || (st.Status != orchestrator.SessionStopped && st.Note == "") {
			t.Errorf("stop = %+v", st)
		}
		res := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": out.SessionID, "wait_seconds": 30}))
		if res.Status != orchestrator.SessionStopped {
			t.Errorf("after stop = %+v", res)
		}
		again := ok[mcpserver.SessionOutput](t, call(t, cs, "stop_agent_session", map[string]any{"session_id": out.SessionID}))
		if again.Status != orchestrator.SessionStopped || again.Note != "" {
			t.Errorf("stopping again = %+v", again)
		}
		e := failed(t, call(t, cs, "stop_agent_session", map[string]any{"session_id": "ses_nope"}))
		if e.Error != "session_not_found" {
			t.Errorf("stop unknown: %+v", e)
		}
	})

	t.Run("rerun_session", func(t *testing.T) {
		add := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 1},
		}))
		re := ok[mcpserver.RunOutput](t, call(t, cs, "rerun_session", map[string]any{
			"session_id": add.SessionID, "parameters": map[string]any{"b": 41},
		}))
		if re.SessionID == "" || re.SessionID == add.SessionID || re.RunID == "" || re.Note == "" {
			t.Fatalf("rerun_session = %+v, want a new session", re)
		}
		res := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": re.SessionID, "wait_seconds": 30}))
		if res.Status != orchestrator.SessionCompleted || res.Result == nil || string(res.Result.ResultData) != `{"sum":42}` {
			t.Errorf("the re-run with b patched to 41 = %+v, want sum 42", res)
		}
		if s, err := f.coord.GetSession(ctx, re.SessionID); err != nil || s.RerunOf != add.SessionID {
			t.Errorf("re-run session = %+v, %v; want rerun_of %s", s, err, add.SessionID)
		}
		e := failed(t, call(t, cs, "rerun_session", map[string]any{"session_id": add.SessionID, "parameters": map[string]any{"b": "x"}}))
		if e.Error != "parameter_validation_failed" {
			t.Errorf("rerun_session with a patch the schema refuses: %s", e.Raw)
		}
		e = failed(t, call(t, cs, "rerun_session", map[string]any{"session_id": "ses_nope"}))
		if e.Error != "session_not_found" {
			t.Errorf("rerun_session of an unknown session: %+v", e)
		}
	})

	t.Run("list_schedules", func(t *testing.T) {
		sched, err := f.coord.CreateSchedule(ctx, orchestrator.ScheduleParams{
			AgentName: "echo-agent", Parameters: json.RawMessage(`{"prompt":"every new year"}`), Cron: "0 0 1 1 *", Paused: new(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		var found *orchestrator.Schedule
		for cursor := ""; ; {
			page := ok[mcpserver.ScheduleListOutput](t, call(t, cs, "list_schedules", map[string]any{"agent_name": "echo-agent", "limit": 1, "cursor": cursor}))
			for _, s := range page.Schedules {
				if s.ID == sched.ID {
					found = s
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if found == nil || found.Cron != "0 0 1 1 *" || !found.Paused || found.AgentName != "echo-agent" {
			t.Fatalf("list_schedules did not show schedule %s as created: %+v", sched.ID, found)
		}
		if res := call(t, cs, "list_schedules", map[string]any{"cursor": "sch_nope"}); !res.IsError {
			t.Fatalf("list_schedules after an unknown cursor: %s, want a tool error", text(res))
		}
	})

	t.Run("list_agent_sessions", func(t *testing.T) {
		for i := range 2 {
			ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
				"agent_name": "add", "parameters": map[string]any{"a": i, "b": 10},
			}))
		}
		all := ok[mcpserver.SessionListOutput](t, call(t, cs, "list_agent_sessions", map[string]any{"agent_name": "add", "status": "completed"}))
		if len(all.Sessions) < 3 || all.NextCursor != "" {
			t.Fatalf("completed add sessions = %d (cursor %q)", len(all.Sessions), all.NextCursor)
		}
		var seen []string
		cursor := ""
		for range len(all.Sessions) + 1 {
			args := map[string]any{"agent_name": "add", "status": "completed", "limit": 1}
			if cursor != "" {
				args["cursor"] = cursor
			}
			page := ok[mcpserver.SessionListOutput](t, call(t, cs, "list_agent_sessions", args))
			for _, s := range page.Sessions {
				if s.AgentName != "add" || s.Status != orchestrator.SessionCompleted {
					t.Errorf("filtered listing has %+v", s)
				}
				seen = append(seen, s.SessionID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		want := make([]string, 0, len(all.Sessions))
		for _, s := range all.Sessions {
			want = append(want, s.SessionID)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("paged = %v, want %v", seen, want)
		}
		running := ok[mcpserver.SessionListOutput](t, call(t, cs, "list_agent_sessions", map[string]any{"status": "stopped"}))
		if len(running.Sessions) != 1 || running.Sessions[0].AgentName != "slow" {
			t.Errorf("stopped sessions = %+v", running.Sessions)
		}
		res := call(t, cs, "list_agent_sessions", map[string]any{"status": "sleeping"})
		if !res.IsError {
			t.Errorf("bad status filter: %s", text(res))
		}
	})
}

// TestStreamableHTTP runs every tool over streamable HTTP, then what the request headers carry.
func TestStreamableHTTP(t *testing.T) {
	f := newFixture(t)
	endpoint := f.serveMCP(t, mcpserver.Config{})
	exerciseTools(t, f, connectHTTP(t, endpoint, nil, nil))

	// A parent: an AI session (the kind that can be resumed with a callback).
	plain := connectHTTP(t, endpoint, nil, nil)
	parent := ok[mcpserver.RunOutput](t, call(t, plain, "start_agent_session", map[string]any{"agent_name": "echo-agent", "prompt": "orchestrate"}))

	t.Run("traceparent_header_continues_the_trace", func(t *testing.T) {
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		cs := connectHTTP(t, endpoint, map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}, nil)
		run := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2},
		}))
		if got := getSession(t, f, run.SessionID).TraceID; got != traceID {
			t.Errorf("session's trace_id = %q, want the caller's %s", got, traceID)
		}
	})

	t.Run("session_header_makes_the_parent", func(t *testing.T) {
		cs := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderSessionID: parent.SessionID}, nil)
		child := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2},
		}))
		st := ok[mcpserver.SessionOutput](t, call(t, cs, "get_agent_session_status", map[string]any{"session_id": child.SessionID}))
		if st.ParentSessionID != parent.SessionID || getSession(t, f, child.SessionID).ParentSessionID != parent.SessionID {
			t.Errorf("child's parent = %q, want %s", st.ParentSessionID, parent.SessionID)
		}
		kids := ok[mcpserver.SessionListOutput](t, call(t, cs, "list_agent_sessions", map[string]any{"parent_session_id": parent.SessionID}))
		if len(kids.Sessions) != 1 || kids.Sessions[0].SessionID != child.SessionID {
			t.Errorf("children = %+v", kids.Sessions)
		}
		// Without the header a session has no parent.
		orphan := ok[mcpserver.RunOutput](t, call(t, plain, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2},
		}))
		if p := getSession(t, f, orphan.SessionID).ParentSessionID; p != "" {
			t.Errorf("session started without the header has parent %q", p)
		}
		// An unknown calling session is reported, not ignored.
		ghost := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderSessionID: "ses_ghost"}, nil)
		e := failed(t, call(t, ghost, "start_agent_session", map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}}))
		if e.Error != "parent_session_not_found" || !strings.Contains(e.Hint, "configuration") {
			t.Errorf("unknown calling session: %+v", e)
		}
	})

	t.Run("async_callback", func(t *testing.T) {
		e := failed(t, call(t, plain, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}, "mode": "async_callback",
		}))
		if e.Error != "invalid_request" || !strings.Contains(e.Message, mcpserver.HeaderSessionID) {
			t.Errorf("async_callback without a session: %+v", e)
		}
		cs := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderSessionID: parent.SessionID}, nil)
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 2}, "mode": "async_callback",
		}))
		if out.Status.Ended() || !strings.Contains(out.Note, "resumed") {
			t.Errorf("async_callback start = %+v", out)
		}
		s := waitEnded(t, f, out.SessionID)
		if !s.Callback || s.ParentSessionID != parent.SessionID {
			t.Errorf("callback child = %+v", s)
		}
		if r := getRun(t, f, out.RunID); r.Mode != orchestrator.ModeAsyncCallback {
			t.Errorf("run mode = %s", r.Mode)
		}
	})

	t.Run("tags_header_filters_blueprints", func(t *testing.T) {
		names := func(cs *mcp.ClientSession, args map[string]any) []string {
			t.Helper()
			l := ok[mcpserver.AgentListOutput](t, call(t, cs, "list_agent_blueprints", args))
			var out []string
			for _, a := range l.Agents {
				out = append(out, a.Name)
			}
			return out
		}
		all := ok[mcpserver.AgentListOutput](t, call(t, plain, "list_agent_blueprints", map[string]any{}))
		got := map[string]mcpserver.AgentOutput{}
		for _, a := range all.Agents {
			got[a.Name] = a
		}
		if len(got) != 4 {
			t.Fatalf("agents = %v", all.Agents)
		}
		if a := got["add"]; a.Type != orchestrator.AgentTypeDeterministic || len(a.ParametersSchema) == 0 || a.Description == "" ||
			!slices.Equal(a.Tags, []string{"math"}) {
			t.Errorf("add = %+v", a)
		}
		if a := got["echo-agent"]; a.Type != orchestrator.AgentTypeAgent || len(a.ParametersSchema) != 0 {
			t.Errorf("echo-agent (no declared schema) = %+v", a)
		}
		if a := got["reviewer"]; len(a.ParametersSchema) == 0 {
			t.Errorf("reviewer (declared schema) = %+v", a)
		}
		if n := names(plain, map[string]any{"tags": []string{"math"}}); !slices.Equal(n, []string{"add"}) {
			t.Errorf("tags argument: %v", n)
		}
		ai := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderTags: " ai , "}, nil)
		if n := names(ai, map[string]any{}); !slices.Equal(n, []string{"echo-agent", "reviewer"}) {
			t.Errorf("X-Agent-Tags ai: %v", n)
		}
		if n := names(ai, map[string]any{"tags": []string{"review"}}); !slices.Equal(n, []string{"reviewer"}) {
			t.Errorf("X-Agent-Tags ai + tags review: %v", n)
		}
		if n := names(ai, map[string]any{"tags": []string{"math"}}); len(n) != 0 {
			t.Errorf("X-Agent-Tags ai + tags math: %v", n)
		}
		bad := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderTags: "ok, no spaces allowed?"}, nil)
		e := failed(t, call(t, bad, "list_agent_blueprints", map[string]any{}))
		if e.Error != "invalid_header" || e.Header != mcpserver.HeaderTags || !strings.Contains(e.Message, "no spaces allowed?") ||
			!strings.Contains(e.Hint, "configuration") || strings.Contains(e.Hint, "Correct the arguments") {
			t.Errorf("malformed tag: %+v", e)
		}
	})

	t.Run("demands_header_is_merged", func(t *testing.T) {
		cs := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderDemands: `{"hostname":"` + testHost + `","tags":["blue"]}`}, nil)
		out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 4, "b": 4}, "mode": "async_poll",
		}))
		r := getRun(t, f, out.RunID)
		if r.Demands.Hostname != testHost || !slices.Equal(r.Demands.Tags, []string{"blue"}) || r.Demands.RunnerID == "" {
			t.Errorf("run demands = %+v", r.Demands)
		}
		if s := waitEnded(t, f, out.SessionID); s.Status != orchestrator.SessionCompleted {
			t.Errorf("demanding run = %s %s", s.Status, s.Error)
		}
		// A resume carries the demands too.
		ai := ok[mcpserver.RunOutput](t, call(t, plain, "start_agent_session", map[string]any{"agent_name": "echo-agent", "prompt": "a"}))
		res := ok[mcpserver.RunOutput](t, call(t, cs, "resume_agent_session", map[string]any{"session_id": ai.SessionID, "prompt": "b", "mode": "async_poll"}))
		if d := getRun(t, f, res.RunID).Demands; d.Hostname != testHost || !slices.Equal(d.Tags, []string{"blue"}) {
			t.Errorf("resume demands = %+v", d)
		}
		waitEnded(t, f, ai.SessionID)

		bad := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderDemands: `{"hostnme":"x"}`}, nil)
		e := failed(t, call(t, bad, "start_agent_session", map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 1}}))
		if e.Error != "invalid_header" || e.Header != mcpserver.HeaderDemands || !strings.Contains(e.Message, "hostnme") ||
			!strings.Contains(e.Hint, "configuration") || strings.Contains(e.Hint, "Correct the arguments") {
			t.Errorf("malformed demands: %+v", e)
		}
		// Tools that do not read the header still work.
		ok[mcpserver.AgentListOutput](t, call(t, bad, "list_agent_blueprints", map[string]any{}))
		conflict := connectHTTP(t, endpoint, map[string]string{mcpserver.HeaderDemands: `{"project_dir":"/a"}`}, nil)
		e = failed(t, call(t, conflict, "start_agent_session", map[string]any{
			"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 1}, "project_dir": "/b",
		}))
		if e.Error != "demands_conflict" {
			t.Errorf("conflicting demands: %+v", e)
		}
	})
}

// TestSyncWaitIsBounded: a sync start that outlasts SyncWait answers with the session id and status, and
// the model goes on with get_agent_session_result.
func TestSyncWaitIsBounded(t *testing.T) {
	f := newFixture(t)
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{SyncWait: 300 * time.Millisecond}), nil, nil)
	key := t.Name()
	out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{
		"agent_name": "slow", "parameters": map[string]any{"key": key},
	}))
	if out.Status.Ended() || out.SessionID == "" || out.Result != nil || !strings.Contains(out.Note, "get_agent_session_result") {
		t.Fatalf("sync start past SyncWait = %+v", out)
	}
	f.gates.waitStarted(t, key)
	f.gates.get(key).open()
	res := ok[mcpserver.RunOutput](t, call(t, cs, "get_agent_session_result", map[string]any{"session_id": out.SessionID, "wait_seconds": 30}))
	if res.Status != orchestrator.SessionCompleted || string(res.Result.ResultData) != `{"sum":42}` {
		t.Errorf("result = %+v", res)
	}
	// Reaching SyncWait is not a cancellation: nothing was stopped or recorded as cancelled.
	if types, _ := sessionEvents(t, f, out.SessionID); slices.Contains(types, mcpserver.EventCallCancelled) {
		t.Errorf("events %v after a sync wait that ran out", types)
	}
}

// TestProgressWhileWaiting: a client that sends a progress token hears from a sync start while it waits.
func TestProgressWhileWaiting(t *testing.T) {
	f := newFixture(t)
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	cs := connectHTTP(t, f.serveMCP(t, mcpserver.Config{ProgressInterval: 20 * time.Millisecond}), nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params:
			default:
			}
		},
	})
	key := t.Name()
	p := &mcp.CallToolParams{Name: "start_agent_session", Arguments: map[string]any{
		"agent_name": "slow", "parameters": map[string]any{"key": key},
	}}
	p.SetProgressToken("tok-1")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), p)
		done <- res
	}()
	f.gates.waitStarted(t, key)
	select {
	case n := <-progress:
		if n.ProgressToken != "tok-1" || n.Progress < 1 || !strings.Contains(n.Message, "waiting") {
			t.Errorf("progress = %+v", n)
		}
	case <-time.After(testTimeout):
		t.Fatal("no progress notification")
	}
	f.gates.get(key).open()
	select {
	case res := <-done:
		if res == nil {
			t.Fatal("call failed")
		}
		if out := ok[mcpserver.RunOutput](t, res); out.Status != orchestrator.SessionCompleted {
			t.Errorf("result = %+v", out)
		}
	case <-time.After(testTimeout):
		t.Fatal("sync start did not return")
	}
}

// TestInMemory: the server works over any transport; New and a Config's static context (what the stdio
// binary's flags set) need no HTTP.
func TestInMemory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parent, err := f.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "echo-agent", Prompt: "p", Mode: orchestrator.ModeSync})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(f.coord, mcpserver.Config{
		SessionID: parent.SessionID, Tags: []string{"math"},
		Demands: &orchestrator.Demands{Hostname: testHost},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	l := ok[mcpserver.AgentListOutput](t, call(t, cs, "list_agent_blueprints", map[string]any{}))
	if len(l.Agents) != 1 || l.Agents[0].Name != "add" {
		t.Errorf("configured tags: %+v", l.Agents)
	}
	out := ok[mcpserver.RunOutput](t, call(t, cs, "start_agent_session", map[string]any{"agent_name": "add", "parameters": map[string]any{"a": 1, "b": 1}}))
	if s := getSession(t, f, out.SessionID); s.ParentSessionID != parent.SessionID || s.Demands.Hostname != testHost {
		t.Errorf("configured session/demands: parent %q demands %+v", s.ParentSessionID, s.Demands)
	}
}

func TestParseDemands(t *testing.T) {
	d, err := mcpserver.ParseDemands(` {"hostname":"h","tags":["a","b"]} `)
	if err != nil || d.Hostname != "h" || !slices.Equal(d.Tags, []string{"a", "b"}) {
		t.Errorf("ParseDemands = %+v, %v", d, err)
	}
	if d, err := mcpserver.ParseDemands(""); d != nil || err != nil {
		t.Errorf("empty = %+v, %v", d, err)
	}
	for _, bad := range []string{`{"hostnme":"h"}`, `[1]`, `{"hostname":"h"} {}`, `{"tags":["a,b"]}`, `nope`} {
		if _, err := mcpserver.ParseDemands(bad); err == nil {
			t.Errorf("ParseDemands(%s) accepted", bad)
		}
	}
	if got := mcpserver.ParseTags(" a, b ,,a"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ParseTags = %v", got)
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

type scopeKey struct{}

// scopeSpy records the scope its callers' contexts carry.
type scopeSpy struct {
	orchestrator.Coordinator
	got chan any
}

func (s scopeSpy) GetAgent(ctx context.Context, name string) (*orchestrator.AgentInfo, error) {
	s.got <- ctx.Value(scopeKey{})
	return s.Coordinator.GetAgent(ctx, name)
}

// TestRequestContextReachesCoordinator: in the default (stateless) mode, values a middleware puts into an
// HTTP request's context — an authenticator's scope — reach the Coordinator calls its tool call makes.
func TestRequestContextReachesCoordinator(t *testing.T) {
	f := newFixture(t)
	spy := scopeSpy{f.coord, make(chan any, 1)}
	h := mcpserver.NewHandler(spy, mcpserver.Config{})
	endpoint := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, r.Header.Get("X-Scope"))))
	}))
	for _, scope := range []string{"run-1", "run-2"} {
		cs := connectHTTP(t, endpoint, map[string]string{"X-Scope": scope}, nil)
		ok[mcpserver.AgentSchemaOutput](t, call(t, cs, "get_agent_schema", map[string]any{"agent_name": "add"}))
		if got := <-spy.got; got != scope {
			t.Errorf("coordinator saw scope %v, want %s", got, scope)
		}
	}
}
