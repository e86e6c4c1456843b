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

// makeTree writes a small tree and returns its root:
//
//	main.go              3 lines, 29 bytes
//	README               2 lines (no final newline), 11 bytes
//	.bashrc              1 line, 10 bytes
//	empty.txt            0 lines, 0 bytes
//	docs/guide.md        4 lines, 15 bytes
//	docs/notes.MD        1 line, 6 bytes
//	cmd/tool/main.go     5 lines (no final newline), 58 bytes
//	late-nul.dat         NUL after the first 8 KiB: text, 1 line, 9002 bytes
//	bin/tool.bin         NUL in the first bytes: binary
//	vendor/x.go, node_modules/pkg/index.js, .git/config   excluded by default
//	link.go              a symbolic link to main.go
func makeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"main.go":                   "package main\n\nfunc main() {}\n",
		"README":                    "hello\nworld",
		".bashrc":                   "export X=1",
		"empty.txt":                 "",
		"docs/guide.md":             "# G\n\ntext\nmore\n",
		"docs/notes.MD":             "notes\n",
		"cmd/tool/main.go":          "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(1) }",
		"late-nul.dat":              strings.Repeat("a", 9000) + "\x00\n",
		"bin/tool.bin":              "\x7fELF\x00\x01\x02\n",
		"vendor/x.go":               "package x\n",
		"node_modules/pkg/index.js": "module.exports = 1\n",
		".git/config":               "[core]\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("main.go", filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	return root
}

func scan(t *testing.T, opts Options) *Report {
	t.Helper()
	if opts.Exclude == nil {
		opts.Exclude = splitList(DefaultExclude)
	}
	r, err := Scan(context.Background(), opts)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return r
}

func TestScan(t *testing.T) {
	root := makeTree(t)
	r := scan(t, Options{Root: root, Top: 3})
	if r.Path != root && !strings.HasSuffix(r.Path, filepath.Base(root)) {
		t.Errorf("path = %q, want %q", r.Path, root)
	}
	if r.Files != 8 || r.Lines != 3+2+1+0+4+1+5+1 || r.Bytes != 29+11+10+0+15+6+58+9002 {
		t.Errorf("totals = %d files, %d lines, %d bytes", r.Files, r.Lines, r.Bytes)
	}
	wantExt := []ExtensionStats{
		{".go", 2, 8, 87},
		{".md", 2, 5, 21},
		{"", 2, 3, 21},
		{".dat", 1, 1, 9002},
		{".txt", 1, 0, 0},
	}
	if !reflect.DeepEqual(r.Extensions, wantExt) {
		t.Errorf("extensions = %+v\nwant %+v", r.Extensions, wantExt)
	}
	wantLargest := []FileStats{{"late-nul.dat", 9002, 1}, {"cmd/tool/main.go", 58, 5}, {"main.go", 29, 3}}
	if !reflect.DeepEqual(r.LargestFiles, wantLargest) {
		t.Errorf("largest = %+v, want %+v", r.LargestFiles, wantLargest)
	}
	if r.BinaryFilesSkipped != 1 || r.ExcludedEntries != 3 || r.SpecialFilesSkipped != 1 || len(r.Errors) != 0 {
		t.Errorf("binary %d, excluded %d, special %d, errors %v", r.BinaryFilesSkipped, r.ExcludedEntries,
			r.SpecialFilesSkipped, r.Errors)
	}

	// Deterministic: the same tree gives the same report.
	again := scan(t, Options{Root: root, Top: 3})
	r.DurationMS, again.DurationMS = 0, 0
	if !reflect.DeepEqual(r, again) {
		t.Errorf("a second scan differs:\n%+v\n%+v", r, again)
	}
}

func TestScanPatternsExcludeTop(t *testing.T) {
	root := makeTree(t)
	files := func(r *Report) []string {
		var out []string
		for _, f := range r.LargestFiles {
			out = append(out, f.Path)
		}
		return out
	}
	tests := []struct {
		name     string
		patterns []string
		exclude  []string
		want     []string // every counted file, by size
	}{
		{"go files", []string{"*.go"}, nil, []string{"cmd/tool/main.go", "main.go"}},
		{"path glob", []string{"cmd/*/*.go"}, nil, []string{"cmd/tool/main.go"}},
		{"leading slash", []string{"/docs/*"}, nil, []string{"docs/guide.md", "docs/notes.MD"}},
		{"case-sensitive globs", []string{"*.md"}, nil, []string{"docs/guide.md"}},
		{"several", []string{"README", "*.txt", "*.bin"}, nil, []string{"README", "empty.txt"}},
		{"exclude nothing", []string{"*.go", "*.js", "config"}, []string{},
			[]string{"cmd/tool/main.go", "main.go", "node_modules/pkg/index.js", "vendor/x.go", ".git/config"}},
		{"exclude files and dirs", nil, []string{"docs", "*.dat", ".*", "cmd"},
			[]string{"main.go", "node_modules/pkg/index.js", "README", "vendor/x.go", "empty.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scan(t, Options{Root: root, Patterns: tt.patterns, Exclude: tt.exclude, Top: 100})
			if got := files(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("files = %q, want %q", got, tt.want)
			}
			if r.Files != len(tt.want) {
				t.Errorf("files = %d, want %d", r.Files, len(tt.want))
			}
		})
	}
	if r := scan(t, Options{Root: root, Top: 0}); len(r.LargestFiles) != 0 || r.Files != 8 {
		t.Errorf("top 0: %d largest, %d files", len(r.LargestFiles), r.Files)
	}
}

func TestCountFileBinaryBoundary(t *testing.T) {
	dir := t.TempDir()
	buf := make([]byte, 1000) // smaller than 8 KiB: the boundary falls inside a later read
	for _, tt := range []struct {
		at     int
		binary bool
	}{{0, true}, {binarySniffBytes - 1, true}, {binarySniffBytes, false}, {20000, false}} {
		content := bytes.Repeat([]byte("x\n"), 15000)
		content[tt.at] = 0
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		size, lines, binary, err := countFile(p, buf)
		if err != nil || binary != tt.binary {
			t.Errorf("NUL at %d: binary = %v, %v; want %v", tt.at, binary, err, tt.binary)
		}
		if !binary && (size != 30000 || lines != 15000-int64(tt.at%2)) {
			t.Errorf("NUL at %d: size %d, lines %d", tt.at, size, lines)
		}
	}
}

func TestScanProgressAndErrors(t *testing.T) {
	root := makeTree(t)
	var progress bytes.Buffer
	scan(t, Options{Root: root, ProgressEvery: 3, Progress: &progress})
	if got := strings.Count(progress.String(), "\n"); got != 2 {
		t.Errorf("progress lines = %d, want 2 (8 files, one every 3):\n%s", got, progress.String())
	}
	if !strings.HasPrefix(progress.String(), "scanned 3 files (") {
		t.Errorf("progress = %q", progress.String())
	}

	if os.Geteuid() == 0 {
		t.Skip("root reads unreadable directories")
	}
	locked := filepath.Join(root, "docs")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	r := scan(t, Options{Root: root})
	if len(r.Errors) != 1 || r.Errors[0].Path != "docs" || !strings.Contains(r.Errors[0].Error, "permission denied") {
		t.Errorf("errors = %+v", r.Errors)
	}
	if r.Files != 6 {
		t.Errorf("files = %d, want 6", r.Files)
	}
}

func TestExtension(t *testing.T) {
	for name, want := range map[string]string{
		"a.go": ".go", "A.TXT": ".txt", "Makefile": "", ".bashrc": "", ".eslintrc.json": ".json",
		"archive.tar.gz": ".gz", "trailing.": "",
	} {
		if got := Extension(name); got != want {
			t.Errorf("Extension(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestRun(t *testing.T) {
	root := makeTree(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no path", nil, 2, "--path is required"},
		{"missing path", []string{"--path", filepath.Join(root, "nope")}, 2, "does not exist"},
		{"a file", []string{"--path", filepath.Join(root, "main.go")}, 2, "is not a directory"},
		{"negative top", []string{"--path", root, "--top=-1"}, 2, "--top must be 0 or more"},
		{"bad glob", []string{"--path", root, "--patterns", "[x"}, 2, "--patterns: \"[x\" is not a valid glob"},
		{"bad exclude", []string{"--path", root, "--exclude", "a,[x"}, 2, "--exclude: \"[x\" is not a valid glob"},
		{"unknown flag", []string{"--path", root, "--depth", "1"}, 2, "flag provided but not defined: -depth"},
		{"positional", []string{root}, 2, "unexpected argument"},
		{"help", []string{"--help"}, 0, "Usage: ao-file-stats --path DIR"},
		{"ok", []string{"--path=" + root, "--patterns", "*.go, *.md", "--top", "1"}, 0, "done: 3 files, 12 lines, 102 bytes; 0 binary skipped, 3 excluded, 0 errors in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q: %s", tt.stderr, stderr.String())
			}
			if tt.name != "ok" {
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q", stdout.String())
				}
				return
			}
			var r Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Files != 3 || len(r.LargestFiles) != 1 || !reflect.DeepEqual(r.Patterns, []string{"*.go", "*.md"}) {
				t.Errorf("report = %+v", r)
			}
		})
	}
}

// TestBinaryAsTheExecutorRunsIt builds the program and runs it with the argv the deterministic executor
// builds from a parameters object, and that JSON on stdin.
func TestBinaryAsTheExecutorRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "ao-file-stats")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := makeTree(t)

	params, _ := json.Marshal(map[string]any{"path": root, "patterns": []string{"*.go", "*.md"},
		"exclude": []string{"vendor", ".git"}, "top": 2})
	argv, err := deterministic.BuildArgs("ao-file-stats", params)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ao-file-stats", "--exclude", "vendor,.git", "--path", root, "--patterns", "*.go,*.md", "--top", "2"}
	if !reflect.DeepEqual(argv, want) {
		t.Fatalf("argv = %q, want %q", argv, want)
	}
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Stdin = bytes.NewReader(append(params, '\n'))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var r Report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	// node_modules is no longer excluded, but index.js does not match the patterns.
	if r.Files != 3 || r.ExcludedEntries != 2 || len(r.LargestFiles) != 2 || r.LargestFiles[0].Path != "cmd/tool/main.go" {
		t.Errorf("report = %+v", r)
	}
	if !strings.HasPrefix(stderr.String(), "done: 3 files, 12 lines, 102 bytes;") {
		t.Errorf("stderr = %q", stderr.String())
	}

	cmd = exec.Command(bin, "--path", filepath.Join(root, "missing"))
	stderr.Reset()
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("missing path: %v, want exit status 2", err)
	}
	if !strings.Contains(stderr.String(), "does not exist") {
		t.Errorf("stderr = %q", stderr.String())
	}
}
