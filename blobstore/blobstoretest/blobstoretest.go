// Package blobstoretest is the conformance suite every bucket behind [blobstore.Bucket] passes: a
// driver, or a configuration of one (an S3-compatible service), is fit to hold artifacts when
//
//	blobstoretest.Run(t, func(t *testing.T) *blobstore.Bucket { return openMine(t) })
//
// passes. newBucket returns an empty bucket for one test (subtests run in parallel) and closes it when
// the test ends.
package blobstoretest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/blobstore"
)

// Run runs the suite against the buckets newBucket returns.
func Run(t *testing.T, newBucket func(t *testing.T) *blobstore.Bucket) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, *blobstore.Bucket)
	}{
		{"PutOpen", testPutOpen},
		{"Empty", testEmpty},
		{"Replace", testReplace},
		{"Seek", testSeek},
		{"Range", testRange},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"TooLarge", testTooLarge},
		{"ReaderError", testReaderError},
		{"ContentType", testContentType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newBucket(t))
		})
	}
}

// pattern returns n bytes that differ at every offset a test might seek to, so that a read from the
// wrong offset cannot pass.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i/251)
	}
	return p
}

func sum(p []byte) string {
	h := sha256.Sum256(p)
	return hex.EncodeToString(h[:])
}

func put(t *testing.T, b *blobstore.Bucket, key string, body []byte) blobstore.Written {
	t.Helper()
	w, err := b.Put(t.Context(), key, bytes.NewReader(body), "application/octet-stream", 0)
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(body), err)
	}
	return w
}

func read(t *testing.T, b *blobstore.Bucket, key string) []byte {
	t.Helper()
	o, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer o.Close()
	got, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	if o.Size() != int64(len(got)) {
		t.Errorf("Open(%q).Size() = %d, read %d bytes", key, o.Size(), len(got))
	}
	return got
}

// testPutOpen: what Put stores, Open reads back byte for byte, under nested keys, with its size and
// SHA-256; a body several times the copy buffer tests that the stream is not cut at a buffer boundary.
func testPutOpen(t *testing.T, b *blobstore.Bucket) {
	body := pattern(3<<20 + 17)
	w := put(t, b, "ses_1/reports/2026/summary.bin", body)
	if w.Size != int64(len(body)) || w.SHA256 != sum(body) {
		t.Errorf("Put = %+v, want size %d sha256 %s", w, len(body), sum(body))
	}
	if got := read(t, b, "ses_1/reports/2026/summary.bin"); !bytes.Equal(got, body) {
		t.Errorf("read back %d bytes (sha256 %s), want %d (sha256 %s)", len(got), sum(got), len(body), sum(body))
	}
}

// testEmpty: an empty file is an object too.
func testEmpty(t *testing.T, b *blobstore.Bucket) {
	w := put(t, b, "ses_1/empty", nil)
	if w.Size != 0 || w.SHA256 != sum(nil) {
		t.Errorf("Put(empty) = %+v, want size 0 sha256 %s", w, sum(nil))
	}
	if got := read(t, b, "ses_1/empty"); len(got) != 0 {
		t.Errorf("read back %d bytes, want 0", len(got))
	}
}

// testReplace: a second Put of a key replaces the object whole.
func testReplace(t *testing.T, b *blobstore.Bucket) {
	put(t, b, "k", []byte("a longer first version"))
	put(t, b, "k", []byte("second"))
	if got := read(t, b, "k"); string(got) != "second" {
		t.Errorf("after replacing: %q, want %q", got, "second")
	}
}

// testSeek: the object seeks from the start, the current offset and the end, and reads from there.
func testSeek(t *testing.T, b *blobstore.Bucket) {
	body := pattern(1 << 20)
	put(t, b, "k", body)
	o, err := b.Open(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, s := range []struct {
		offset int64
		whence int
		want   int64
	}{
		{1000, io.SeekStart, 1000},
		{500, io.SeekCurrent, 1600}, // after reading 100 bytes at 1000
		{-300, io.SeekEnd, int64(len(body)) - 300},
		{0, io.SeekStart, 0},
	} {
		pos, err := o.Seek(s.offset, s.whence)
		if err != nil || pos != s.want {
			t.Fatalf("Seek(%d, %d) = %d, %v; want %d", s.offset, s.whence, pos, err, s.want)
		}
		got := make([]byte, 100)
		n, err := io.ReadFull(o, got)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read at %d: %v", pos, err)
		}
		if want := body[pos:min(pos+100, int64(len(body)))]; !bytes.Equal(got[:n], want) {
			t.Errorf("read at %d: got % x…, want % x…", pos, got[:min(n, 8)], want[:min(len(want), 8)])
		}
	}
}

// testRange: served with net/http.ServeContent, as the coordinator serves downloads, a range request
// gets 206 and exactly the bytes asked for.
func testRange(t *testing.T, b *blobstore.Bucket) {
	body := pattern(2 << 20)
	put(t, b, "k", body)
	for _, r := range []struct {
		header     string
		start, end int // inclusive
	}{
		{"bytes=0-9", 0, 9},
		{"bytes=1048570-1048600", 1048570, 1048600},
		{"bytes=-5", len(body) - 5, len(body) - 1},
	} {
		o, err := b.Open(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/k", nil)
		req.Header.Set("Range", r.header)
		rec := httptest.NewRecorder()
		http.ServeContent(rec, req, "k", time.Time{}, o)
		o.Close()
		if rec.Code != http.StatusPartialContent {
			t.Fatalf("Range %s: status %d, want 206", r.header, rec.Code)
		}
		if want := body[r.start : r.end+1]; !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("Range %s: got %d bytes, want %d (bytes %d-%d)", r.header, rec.Body.Len(), len(want), r.start, r.end)
		}
		if got, want := rec.Header().Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", r.start, r.end, len(body)); got != want {
			t.Errorf("Range %s: Content-Range %q, want %q", r.header, got, want)
		}
	}
}

// testMissing: opening a key never stored is ErrNotFound.
func testMissing(t *testing.T, b *blobstore.Bucket) {
	if _, err := b.Open(t.Context(), "ses_1/nothing"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
}

// testDelete: a deleted object is gone; deleting it again, or a key never stored, is no error.
func testDelete(t *testing.T, b *blobstore.Bucket) {
	put(t, b, "ses_1/a", []byte("a"))
	put(t, b, "ses_1/b", []byte("b"))
	for range 2 {
		if err := b.Delete(t.Context(), "ses_1/a"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if err := b.Delete(t.Context(), "never/stored"); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}
	if _, err := b.Open(t.Context(), "ses_1/a"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("Open(deleted) = %v, want ErrNotFound", err)
	}
	if got := read(t, b, "ses_1/b"); string(got) != "b" {
		t.Errorf("the other object: %q, want %q", got, "b")
	}
}

// testTooLarge: a body past the limit is ErrTooLarge and leaves nothing behind, while one of exactly the
// limit is stored.
func testTooLarge(t *testing.T, b *blobstore.Bucket) {
	body := pattern(1000)
	if _, err := b.Put(t.Context(), "big", bytes.NewReader(body), "", 999); !errors.Is(err, blobstore.ErrTooLarge) {
		t.Fatalf("Put(1000 bytes, limit 999) = %v, want ErrTooLarge", err)
	}
	if _, err := b.Open(t.Context(), "big"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("after a refused Put: Open = %v, want ErrNotFound", err)
	}
	if w, err := b.Put(t.Context(), "exact", bytes.NewReader(body), "", 1000); err != nil || w.Size != 1000 {
		t.Errorf("Put(1000 bytes, limit 1000) = %+v, %v; want stored", w, err)
	}
}

// failingReader returns its bytes, then an error: a client that disconnects mid-upload.
type failingReader struct{ r io.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset")
	}
	return n, err
}

// testReaderError: an upload cut off mid-way stores nothing, and does not replace what was there.
func testReaderError(t *testing.T, b *blobstore.Bucket) {
	put(t, b, "k", []byte("old"))
	if _, err := b.Put(t.Context(), "k", &failingReader{bytes.NewReader(pattern(1 << 20))}, "", 0); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if _, err := b.Put(t.Context(), "fresh", &failingReader{bytes.NewReader(pattern(1000))}, "", 0); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if got := read(t, b, "k"); string(got) != "old" {
		t.Errorf("after a failed replace: %q, want %q", got, "old")
	}
	if _, err := b.Open(t.Context(), "fresh"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("after a failed Put: Open = %v, want ErrNotFound", err)
	}
}

// testContentType: the bucket keeps the content type it was given.
func testContentType(t *testing.T, b *blobstore.Bucket) {
	if _, err := b.Put(t.Context(), "page", bytes.NewReader([]byte("<p>hi</p>")), "text/html; charset=utf-8", 0); err != nil {
		t.Fatal(err)
	}
	o, err := b.Open(t.Context(), "page")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if ct, ok := o.(interface{ ContentType() string }); !ok || ct.ContentType() != "text/html; charset=utf-8" {
		t.Errorf("content type not kept: %v", o)
	}
}
