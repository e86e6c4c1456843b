package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// fuzzEnv is one coordinator per fuzz target, shared by its inputs. Sync runs wait 10ms at most.
func fuzzEnv(f *testing.F) (*testEnv, *orchestrator.StartRunResult) {
	env := newEnv(f, Config{MaxBodyBytes: 64 << 10}, coordinator.Config{SyncWait: 10 * time.Millisecond, PollTimeout: 10 * time.Millisecond})
	ctx := ctxT(f)
	must[*orchestrator.AgentInfo](f, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	must[*orchestrator.Registration](f, "RegisterRunner")(env.coord.RegisterRunner(ctx, registration("fuzz-host", crawler())))
	res := must[*orchestrator.StartRunResult](f, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	return env, res
}

// checkAnswer: any input gets a 2xx or a 4xx with a JSON body — never a 5xx, never a panic.
func checkAnswer(t *testing.T, method, target string, body []byte, status int, respBody []byte, ct string) {
	t.Helper()
	if status >= 500 || status < 200 || (status >= 300 && status < 400) {
		t.Fatalf("%s %s with %q: status %d: %s", method, target, body, status, respBody)
	}
	if status == http.StatusNoContent {
		return
	}
	if !strings.HasPrefix(ct, "application/json") || !json.Valid(respBody) {
		t.Fatalf("%s %s with %q: %d answer is not JSON (%s): %q", method, target, body, status, ct, respBody)
	}
	if status >= 400 {
		var m map[string]any
		if json.Unmarshal(respBody, &m) != nil || m["error"] == nil || m["message"] == nil {
			t.Fatalf("%s %s with %q: %d error body without error/message: %s", method, target, body, status, respBody)
		}
	}
}

func fuzzBody(f *testing.F, method, target string, corpus ...string) {
	env, _ := fuzzEnv(f)
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", "{", "null", "[]", `"x"`, "1e999", "{} {}", `{"a":` + strings.Repeat("[", 500),
		`{"agent_name":"a\u0000"}`, "{\"runner_id\":\"\xff\"}", `{"x":"\ud800"}`, `{"\u0000":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(env.handler, method, target, adminTok, body)
		checkAnswer(t, method, target, body, rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
	})
}

func FuzzDecodeStartRun(f *testing.F) {
	fuzzBody(f, "POST", "/runs",
		`{"agent_name":"helper","prompt":"hi"}`,
		`{"agent_name":"helper","parameters":{"prompt":"hi"},"mode":"sync"}`,
		`{"agent_name":"web-crawler","parameters":{"url":"https://example.com","depth":2}}`,
		`{"agent_name":"web-crawler","parameters":{"url":"not-a-url","depth":"deep"}}`,
		`{"agent_name":"web-crawler","mode":"resume","session_id":"ses_x"}`,
		`{"agent_name":"helper","prompt":"x","mode":"async_callback","parent_session_id":"ses_x"}`,
		`{"agent_name":"helper","prompt":"x","demands":{"tags":["a"],"hostname":"h"},"metadata":{"env":{"A":"b"}}}`,
		`{"agent_name":"helper","prompt":"x","metadata":{"env":{"GREETING":"hi"}}}`,
		`{"agent_name":"web-crawler","parameters":{"url":"https://example.com"},"metadata":{"env":{"LD_PRELOAD":"/tmp/x.so","path":"/tmp"}}}`,
		`{"agent_name":"web-crawler","parameters":{"url":"https://example.com"},"metadata":{"env":{"BASH_FUNC_ls%%":"() { id; }","":"x","A=B":"c"}}}`,
		`{"agent_name":"helper","mode":"resume","session_id":"ses_x","metadata":{"env":{"PYTHONWARNINGS":"ignore"}}}`,
		`{"agent_name":"helper","prompt":"x","output_schema":{"type":"strang"}}`,
		`{"agent_name":"helper","prompt":"x","callback_url":"ftp://x"}`,
		`{"agent_name":"helper","parameters":[1,2]}`,
	)
}

func FuzzDecodeRegistration(f *testing.F) {
	fuzzBody(f, "POST", "/runner/register",
		`{"hostname":"h","project_dir":"/p","executor_type":"deterministic","tags":["a"],"max_concurrent":2}`,
		`{"hostname":"h2","blueprints":[{"name":"echo","command":"echo hi","parameters_schema":{"type":"object"}}]}`,
		`{"hostname":"h3","blueprints":[{"name":"bad name!","type":"agent"}]}`,
		`{"hostname":"h4","blueprints":[null]}`,
		`{"hostname":"h5","accepts_agents":true,"executor":{"x":1},"require_matching_tags":true}`,
		`{"hostname":"h6","blueprints":[{"name":"x","parameters_schema":{"type":"strang"}}]}`,
		// fuzzEnv's runner is live: without its secret its identity is taken (409).
		`{"hostname":"fuzz-host","project_dir":"/work","executor_type":"test","runner_secret":"aors_AAAA"}`,
		`{"hostname":"h7","runner_secret":7}`,
	)
}

func FuzzDecodeBlueprint(f *testing.F) {
	fuzzBody(f, "POST", "/agents",
		`{"name":"writer","description":"d","system_prompt":"s","tags":["t"]}`,
		`{"name":"w2","type":"deterministic","command":"x"}`,
		`{"name":"w3","parameters_schema":{"type":"object","properties":{"prompt":{"type":"string"}}},"output_retries":3}`,
		`{"name":"w4","demands":{"runner_id":"x"}}`,
		`{"name":"w5","mcp_servers":{"a":{"command":"x"}},"executor_config":{"model":"m"}}`,
		`{"name":"w6","allowed_env":["GREETING"]}`,
		`{"name":"w7","allowed_env":["NODE_OPTIONS","1X"]}`,
	)
}

func FuzzPatchAgent(f *testing.F) {
	fuzzBody(f, "PATCH", "/agents/helper",
		`{"description":"new"}`,
		`{"tags":null}`,
		`{"name":"other"}`,
		`{"parameters_schema":{"type":"object"}}`,
		`{"type":"deterministic"}`,
	)
}

func FuzzDecodeEvents(f *testing.F) {
	env, res := fuzzEnv(f)
	for _, s := range []string{
		`{"event_type":"progress","message":"m"}`,
		`[{"event_type":"stderr","line":"l"},{"event_type":"message","role":"assistant","content":"x"}]`,
		`{"events":[{"event_type":"result","result_text":"x","exit_code":0}]}`,
		`{"event_type":"executor_session","executor_session_id":"abc"}`,
		`{"event_type":"x","seq":"1","timestamp":"yesterday"}`,
		`{"events":{"event_type":"x"}}`,
		`[null]`, "", "{", "null",
		`{"event_type":"progress","message":"a\u0000b"}`, "{\"event_type\":\"progress\",\"message\":\"\xc3\"}",
		`{"event_type":"progress","message":"\udc00"}`,
	} {
		f.Add([]byte(s))
	}
	target := "/sessions/" + res.SessionID + "/events"
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(env.handler, "POST", target, clientTok, body)
		checkAnswer(t, "POST", target, body, rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
	})
}

func FuzzDecodeReport(f *testing.F) {
	fuzzBody(f, "POST", "/runner/runs/run_x/completed",
		`{"runner_id":"lnch_x","result":{"result_type":"deterministic","result_text":"x","exit_code":0}}`,
		`{"runner_id":"lnch_x","run_id":"run_y"}`,
		`{"runner_id":"lnch_x","error":"boom","result":{"result_data":[1]}}`,
	)
}

func FuzzDecodeReports(f *testing.F) {
	fuzzBody(f, "POST", "/runner/reports",
		`{"reports":[{"runner_id":"lnch_x","run_id":"run_x","status":"completed","result":{"result_text":"x","exit_code":0}}]}`,
		`{"reports":[{"runner_id":"lnch_x","run_id":"run_x","status":"running"},{"run_id":"run_y","status":"failed","error":"e"}]}`,
		`{"reports":[null,{},{"status":7}]}`,
		`{"reports":null}`,
	)
}

// FuzzQuery throws arbitrary query strings (and a Last-Event-ID) at the routes that read queries.
func FuzzQuery(f *testing.F) {
	env, res := fuzzEnv(f)
	for _, s := range []string{
		"limit=10&status=pending,running", "after=3&limit=x", "wait=1s", "wait=-1", "wait=1e9", "cursor=ses_x&limit=0",
		"tags=a,b&type=agent", "type=procedural", "runner_id=lnch_x&max=2&wait=0", "created_before=2026-01-01T00:00:00Z",
		"status=%ff", "wait=0x10", "limit=99999999999999999999",
		"agent_name=%00", "cursor=a%00b", "runner_id=%c3", "parent_session_id=%ff%fe", "%00=1", "tags=%00,a",
	} {
		f.Add(s, "")
	}
	f.Add("", "7")
	f.Add("after=1", "-1")
	targets := []string{"/runs", "/sessions", "/agents", "/runner/runs", "/sessions/" + res.SessionID,
		"/sessions/" + res.SessionID + "/result", "/sessions/" + res.SessionID + "/events"}
	f.Fuzz(func(t *testing.T, query, lastEventID string) {
		if _, err := url.ParseQuery(query); err != nil {
			return // not a query string a client could send
		}
		for _, target := range targets {
			q := url.Values{}
			parsed, _ := url.ParseQuery(query)
			for k, vs := range parsed {
				for _, v := range vs {
					if k == "wait" {
						// Keep waits short: a valid wait holds the request for that long.
						if d, err := parseWait("wait", v, DefaultMaxWait); err == nil && d > 20*time.Millisecond {
							v = "20ms"
						}
					}
					q.Add(k, v)
				}
			}
			full := target + "?" + q.Encode()
			var hdr []string
			if lastEventID != "" && strings.HasSuffix(target, "/events") {
				// An invalid Last-Event-ID must be refused before the stream starts; a valid one would
				// stream forever, so only invalid ones are sent.
				if n, err := parseInt(lastEventID); err != nil || n < 0 {
					hdr = []string{"Accept", "text/event-stream", "Last-Event-ID", lastEventID}
				}
			}
			rec := serve(env.handler, "GET", full, adminTok, nil, hdr...)
			checkAnswer(t, "GET", full, nil, rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
		}
	})
}

// parseInt parses like the stream handler does.
func parseInt(s string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(s), 10, 64) }

// FuzzPathValue throws arbitrary ids (NUL, invalid UTF-8, slashes, dots…) at the routes that take one.
func FuzzPathValue(f *testing.F) {
	env, res := fuzzEnv(f)
	for _, s := range []string{res.SessionID, "ses_x", "", "\x00", "a\x00b", "\xff", "..", "a/b", "%", strings.Repeat("x", 600)} {
		f.Add(s)
	}
	routes := []struct{ method, pattern string }{
		{"GET", "/sessions/%s"}, {"GET", "/sessions/%s/result"}, {"GET", "/sessions/%s/events"},
		{"GET", "/runs/%s"}, {"GET", "/agents/%s"}, {"GET", "/agents/%s/schema"}, {"DELETE", "/runners/%s"},
		{"POST", "/runner/runs/%s/started"}, {"DELETE", "/runner/%s"},
	}
	f.Fuzz(func(t *testing.T, id string) {
		if id == "" || id == "." || id == ".." {
			return // an empty or dot segment: the mux redirects to the cleaned path
		}
		for _, rt := range routes {
			target := strings.Replace(rt.pattern, "%s", url.PathEscape(id), 1)
			var body []byte
			if rt.method == "POST" {
				body = []byte(`{"runner_id":"lnch_x"}`)
			}
			rec := serve(env.handler, rt.method, target, adminTok, body)
			checkAnswer(t, rt.method, target, body, rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
		}
	})
}
