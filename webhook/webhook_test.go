package webhook_test

import (
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/webhook"
)

// The test vector of the Standard Webhooks reference libraries (their Go library's TestWebhookSign; the
// JavaScript, Python and Rust ones sign the same message).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheReferenceVector(t *testing.T) {
	t.Parallel()
	got, err := webhook.Sign(vectorSecret, vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorSignature {
		t.Errorf("Sign(vector) = %s, want %s", got, vectorSignature)
	}
}

func headers(id, ts, sig string) http.Header {
	h := http.Header{}
	for k, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(vectorBody)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	sig, err := webhook.Sign(vectorSecret, vectorID, now, body)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := webhook.Sign("whsec_"+strings.Repeat("A", 32), vectorID, now, body)
	old := now.Add(-webhook.DefaultTolerance - time.Minute)
	oldSig, _ := webhook.Sign(vectorSecret, vectorID, old, body)
	future := now.Add(webhook.DefaultTolerance + time.Minute)
	futureSig, _ := webhook.Sign(vectorSecret, vectorID, future, body)
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		ok     bool
	}{
		{"valid", vectorSecret, headers(vectorID, ts, sig), vectorBody, true},
		{"one of several signatures (rotation)", vectorSecret, headers(vectorID, ts, other+" v2,"+sig[3:]+" "+sig), vectorBody, true},
		{"the reference vector at its own time is too old", vectorSecret, headers(vectorID, "1614265330", vectorSignature), vectorBody, false},
		{"wrong secret", "whsec_" + strings.Repeat("B", 32), headers(vectorID, ts, sig), vectorBody, false},
		{"the raw secret is not the decoded one", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers(vectorID, ts, sig), vectorBody, false},
		{"tampered body", vectorSecret, headers(vectorID, ts, sig), `{"test": 2432232315}`, false},
		{"another id (the id is signed)", vectorSecret, headers("msg_other", ts, sig), vectorBody, false},
		{"another timestamp (the timestamp is signed)", vectorSecret, headers(vectorID, strconv.FormatInt(now.Unix()-1, 10), sig), vectorBody, false},
		{"too old", vectorSecret, headers(vectorID, strconv.FormatInt(old.Unix(), 10), oldSig), vectorBody, false},
		{"too new", vectorSecret, headers(vectorID, strconv.FormatInt(future.Unix(), 10), futureSig), vectorBody, false},
		{"only another version", vectorSecret, headers(vectorID, ts, "v1a,"+sig[3:]), vectorBody, false},
		{"missing id", vectorSecret, headers("", ts, sig), vectorBody, false},
		{"missing timestamp", vectorSecret, headers(vectorID, "", sig), vectorBody, false},
		{"missing signature", vectorSecret, headers(vectorID, ts, ""), vectorBody, false},
		{"timestamp not a number", vectorSecret, headers(vectorID, "yesterday", sig), vectorBody, false},
		{"malformed whsec secret", "whsec_!!", headers(vectorID, ts, sig), vectorBody, false},
		{"empty secret", "", headers(vectorID, ts, sig), vectorBody, false},
	}
	for _, tt := range tests {
		err := webhook.Verify(tt.secret, tt.h, []byte(tt.body), 0)
		if (err == nil) != tt.ok {
			t.Errorf("%s: Verify = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestRawSecret(t *testing.T) {
	t.Parallel()
	now := time.Now()
	sig, err := webhook.Sign("plain shared password", "wh_1", now, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	h := headers("wh_1", strconv.FormatInt(now.Unix(), 10), sig)
	if err := webhook.Verify("plain shared password", h, []byte("{}"), time.Minute); err != nil {
		t.Errorf("a raw secret does not verify its own signature: %v", err)
	}
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ secret, id string }{
		{vectorSecret, ""},
		{vectorSecret, "a.b"},
		{"whsec_not base64", "wh_1"},
		{"whsec_", "wh_1"},
		{"", "wh_1"},
	} {
		if sig, err := webhook.Sign(tc.secret, tc.id, time.Now(), nil); err == nil {
			t.Errorf("Sign(%q, %q) = %s, want an error", tc.secret, tc.id, sig)
		}
	}
}

// FuzzVerify: Verify never panics and accepts nothing but what Sign produced for the same message.
func FuzzVerify(f *testing.F) {
	f.Add(vectorSecret, vectorID, "1614265330", vectorSignature, []byte(vectorBody))
	// A fresh signature, so that the accepting path is exercised too.
	now := time.Now()
	fresh, err := webhook.Sign(vectorSecret, vectorID, now, []byte(vectorBody))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(vectorSecret, vectorID, strconv.FormatInt(now.Unix(), 10), "v1,x "+fresh, []byte(vectorBody))
	f.Add("raw", "wh_1", "0", "v1,", []byte("{}"))
	f.Add("whsec_", "", "-1", "v1a,x v1,y", []byte(nil))
	f.Add("whsec_AAAA", "a.b", "99999999999999999999", "  v1,,  ", []byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, secret, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, ts)
		h.Set(webhook.HeaderSignature, sig)
		if webhook.Verify(secret, h, body, 0) != nil {
			return
		}
		// Accepted: the header must hold the signature Sign makes for this message.
		unix, err := strconv.ParseInt(h.Get(webhook.HeaderTimestamp), 10, 64)
		if err != nil {
			t.Fatalf("accepted an unparsable timestamp %q", ts)
		}
		want, err := webhook.Sign(secret, h.Get(webhook.HeaderID), time.Unix(unix, 0), body)
		if err != nil {
			t.Fatalf("accepted a message Sign refuses: %v", err)
		}
		if !containsField(h.Get(webhook.HeaderSignature), want) {
			t.Fatalf("accepted signature %q, but the message's signature is %q", sig, want)
		}
	})
}

func containsField(list, want string) bool {
	for _, f := range strings.Fields(list) {
		if f == want {
			return true
		}
	}
	return false
}

// TestStandardLibraryOnly: receivers import this package alone, so it must stay a leaf that pulls in
// nothing but the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: package webhook must use the standard library only", name, path)
			}
		}
	}
}
