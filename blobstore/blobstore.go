// Package blobstore keeps the bytes of artifacts (the files agents produce) in a bucket of
// [gocloud.dev/blob]: a folder on disk (file://DIR), Amazon S3 or any S3-compatible service
// (s3://bucket?region=…&endpoint=…), Google Cloud Storage (gs://…) or Azure Blob Storage (azblob://…).
// The metadata (name, size, SHA-256, content type) lives in the coordinator's store; a bucket holds only
// bytes, under keys the coordinator chooses.
//
// # Drivers
//
// This package registers only the file:// driver ([gocloud.dev/blob/fileblob]), which costs a binary
// little. The cloud drivers bring their providers' SDKs (S3's alone adds about 150 packages), so a binary
// that stores artifacts in the cloud registers the one it needs with a blank import:
//
//	import _ "gocloud.dev/blob/s3blob"    // s3://
//	import _ "gocloud.dev/blob/gcsblob"   // gs://
//	import _ "gocloud.dev/blob/azureblob" // azblob://
//
// The reference coordinator binary registers s3blob.
//
// # Streaming
//
// [Bucket.Put] copies from a reader to the bucket through a fixed buffer, hashing as it goes, and
// [Bucket.Open] returns a reader that seeks by opening range reads: neither ever holds a whole object in
// memory, so a 1 GiB artifact costs the coordinator the same memory as a 1 KiB one.
package blobstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://, the default: a folder beside the SQLite database
	"gocloud.dev/gcerrors"
)

// ErrNotFound is returned by [Bucket.Open] for a key the bucket does not hold.
var ErrNotFound = errors.New("blobstore: no such object")

// ErrTooLarge is returned by [Bucket.Put] when the body is longer than its limit; nothing is stored.
var ErrTooLarge = errors.New("blobstore: object too large")

// Bucket is a blob bucket holding artifacts' bytes. It is safe for concurrent use.
type Bucket struct {
	b *blob.Bucket
}

// Open opens the bucket a URL names (file:///var/lib/orchestrator/artifacts,
// s3://bucket?region=us-east-1&endpoint=https://minio:9000, …; see the package documentation for the
// drivers). A file:// folder is created when it does not exist, and its temporary files are written
// inside it, so that storing an object is a rename on one file system.
func Open(ctx context.Context, urlstr string) (*Bucket, error) {
	u, err := url.Parse(urlstr)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	if u.Scheme == "file" {
		q := u.Query()
		for _, k := range []string{"create_dir", "no_tmp_dir"} {
			if !q.Has(k) {
				q.Set(k, "true")
			}
		}
		u.RawQuery = q.Encode()
		urlstr = u.String()
	}
	b, err := blob.OpenBucket(ctx, urlstr)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	return &Bucket{b: b}, nil
}

// New wraps a bucket the caller opened (with its own credentials or options). Close closes it.
func New(b *blob.Bucket) *Bucket { return &Bucket{b: b} }

// Written describes an object [Bucket.Put] stored.
type Written struct {
	// Size is the number of bytes stored.
	Size int64
	// SHA256 is their SHA-256, in lower-case hex.
	SHA256 string
}

// Put streams r into the object key, replacing any object of that key, and returns its size and SHA-256.
// When contentType is empty the bucket detects it from the first bytes. A body longer than maxSize
// (when positive) is ErrTooLarge, and an error from r or the bucket aborts the write: either way nothing
// is stored under key.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, contentType string, maxSize int64) (Written, error) {
	// Cancelling the writer's context is how gocloud aborts a write: nothing is committed.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType})
	if err != nil {
		return Written{}, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	h := sha256.New()
	src := r
	if maxSize > 0 {
		// One byte past the limit tells a body of exactly maxSize from a longer one.
		src = io.LimitReader(r, maxSize+1)
	}
	buf := make([]byte, 256<<10)
	n, err := io.CopyBuffer(io.MultiWriter(w, h), src, buf)
	if err == nil && maxSize > 0 && n > maxSize {
		err = ErrTooLarge
	}
	if err != nil {
		cancel()
		_ = w.Close()
		if errors.Is(err, ErrTooLarge) {
			return Written{}, err
		}
		return Written{}, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return Written{}, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	return Written{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Object is an open object: it reads, and it seeks (a seek followed by a read opens a range read), so
// that it serves HTTP range requests ([net/http.ServeContent]) without reading what it skips.
type Object interface {
	io.ReadSeekCloser
	// Size is the object's length in bytes.
	Size() int64
}

// Open opens the object key for reading; a missing key is ErrNotFound. The caller closes it.
func (b *Bucket) Open(ctx context.Context, key string) (Object, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, fmt.Errorf("blobstore: open %s: %w", key, err)
	}
	return r, nil
}

// Delete deletes the object key. A key the bucket does not hold is not an error: deleting is how
// garbage is collected, and a retry after a crash may delete twice.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	err := b.b.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	return nil
}

// Close releases the bucket's resources.
func (b *Bucket) Close() error { return b.b.Close() }
