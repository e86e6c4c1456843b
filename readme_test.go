package orchestrator_test

import (
	"os"
	"strings"
	"testing"
)

// The README's embedding example is example_test.go after its imports, word for word, so that it
// compiles and runs (as Example) with every test run.
func TestREADMEEmbeddingExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Embedding\n")
	if !ok {
		t.Fatal("README.md has no Embedding section")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("the Embedding section of README.md has no go code block")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(src), "\n)\n\n")
	if !ok {
		t.Fatal("example_test.go has no import block")
	}
	if block != example {
		t.Errorf("README.md's embedding example differs from example_test.go after its imports:\n--- README.md\n%s\n--- example_test.go\n%s", block, example)
	}
}
