package blueprints_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/deterministic"
)

// The programs the blueprints run, by command name, and their packages.
var agents = map[string]string{
	"ao-web-crawler": "github.com/agentorchestrator/orchestrator/examples/agents/ao-web-crawler",
	"ao-file-stats":  "github.com/agentorchestrator/orchestrator/examples/agents/ao-file-stats",
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// agentsBin builds the example agents, once, into a directory that is put on the runs' PATH, as the
// runner example does.
func agentsBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the example agents")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "ao-agents-"); buildErr != nil {
			return
		}
		for name, pkg := range agents {
			out, err := exec.Command(goTool, "build", "-o", filepath.Join(binDir, name), pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func load(t *testing.T) map[string]*orchestrator.Blueprint {
	t.Helper()
	bps, err := orchestrator.LoadBlueprints(".", orchestrator.AgentTypeDeterministic)
	if err != nil {
		t.Fatalf("LoadBlueprints: %v", err)
	}
	out := map[string]*orchestrator.Blueprint{}
	for _, b := range bps {
		out[b.Name] = b
	}
	return out
}

func TestLoadBlueprints(t *testing.T) {
	bps, err := orchestrator.LoadBlueprints(".", orchestrator.AgentTypeDeterministic)
	if err != nil {
		t.Fatalf("LoadBlueprints: %v", err)
	}
	var names []string
	for _, b := range bps {
		names = append(names, b.Name)
		if b.Type != orchestrator.AgentTypeDeterministic {
			t.Errorf("%s: type %q, want deterministic (the folder's default)", b.Name, b.Type)
		}
		if len(b.ParametersSchema) == 0 || b.Description == "" {
			t.Errorf("%s: no parameters_schema or description", b.Name)
		}
	}
	if want := []string{"echo-json", "file-stats", "web-crawler"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("blueprints = %q, want %q", names, want)
	}
	m := load(t)
	for name, command := range map[string]string{"web-crawler": "ao-web-crawler", "file-stats": "ao-file-stats"} {
		b := m[name]
		if b.Command != command || len(b.OutputSchema) == 0 || b.Timeout() <= 0 || len(b.Tags) == 0 {
			t.Errorf("%s: command %q, output_schema %d bytes, timeout %v, tags %q", name, b.Command,
				len(b.OutputSchema), b.Timeout(), b.Tags)
		}
	}
}

// TestEchoJSONIsTheDocumentedExample checks echo-json.json against the documented example, key for key.
func TestEchoJSONIsTheDocumentedExample(t *testing.T) {
	const documented = `{
  "name": "echo-json",
  "description": "Echoes parameters as JSON (for testing)",
  "command": "python -c \"import sys, json; print(json.dumps(json.loads(sys.stdin.read())))\"",
  "parameters_schema": {
    "type": "object",
    "properties": {
      "message": { "type": "string" },
      "count": { "type": "integer" }
    }
  }
}`
	data, err := os.ReadFile("echo-json.json")
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(documented), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("echo-json.json differs from the documented example:\n%s", data)
	}
	argv, err := deterministic.BuildArgs(load(t)["echo-json"].Command, json.RawMessage(`{"message":"hi","count":3}`))
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"python", "-c", "import sys, json; print(json.dumps(json.loads(sys.stdin.read())))",
		"--count", "3", "--message", "hi"}
	if !reflect.DeepEqual(argv, wantArgv) {
		t.Errorf("argv = %q, want %q", argv, wantArgv)
	}
}

func TestEchoJSONRuns(t *testing.T) {
	if _, err := exec.LookPath("python"); err != nil {
		t.Skip("python is not on PATH")
	}
	b := load(t)["echo-json"]
	params := json.RawMessage(`{"count":3,"message":"hi"}`)
	res, _ := execute(t, b, params, "")
	var got, want any
	if err := json.Unmarshal(res.ResultData, &got); err != nil {
		t.Fatalf("result_data = %s: %v", res.ResultData, err)
	}
	_ = json.Unmarshal(params, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result_data = %s, want %s", res.ResultData, params)
	}
}

// normalize validates params against the blueprint's schema and applies its defaults, as the coordinator
// does before it creates a run.
func normalize(t *testing.T, b *orchestrator.Blueprint, params string) json.RawMessage {
	t.Helper()
	schema, err := orchestrator.CompileSchema(b.ParametersSchema)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, err := schema.Normalize(json.RawMessage(params))
	if err != nil || len(errs) > 0 {
		t.Fatalf("%s: parameters %s rejected: %v %+v", b.Name, params, err, errs)
	}
	return out
}

// execute runs b with params through the real deterministic executor — BuildArgs, the parameters on
// stdin, stderr lines as events, the output schema checked — with the built agents on PATH. It returns
// the result and the stderr lines.
func execute(t *testing.T, b *orchestrator.Blueprint, params json.RawMessage, path string) (*orchestrator.Result, []string) {
	t.Helper()
	var (
		mu    sync.Mutex
		lines []string
	)
	sink := orchestrator.EventSinkFunc(func(_ context.Context, events ...orchestrator.Event) error {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			if ev.Type != orchestrator.EventStderr {
				continue
			}
			var d struct{ Line string }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Errorf("stderr event %s: %v", ev.Data, err)
			}
			lines = append(lines, d.Line)
		}
		return nil
	})
	env := map[string]string{orchestrator.EnvSessionID: "ses_test", orchestrator.EnvRunID: "run_test"}
	if path != "" {
		env["PATH"] = path + string(os.PathListSeparator) + os.Getenv("PATH")
	}
	inv := &orchestrator.Invocation{
		Mode:         orchestrator.RunTypeStart,
		RunID:        "run_test",
		SessionID:    "ses_test",
		AgentName:    b.Name,
		Blueprint:    b,
		Parameters:   params,
		OutputSchema: b.OutputSchema,
		Env:          env,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := deterministic.New(deterministic.Config{}).Execute(ctx, inv, sink)
	if err != nil {
		t.Fatalf("%s: Execute: %v", b.Name, err)
	}
	if res.Failed() {
		t.Fatalf("%s failed: %s (exit %v, validation errors %+v)\nstdout: %s\nstderr: %q", b.Name, res.Error,
			res.ExitCode, res.ValidationErrors, res.ResultText, lines)
	}
	if len(b.OutputSchema) > 0 {
		checkOutput(t, b, res.ResultText)
	}
	mu.Lock()
	defer mu.Unlock()
	return res, append([]string(nil), lines...)
}

// checkOutput validates stdout against the blueprint's output schema (the executor does too; this says so
// independently).
func checkOutput(t *testing.T, b *orchestrator.Blueprint, stdout string) {
	t.Helper()
	schema, err := orchestrator.CompileSchema(b.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: stdout is not JSON: %v\n%s", b.Name, err, stdout)
	}
	if errs := schema.Validate(v); len(errs) > 0 {
		t.Errorf("%s: stdout does not match output_schema: %+v", b.Name, errs)
	}
}

// requireAllParameters fails unless params sets every property the blueprint declares (booleans true, so
// that each becomes a flag): running the program with them then proves it accepts every flag.
func requireAllParameters(t *testing.T, b *orchestrator.Blueprint, params json.RawMessage) {
	t.Helper()
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b.ParametersSchema, &schema); err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	for name, prop := range schema.Properties {
		v, ok := p[name]
		if !ok || v == nil || (prop.Type == "boolean" && v != true) {
			t.Errorf("%s: the sample parameters do not pass %q as a flag", b.Name, name)
		}
	}
}

// site is a small local web site with a second host.
func site(t *testing.T) (main, other *httptest.Server) {
	t.Helper()
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>Elsewhere</title><a href="/far.html">far</a>`)
	}))
	t.Cleanup(other.Close)
	main = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprintf(w, `<title>Home</title><a href="/a.html">a</a> <a href="/b/">b</a> <a href="%s/">o</a>`, other.URL)
		case "/a.html":
			fmt.Fprint(w, `<title>A</title><a href="/missing.html">gone</a> <a href="/">home</a>`)
		case "/b/":
			fmt.Fprint(w, `<title>B</title><a href="../a.html">a</a> <a href="c.txt">c</a>`)
		case "/b/c.txt":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "plain text")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(main.Close)
	return main, other
}

func TestWebCrawlerEndToEnd(t *testing.T) {
	bin := agentsBin(t)
	b := load(t)["web-crawler"]
	srv, other := site(t)

	// Every parameter: the program must accept each one as a flag.
	params := normalize(t, b, `{"url": "`+srv.URL+`", "depth": 2, "patterns": ["*.html", "/b/*"],
		"max_pages": 20, "all_hosts": true, "timeout_seconds": 5, "max_duration_seconds": 30}`)
	requireAllParameters(t, b, params)
	argv, err := deterministic.BuildArgs(b.Command, params)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ao-web-crawler", "--all_hosts", "--depth", "2", "--max_duration_seconds", "30",
		"--max_pages", "20", "--patterns", "*.html,/b/*", "--timeout_seconds", "5", "--url", srv.URL}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q\nwant %q", argv, want)
	}
	res, lines := execute(t, b, params, bin)
	var report struct {
		PagesCrawled int `json:"pages_crawled"`
		Pages        []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"pages"`
		Errors []struct{ URL string } `json:"errors"`
	}
	if err := json.Unmarshal(res.ResultData, &report); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range report.Pages {
		urls = append(urls, p.URL)
	}
	// Depth 2 with all_hosts: /, a, b, the other host (depth 1); missing, c.txt, far (depth 2). Reported:
	// *.html and /b/*, whatever the host. Only missing.html fails.
	wantURLs := []string{srv.URL + "/a.html", srv.URL + "/b/", srv.URL + "/b/c.txt", srv.URL + "/missing.html", other.URL + "/far.html"}
	sort.Strings(wantURLs)
	if !reflect.DeepEqual(urls, wantURLs) || report.PagesCrawled != 7 || len(report.Errors) != 1 {
		t.Errorf("report = %s", res.ResultData)
	}
	if !contains(lines, "fetched "+srv.URL+"/ (200, 3 links)") || !strings.HasPrefix(lines[len(lines)-1], "done: 7 requests") {
		t.Errorf("stderr lines = %q", lines)
	}

	// Only the required parameter: the schema's defaults become flags, and all_hosts (false) is omitted.
	params = normalize(t, b, `{"url": "`+srv.URL+`"}`)
	argv, _ = deterministic.BuildArgs(b.Command, params)
	want = []string{"ao-web-crawler", "--depth", "2", "--max_duration_seconds", "90", "--max_pages", "50",
		"--timeout_seconds", "10", "--url", srv.URL}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv with defaults = %q\nwant %q", argv, want)
	}
	res, _ = execute(t, b, params, bin)
	report.PagesCrawled = 0
	if err := json.Unmarshal(res.ResultData, &report); err != nil || report.PagesCrawled != 5 {
		t.Errorf("same-host crawl with defaults = %s", res.ResultData)
	}
}

func TestFileStatsEndToEnd(t *testing.T) {
	bin := agentsBin(t)
	b := load(t)["file-stats"]
	dir := t.TempDir()
	for name, content := range map[string]string{
		"main.go":       "package main\n\nfunc main() {}\n",
		"README.md":     "# Title\n\nText.\n",
		"lib/util.go":   "package lib\n",
		"lib/blob.bin":  "\x00\x01\x02",
		"skip/big.go":   strings.Repeat("// line\n", 100),
		"node_modules/": "",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	params := normalize(t, b, `{"path": "`+dir+`", "patterns": ["*.go", "*.md", "*.bin"], "exclude": ["skip"], "top": 2}`)
	requireAllParameters(t, b, params)
	argv, err := deterministic.BuildArgs(b.Command, params)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ao-file-stats", "--exclude", "skip", "--path", dir, "--patterns", "*.go,*.md,*.bin", "--top", "2"}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q\nwant %q", argv, want)
	}
	res, lines := execute(t, b, params, bin)
	var report struct {
		Files        int   `json:"files"`
		Lines        int64 `json:"lines"`
		Binary       int   `json:"binary_files_skipped"`
		Excluded     int   `json:"excluded_entries"`
		LargestFiles []struct {
			Path string `json:"path"`
		} `json:"largest_files"`
	}
	if err := json.Unmarshal(res.ResultData, &report); err != nil {
		t.Fatal(err)
	}
	if report.Files != 3 || report.Lines != 7 || report.Binary != 1 || report.Excluded != 1 ||
		len(report.LargestFiles) != 2 || report.LargestFiles[0].Path != "main.go" {
		t.Errorf("report = %s", res.ResultData)
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "done: 3 files, 7 lines") {
		t.Errorf("stderr lines = %q", lines)
	}

	// Defaults: exclude [".git","node_modules","vendor"] and top 10 become flags.
	params = normalize(t, b, `{"path": "`+dir+`"}`)
	argv, _ = deterministic.BuildArgs(b.Command, params)
	want = []string{"ao-file-stats", "--exclude", ".git,node_modules,vendor", "--path", dir, "--top", "10"}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv with defaults = %q\nwant %q", argv, want)
	}
	res, _ = execute(t, b, params, bin)
	report.Files = 0
	if err := json.Unmarshal(res.ResultData, &report); err != nil || report.Files != 4 {
		t.Errorf("report with defaults = %s", res.ResultData)
	}
}

// TestReadmeExample keeps README.md's worked example true.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	b := load(t)["web-crawler"]
	params := normalize(t, b, `{"url": "https://example.com", "patterns": ["*.html", "/docs/*"], "all_hosts": true}`)
	argv, err := deterministic.BuildArgs(b.Command, params)
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		q, _ := json.Marshal(a)
		quoted[i] = string(q)
	}
	// The README wraps the argv over two lines.
	flat := strings.Join(strings.Fields(string(readme)), " ")
	for _, want := range []string{string(params), "[" + strings.Join(quoted, ", ") + "]"} {
		if !strings.Contains(flat, want) {
			t.Errorf("README.md does not show %s", want)
		}
	}
}

func TestSchemasRejectBadParameters(t *testing.T) {
	m := load(t)
	tests := []struct {
		agent, params, path string
	}{
		{"web-crawler", `{}`, "$"},
		{"web-crawler", `{"url": "ftp://example.com/"}`, "$.url"},
		{"web-crawler", `{"url": "not a url"}`, "$.url"},
		{"web-crawler", `{"url": "https://example.com", "depth": 6}`, "$.depth"},
		{"web-crawler", `{"url": "https://example.com", "depth": -1}`, "$.depth"},
		{"web-crawler", `{"url": "https://example.com", "depth": "2"}`, "$.depth"},
		{"web-crawler", `{"url": "https://example.com", "patterns": ["a,b"]}`, "$.patterns[0]"},
		{"web-crawler", `{"url": "https://example.com", "max_pages": 0}`, "$.max_pages"},
		{"web-crawler", `{"url": "https://example.com", "all_hosts": "yes"}`, "$.all_hosts"},
		{"web-crawler", `{"url": "https://example.com", "timeout_seconds": 0}`, "$.timeout_seconds"},
		{"web-crawler", `{"url": "https://example.com", "same_host": false}`, "$"},
		{"file-stats", `{}`, "$"},
		{"file-stats", `{"path": ""}`, "$.path"},
		{"file-stats", `{"path": "/tmp", "top": -1}`, "$.top"},
		{"file-stats", `{"path": "/tmp", "exclude": "vendor"}`, "$.exclude"},
		{"file-stats", `{"path": "/tmp", "depth": 1}`, "$"},
	}
	for _, tt := range tests {
		schema, err := orchestrator.CompileSchema(m[tt.agent].ParametersSchema)
		if err != nil {
			t.Fatal(err)
		}
		_, errs, err := schema.Normalize(json.RawMessage(tt.params))
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) == 0 || errs[0].Path != tt.path {
			t.Errorf("%s %s: errors %+v, want one at %s", tt.agent, tt.params, errs, tt.path)
		}
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
