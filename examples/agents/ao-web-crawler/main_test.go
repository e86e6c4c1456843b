package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/executor/deterministic"
)

func TestRunFlags(t *testing.T) {
	s := newTestSite(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  string // a substring
		crawled int    // when code is 0
	}{
		{"no url", nil, 2, "url is required", 0},
		{"bad scheme", []string{"--url", "ftp://example.com"}, 2, "must start with http:// or https://", 0},
		{"no host", []string{"--url", "http://"}, 2, "has no host", 0},
		{"not a url", []string{"--url", "example.com"}, 2, "must start with http://", 0},
		{"negative depth", []string{"--url", s.srv.URL, "--depth=-1"}, 2, "--depth must be 0 or more", 0},
		{"depth not a number", []string{"--url", s.srv.URL, "--depth", "two"}, 2, "invalid value \"two\" for flag -depth", 0},
		{"zero max pages", []string{"--url", s.srv.URL, "--max_pages", "0"}, 2, "--max_pages must be at least 1", 0},
		{"bad timeout", []string{"--url", s.srv.URL, "--timeout_seconds", "0"}, 2, "--timeout_seconds must be more than 0", 0},
		{"unknown flag", []string{"--url", s.srv.URL, "--dept", "1"}, 2, "flag provided but not defined: -dept", 0},
		{"positional", []string{"--url", s.srv.URL, "extra"}, 2, `unexpected argument "extra"`, 0},
		{"bad pattern", []string{"--url", s.srv.URL, "--patterns", "[a-"}, 2, "not a valid glob", 0},
		{"help", []string{"--help"}, 0, "Usage: ao-web-crawler --url URL", 0},
		{"snake case", []string{"--url", s.srv.URL, "--depth", "1", "--max_pages", "3", "--timeout_seconds", "5", "--same_host"}, 0, "done: 3 requests", 3},
		{"kebab case", []string{"--url=" + s.srv.URL, "--depth=1", "--max-pages=4", "--timeout-seconds=5", "--same-host"}, 0, "done: 4 requests", 4},
		{"depth zero", []string{"--url", s.srv.URL, "--depth", "0"}, 0, "done: 1 requests", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr.String())
			}
			if tt.code != 0 || tt.crawled == 0 {
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q, want nothing", stdout.String())
				}
				return
			}
			var r Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("stdout is not a report: %v\n%s", err, stdout.String())
			}
			if r.PagesCrawled != tt.crawled {
				t.Errorf("pages_crawled = %d, want %d", r.PagesCrawled, tt.crawled)
			}
		})
	}
}

func TestRunSameHostFalse(t *testing.T) {
	s := newTestSite(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--url", s.srv.URL, "--depth", "1", "--same_host=false"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if s.hitCounts()["other:/"] != 1 {
		t.Errorf("--same_host=false did not leave the host: %v", s.hitCounts())
	}
}

// A crawl whose start page cannot be fetched fails: exit 3, with the report (and its reason) on stdout.
func TestRunStartPageUnreachable(t *testing.T) {
	s := newTestSite(t)
	for name, url := range map[string]string{
		"refused":   "http://127.0.0.1:1/",
		"not found": s.srv.URL + "/no-such-page",
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--url", url, "--depth", "1", "--timeout_seconds", "5"}, &stdout, &stderr)
		if code != 3 || !strings.Contains(stderr.String(), "could not be fetched") {
			t.Errorf("%s: exit %d, stderr %q; want 3 naming the start page", name, code, stderr.String())
		}
		var r Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || len(r.Errors) != 1 || r.Errors[0].URL != r.StartURL {
			t.Errorf("%s: report %s (%v), want the start page's error in it", name, stdout.String(), err)
		}
	}
}

// buildBinary compiles the package into a temporary directory under the name blueprints run.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "ao-web-crawler")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinaryAsTheExecutorRunsIt runs the compiled program with the argv the deterministic executor builds
// from a parameters object, the same JSON on stdin, and the executor's environment variables.
func TestBinaryAsTheExecutorRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	s := newTestSite(t)

	params := `{"url": "` + s.srv.URL + `", "depth": 1, "patterns": ["*.html", "/docs/*"], "max_pages": 50,
		"all_hosts": false, "timeout_seconds": 5}`
	argv, err := deterministic.BuildArgs("ao-web-crawler", json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"ao-web-crawler", "--depth", "1", "--max_pages", "50", "--patterns", "*.html,/docs/*",
		"--timeout_seconds", "5", "--url", s.srv.URL}
	if !reflect.DeepEqual(argv, wantArgv) {
		t.Fatalf("BuildArgs = %q, want %q", argv, wantArgv)
	}
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Stdin = strings.NewReader(params + "\n")
	cmd.Env = append(os.Environ(), "AGENT_SESSION_ID=ses_test", "AGENT_RUN_ID=run_test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}

	var r Report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not one report: %v", err)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value")
	}
	if got, want := s.paths(&r), []string{"/about.html", "/docs/", "/docs/intro.html", "/missing.html"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages = %q, want %q", got, want)
	}
	if r.PagesCrawled != 8 || r.StopReason != "complete" || len(r.Errors) != 1 {
		t.Errorf("report = %+v", r)
	}

	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d stderr lines, want 8 fetches and a summary:\n%s", len(lines), stderr.String())
	}
	if !contains(lines, "fetched "+s.srv.URL+"/ (200, 8 links)") {
		t.Errorf("no progress line for the start page:\n%s", stderr.String())
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "done: 8 requests, 4 pages reported, 1 errors in ") {
		t.Errorf("summary line = %q", last)
	}

	// Invalid parameters (as a caller that skipped schema validation would send them): exit 2, a reason.
	argv, err = deterministic.BuildArgs("ao-web-crawler", json.RawMessage(`{"url":"`+s.srv.URL+`","depth":-1}`))
	if err != nil {
		t.Fatal(err)
	}
	if argv[1] != "--depth=-1" {
		t.Fatalf("argv = %q", argv)
	}
	cmd = exec.Command(bin, argv[1:]...)
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("run with depth -1: %v, want exit status 2", err)
	}
	if !strings.HasPrefix(stderr.String(), "ao-web-crawler: --depth must be 0 or more, not -1\n") {
		t.Errorf("stderr = %q", stderr.String())
	}
}
