package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// artifactCoord keeps one session's artifacts in memory; corrupt makes downloads differ from the record.
type artifactCoord struct {
	*fakeCoord
	files   map[string]string
	corrupt bool
}

func (f *artifactCoord) record(name string) *orchestrator.Artifact {
	return &orchestrator.Artifact{SessionID: "ses_a", Name: name, Size: int64(len(f.files[name])),
		SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(f.files[name]))), ContentType: "text/plain"}
}

func (f *artifactCoord) PutArtifact(context.Context, orchestrator.PutArtifactParams, io.Reader) (*orchestrator.Artifact, error) {
	panic("ao does not upload")
}

func (f *artifactCoord) ListArtifacts(_ context.Context, id string) ([]*orchestrator.Artifact, error) {
	if id != "ses_a" {
		return nil, orchestrator.Errorf(orchestrator.ErrNotFound, "session_not_found", "session %s not found", id)
	}
	return []*orchestrator.Artifact{f.record("notes/a.txt"), f.record("report.md")}, nil
}

func (f *artifactCoord) OpenArtifact(_ context.Context, id, name string) (*orchestrator.Artifact, io.ReadCloser, error) {
	body, ok := f.files[name]
	if id != "ses_a" || !ok {
		return nil, nil, orchestrator.Errorf(orchestrator.ErrNotFound, "artifact_not_found", "no artifact %q", name)
	}
	a := f.record(name)
	if f.corrupt {
		body = strings.ToUpper(body)
	}
	return a, io.NopCloser(strings.NewReader(body)), nil
}

// ao artifacts lists a session's files; ao artifacts get writes one to stdout or a file, checked against
// its SHA-256, and leaves no file behind when the check fails; bad input exits 2, an unknown one 1.
func TestArtifactsListedAndDownloaded(t *testing.T) {
	f := &artifactCoord{fakeCoord: newFake(), files: map[string]string{"report.md": "# Q3\nall good\n", "notes/a.txt": "a"}}
	run := func(args ...string) (int, string, string) {
		app, out, errb := f.app("")
		app.Connect = func(string, string) (orchestrator.Coordinator, error) { return f, nil }
		return app.Run(context.Background(), args), out.String(), errb.String()
	}
	code, out, errs := run("artifacts", "ses_a")
	if code != 0 || !strings.Contains(out, "report.md") || !strings.Contains(out, "notes/a.txt") || !strings.Contains(out, "14 B") {
		t.Errorf("ao artifacts: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = run("artifacts", "get", "ses_a", "report.md"); code != 0 || out != f.files["report.md"] {
		t.Errorf("ao artifacts get to stdout: exit %d, %q, %s", code, out, errs)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "r.md")
	if code, _, errs = run("artifacts", "get", "ses_a", "report.md", "-o", dst); code != 0 {
		t.Fatalf("ao artifacts get -o: exit %d, %s", code, errs)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != f.files["report.md"] {
		t.Errorf("downloaded file = %q, %v", b, err)
	}

	f.corrupt = true
	bad := filepath.Join(dir, "bad.md")
	if code, _, errs = run("artifacts", "get", "ses_a", "report.md", "-o", bad); code != 1 || !strings.Contains(errs, "SHA-256") {
		t.Errorf("corrupt download: exit %d, %s", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed download left files behind: %v", entries)
	}
	f.corrupt = false

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"artifacts"}, 2},
		{[]string{"artifacts", "get", "ses_a", "../etc/passwd"}, 2},
		{[]string{"artifacts", "get", "ses_a", "missing.txt"}, 1},
		{[]string{"artifacts", "ses_nope"}, 1},
	} {
		if code, _, _ := run(c.args...); code != c.code {
			t.Errorf("ao %v: exit %d, want %d", c.args, code, c.code)
		}
	}
}
