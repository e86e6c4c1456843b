package orchestrator

import (
	"context"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Artifact is a file a session produced: a report, a patch, a screenshot, a data set. Its bytes live in
// the coordinator's blob bucket; this is what the store records about them. A run uploads them during
// the run through its gateway (PUT /sessions/{id}/artifacts/{name}); a client or embedding program
// uploads with [ArtifactKeeper.PutArtifact].
type Artifact struct {
	SessionID string `json:"session_id"`
	// Name is the artifact's path within its session: "report.md", "screenshots/home.png" (see
	// [ValidArtifactName]).
	Name string `json:"name"`
	// Size is its length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the SHA-256 of its bytes, in lower-case hex; downloads carry it as their ETag.
	SHA256 string `json:"sha256"`
	// ContentType is the media type the uploader gave, or the one detected from the first bytes.
	ContentType string `json:"content_type"`
	// RunID is the run that produced it; empty when a client uploaded it.
	RunID     string    `json:"run_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// MaxArtifactNameBytes bounds an artifact's name.
const MaxArtifactNameBytes = 255

// ValidArtifactName reports why name cannot name an artifact, or nil when it can. A name is a relative
// path with '/' between its elements, valid UTF-8, at most [MaxArtifactNameBytes] bytes; it is not
// absolute, has no empty, "." or ".." element, no backslash and no control character (NUL among them):
// a name can never climb out of its session's folder when written to a disk, wherever it is written.
// The error is ErrInvalid with code invalid_artifact_name.
func ValidArtifactName(name string) error {
	bad := func(why string) error {
		return Errorf(ErrInvalid, "invalid_artifact_name", "artifact name %q %s", name, why)
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > MaxArtifactNameBytes:
		return Errorf(ErrInvalid, "invalid_artifact_name", "artifact name is %d bytes, more than %d", len(name), MaxArtifactNameBytes)
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case strings.HasPrefix(name, "/"):
		return bad("is absolute; names are relative paths")
	case strings.ContainsRune(name, '\\'):
		return bad("contains a backslash; separate path elements with '/'")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character")
		}
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch elem {
		case "":
			return bad("has an empty path element")
		case ".", "..":
			return bad("has a '" + elem + "' path element")
		}
	}
	return nil
}

// PutArtifactParams names an artifact to upload.
type PutArtifactParams struct {
	SessionID string
	Name      string
	// ContentType is the media type; empty lets the coordinator detect it from the first bytes.
	ContentType string
	// RunID is the run uploading it, when a runner or its gateway uploads.
	RunID string
}

// ArtifactKeeper is a Coordinator that keeps sessions' artifacts. The in-process coordinator implements
// it when it has a bucket (coordinator.Config.Artifacts), and so do the HTTP client and a runner's gateway
// scope. Bodies stream both ways: an artifact never has to fit in memory.
type ArtifactKeeper interface {
	// PutArtifact stores body as the session's artifact p.Name, replacing one of that name, and returns
	// what was recorded. An invalid name is ErrInvalid (invalid_artifact_name); a body past the size limit
	// is ErrTooLarge and stores nothing; an unknown session is ErrNotFound.
	PutArtifact(ctx context.Context, p PutArtifactParams, body io.Reader) (*Artifact, error)
	// ListArtifacts lists a session's artifacts by name.
	ListArtifacts(ctx context.Context, sessionID string) ([]*Artifact, error)
	// OpenArtifact opens an artifact for reading; the caller closes the reader. The in-process
	// coordinator's reader also seeks (io.ReadSeeker), so that it serves range requests without reading
	// what it skips. An unknown session or name is ErrNotFound.
	OpenArtifact(ctx context.Context, sessionID, name string) (*Artifact, io.ReadCloser, error)
}
