package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// TestRunJSONL: ao run --jsonl starts one session per line, -p set on each, in batches, and prints the
// session ids in the order of the file; a refused batch names the lines.
func TestRunJSONL(t *testing.T) {
	t.Parallel()
	f := crawlerFake()
	var in strings.Builder
	for i := range 1203 {
		fmt.Fprintf(&in, "{\"url\": \"http://x/%d\"}\n", i)
		if i == 5 {
			in.WriteString("\n") // blank lines are skipped
		}
	}
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(path, []byte(in.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	app, out, errb := f.app("")
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "--jsonl", path, "-p", "depth=3"}); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errb)
	}
	ids := strings.Fields(out.String())
	if len(ids) != 1203 || len(f.started) != 1203 || fmt.Sprint(f.batches) != "[1000 203]" {
		t.Fatalf("%d ids printed, %d runs started in batches %v; want 1203 in [1000 203]", len(ids), len(f.started), f.batches)
	}
	if got, want := string(f.started[1202].Parameters), `{"url":"http://x/1202","depth":3}`; got != want {
		t.Errorf("last run's parameters %s, want %s", got, want)
	}
	if ids[0] != f.sessions[0].ID || ids[1202] != f.sessions[1202].ID {
		t.Errorf("ids not in the order of the file")
	}

	f = crawlerFake()
	f.batchErr = orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_runs", "1 of 2 runs are invalid; none was created").
		With("items", []any{map[string]any{"index": 1, "error": "parameter_validation_failed", "message": "no",
			"validation_errors": []any{map[string]any{"path": "$.url", "message": "'y' is not a valid URI"}}}})
	app, out, errb = f.app("{\"url\":\"http://x/\"}\n\n{\"url\":\"y\"}\n")
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "--jsonl", "-"}); code != 2 {
		t.Fatalf("refused batch: exit %d, want 2; stderr:\n%s", code, errb)
	}
	if !strings.Contains(errb.String(), "line 3: no\n    $.url: 'y' is not a valid URI") || out.Len() != 0 {
		t.Errorf("refused batch: stderr:\n%s\nwant line 3 and its error (stdout %q)", errb, out)
	}

	app, _, errb = f.app("{\"url\":\"http://x/\"}\nnot json\n")
	if code := app.Run(context.Background(), []string{"run", "web-crawler", "--jsonl", "-"}); code != 2 || !strings.Contains(errb.String(), "line 2") {
		t.Errorf("a line that is not JSON: exit %d, stderr:\n%s", code, errb)
	}
}
