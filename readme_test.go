package orchestrator_test

import (
	"os"
	"strings"
	"testing"
)

// readFile returns a file of the repository as text, failing the test when it cannot be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text of a Markdown file's "## title" section, up to the next section of that level.
func section(t *testing.T, path, text, title string) string {
	t.Helper()
	_, s, ok := strings.Cut(text, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", path, "## "+title)
	}
	s, _, _ = strings.Cut(s, "\n## ")
	return s
}

// codeBlock returns the first fenced code block of text opened with "```"+lang.
func codeBlock(t *testing.T, where, text, lang string) string {
	t.Helper()
	_, block, ok := strings.Cut(text, "```"+lang+"\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatalf("%s has no %s code block", where, lang)
	}
	return block
}

// The README's embedding example is example_test.go after its imports, word for word, so that it
// compiles and runs (as Example) with every test run.
func TestREADMEEmbeddingExample(t *testing.T) {
	t.Parallel()
	readme := readFile(t, "README.md")
	block := codeBlock(t, "the Embedding section of README.md", section(t, "README.md", readme, "Embedding"), "go")
	_, example, ok := strings.Cut(readFile(t, "example_test.go"), "\n)\n\n")
	if !ok {
		t.Fatal("example_test.go has no import block")
	}
	if block != example {
		t.Errorf("README.md's embedding example differs from example_test.go after its imports:\n--- README.md\n%s\n--- example_test.go\n%s", block, example)
	}
}

// The README is a front page: short, with Go code that embeds the library near its top, and the quick
// start's two commands. Reference material belongs in docs/, which the README links to.
func TestREADMEIsAFrontPage(t *testing.T) {
	t.Parallel()
	readme := readFile(t, "README.md")
	lines := strings.Split(strings.TrimSuffix(readme, "\n"), "\n")
	if len(lines) > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move reference sections to a page of docs/ and link it", len(lines))
	}
	first := 0
	for i, l := range lines {
		if l == "```go" {
			first = i + 1
			break
		}
	}
	if first == 0 || first > 80 {
		t.Errorf("README.md's first Go code block starts at line %d, want one within the first 80 lines", first)
	}

	// The quick start is two commands, and both must keep working from the repository's root.
	commands := codeBlock(t, "the Quick start section of README.md", section(t, "README.md", readme, "Quick start"), "sh")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(commands), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		got = append(got, strings.TrimSpace(cmd))
	}
	want := []string{"go run ./examples/quickstart", "go test -race ./..."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's quick start runs %q, want %q", got, want)
	}
	if fi, err := os.Stat("examples/quickstart/main.go"); err != nil || fi.IsDir() {
		t.Errorf("the quick start runs ./examples/quickstart, which has no main.go: %v", err)
	}
}

// BENCHMARKS.md shows the current figure of each benchmark; the dated record of how each was reached lives
// in docs/benchmarks-history.md, so that the page stays one a reader can hold.
func TestBenchmarksPageShowsCurrentFigures(t *testing.T) {
	t.Parallel()
	page := readFile(t, "BENCHMARKS.md")
	if n := strings.Count(page, "\n"); n > 400 {
		t.Errorf("BENCHMARKS.md has %d lines, want at most 400: replace superseded figures and move the session's account to docs/benchmarks-history.md", n)
	}
	section(t, "BENCHMARKS.md", page, "Targets")
	if !strings.Contains(page, "](docs/benchmarks-history.md)") {
		t.Error("BENCHMARKS.md does not link docs/benchmarks-history.md")
	}
}
