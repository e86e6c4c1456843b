package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
)

// TestArtifactsOverHTTP: an artifact uploaded through the client is listed and downloads equal, with
// its ETag and range requests; bad names are 400 invalid_artifact_name and store nothing; a runner's
// credential reaches only its own sessions' artifacts.
func TestArtifactsOverHTTP(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "artifacts")
	env := newEnv(t, Config{}, coordinator.Config{ArtifactsURL: (&url.URL{Scheme: "file", Path: dir}).String()})
	c := env.client(t, clientTok)
	check(t, "CreateAgent", func() error { _, err := env.client(t, adminTok).CreateAgent(ctxT(t), aiAgent("writer")); return err }())
	res := must[*orchestrator.StartRunResult](t, "StartRun")(c.StartRun(ctxT(t), orchestrator.StartRunParams{AgentName: "writer", Prompt: "go"}))

	body := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 000 bytes
	sum := sha256.Sum256(body)
	a := must[*orchestrator.Artifact](t, "PutArtifact")(c.PutArtifact(ctxT(t), orchestrator.PutArtifactParams{
		SessionID: res.SessionID, Name: "out/data.bin", ContentType: "application/octet-stream"}, bytes.NewReader(body)))
	if a.Size != int64(len(body)) || a.SHA256 != hex.EncodeToString(sum[:]) || a.Name != "out/data.bin" {
		t.Fatalf("PutArtifact = %+v", a)
	}
	list := must[[]*orchestrator.Artifact](t, "ListArtifacts")(c.ListArtifacts(ctxT(t), res.SessionID))
	if len(list) != 1 || list[0].SHA256 != a.SHA256 {
		t.Fatalf("ListArtifacts = %v", list)
	}
	got, rc, err := c.OpenArtifact(ctxT(t), res.SessionID, "out/data.bin")
	check(t, "OpenArtifact", err)
	data, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(data, body) || got.SHA256 != a.SHA256 || got.Size != a.Size {
		t.Errorf("download: %d bytes, record %+v; want the upload (%d bytes, sha256 %s)", len(data), got, len(body), a.SHA256)
	}

	// Range, and the name's slash sent as it is.
	rec := serve(env.handler, "GET", "/sessions/"+res.SessionID+"/artifacts/out/data.bin", clientTok, nil, "Range", "bytes=100-115")
	if rec.Code != http.StatusPartialContent || !bytes.Equal(rec.Body.Bytes(), body[100:116]) {
		t.Errorf("Range: %d %q, want 206 %q", rec.Code, rec.Body, body[100:116])
	}
	if etag := rec.Header().Get("ETag"); etag != `"`+a.SHA256+`"` {
		t.Errorf("ETag = %q, want the sha256", etag)
	}

	for name, code := range map[string]string{
		"..%2Fescape": "invalid_artifact_name", "a%2F..%2Fb": "invalid_artifact_name", "%2Fabs": "invalid_artifact_name",
		"a%5Cb": "invalid_artifact_name", "a%01b": "invalid_artifact_name",
		"a%00b": "invalid_encoding", // the API refuses NUL anywhere in a request before any route sees it
	} {
		rec := serve(env.handler, "PUT", "/sessions/"+res.SessionID+"/artifacts/"+name, clientTok, []byte("x"), "Content-Type", "text/plain")
		if e := errorBody(t, rec, http.StatusBadRequest); e["error"] != code {
			t.Errorf("PUT %s: error %v, want %s", name, e["error"], code)
		}
	}
	if list := must[[]*orchestrator.Artifact](t, "ListArtifacts")(c.ListArtifacts(ctxT(t), res.SessionID)); len(list) != 1 {
		t.Errorf("after refused uploads: %d artifacts, want 1", len(list))
	}

	// A runner that holds none of the session's runs does not reach it.
	rc2, _ := env.runnerClient(t, registration("other-host"))
	if _, err := rc2.ListArtifacts(ctxT(t), res.SessionID); orchestrator.ErrorCode(err) != "session_not_found" {
		t.Errorf("another runner's ListArtifacts = %v, want session_not_found", err)
	}
}
