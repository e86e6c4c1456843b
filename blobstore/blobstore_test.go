package blobstore_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob/s3blob"

	"github.com/agentorchestrator/orchestrator/blobstore"
	"github.com/agentorchestrator/orchestrator/blobstore/blobstoretest"
)

// TestFile runs the suite on file:// buckets, each in a folder Open must create.
func TestFile(t *testing.T) {
	t.Parallel()
	blobstoretest.Run(t, func(t *testing.T) *blobstore.Bucket {
		dir := filepath.Join(t.TempDir(), "artifacts")
		b, err := blobstore.Open(t.Context(), (&url.URL{Scheme: "file", Path: dir}).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

// TestS3 runs the suite on S3: an S3-protocol server in the test process, reached through the AWS SDK's
// S3 client, which is what the s3:// driver uses.
func TestS3(t *testing.T) {
	t.Parallel()
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// The fake server does not take the SDK's trailing checksums; real S3 does either way.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	blobstoretest.Run(t, func(t *testing.T) *blobstore.Bucket {
		name := sanitize(t.Name()) // one bucket per subtest
		if err := backend.CreateBucket(name); err != nil {
			t.Fatal(err)
		}
		b, err := s3blob.OpenBucket(context.Background(), client, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		bucket := blobstore.New(b)
		t.Cleanup(func() { bucket.Close() })
		return bucket
	})
}

// sanitize makes a valid S3 bucket name: lower-case letters and digits.
func sanitize(s string) string {
	out := make([]byte, 0, len(s))
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		}
	}
	return string(out)
}
