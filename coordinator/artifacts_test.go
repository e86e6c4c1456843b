package coordinator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// objects lists the files a file:// bucket holds (its metadata sidecars aside).
func objects(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".attrs") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestArtifacts: an artifact put is listed and read back; a replaced one's bytes are deleted from the
// bucket; bad names and sizes are refused with their codes; deleting the session deletes its objects.
func TestArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "artifacts")
	c := newCoordinator(t, coordinator.Config{
		ArtifactsURL:           (&url.URL{Scheme: "file", Path: dir}).String(),
		MaxArtifactBytes:       1000,
		MaxArtifactsPerSession: 2,
	})
	createAgent(t, c, "writer")
	res := start(t, c, orchestrator.StartRunParams{AgentName: "writer", Prompt: "go"})

	put := func(name, body, ctype string) (*orchestrator.Artifact, error) {
		return c.PutArtifact(ctx, orchestrator.PutArtifactParams{SessionID: res.SessionID, Name: name, ContentType: ctype}, strings.NewReader(body))
	}
	a, err := put("reports/summary.md", "# first", "text/markdown")
	if err != nil {
		t.Fatalf("PutArtifact: %v", err)
	}
	if sum := sha256.Sum256([]byte("# first")); a.Size != 7 || a.SHA256 != hex.EncodeToString(sum[:]) || a.ContentType != "text/markdown" || a.SessionID != res.SessionID {
		t.Errorf("PutArtifact = %+v", a)
	}
	if _, err := put("reports/summary.md", "# second version", ""); err != nil {
		t.Fatalf("PutArtifact (replace): %v", err)
	}
	if got := len(objects(t, dir)); got != 1 {
		t.Errorf("bucket holds %d objects after a replace, want 1 (the old one collected)", got)
	}
	got, rc, err := c.OpenArtifact(ctx, res.SessionID, "reports/summary.md")
	if err != nil {
		t.Fatalf("OpenArtifact: %v", err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "# second version" || got.Size != int64(len(body)) {
		t.Errorf("OpenArtifact = %+v %q, want the second version", got, body)
	}
	if _, ok := rc.(io.Seeker); !ok {
		t.Error("the reader does not seek: range requests would read from the start")
	}

	for _, tc := range []struct {
		name, body string
		kind       error
		code       string
	}{
		{"../escape", "x", orchestrator.ErrInvalid, "invalid_artifact_name"},
		{"/abs", "x", orchestrator.ErrInvalid, "invalid_artifact_name"},
		{"a\x00b", "x", orchestrator.ErrInvalid, "invalid_artifact_name"},
		{strings.Repeat("n", 256), "x", orchestrator.ErrInvalid, "invalid_artifact_name"},
		{"big.bin", strings.Repeat("x", 1001), orchestrator.ErrTooLarge, "artifact_too_large"},
	} {
		_, err := put(tc.name, tc.body, "")
		var oe *orchestrator.Error
		if !errors.Is(err, tc.kind) || !errors.As(err, &oe) || oe.Code != tc.code {
			t.Errorf("PutArtifact(%.20q, %d bytes) = %v, want %v with code %s", tc.name, len(tc.body), err, tc.kind, tc.code)
		}
	}
	if _, err := put("second", "2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := put("third", "3", ""); !errors.Is(err, orchestrator.ErrTooLarge) {
		t.Errorf("a third artifact with a limit of 2 = %v, want ErrTooLarge", err)
	}
	list, err := c.ListArtifacts(ctx, res.SessionID)
	if err != nil || len(list) != 2 || list[0].Name != "reports/summary.md" || list[1].Name != "second" {
		t.Fatalf("ListArtifacts = %v, %v", list, err)
	}
	if got := len(objects(t, dir)); got != 2 {
		t.Errorf("bucket holds %d objects, want 2 (refused uploads leave nothing)", got)
	}
	if _, _, err := c.OpenArtifact(ctx, res.SessionID, "missing"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("OpenArtifact(missing) = %v, want ErrNotFound", err)
	}

	if _, err := c.StopSession(ctx, res.SessionID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSession(ctx, res.SessionID); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if got := objects(t, dir); len(got) != 0 {
		t.Errorf("after deleting the session the bucket holds %v, want nothing", got)
	}
	if _, err := c.ListArtifacts(ctx, res.SessionID); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("ListArtifacts of the deleted session = %v, want ErrNotFound", err)
	}
}

// TestArtifactsNotConfigured: without a bucket, artifact calls say so with a code.
func TestArtifactsNotConfigured(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, coordinator.Config{})
	_, err := c.ListArtifacts(context.Background(), "ses_x")
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "artifacts_not_configured" {
		t.Errorf("ListArtifacts without a bucket = %v, want code artifacts_not_configured", err)
	}
}
