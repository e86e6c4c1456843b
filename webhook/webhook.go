// Package webhook signs and verifies webhooks as the Standard Webhooks specification
// (https://www.standardwebhooks.com/) defines them, version 1 (symmetric, HMAC-SHA256). The coordinator
// signs its callback_url deliveries with it; a receiver verifies them with [Verify]. It imports only the
// standard library, so a receiver can use it without the rest of the orchestrator module.
//
// Every request carries three headers:
//
//	webhook-id         the delivery's id: the same on every retry, so a receiver can deduplicate by it
//	webhook-timestamp  when this attempt was signed, in Unix seconds
//	webhook-signature  "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)); a
//	                   space-separated list of such signatures, any one of which may match (key rotation)
//
// # Secrets
//
// A secret written "whsec_" + base64 (the specification's form) stands for the key its base64 decodes to.
// Any other secret is used as its own bytes, so a plain shared password works too. (The specification's
// reference libraries also decode unprefixed secrets as base64; give such a secret its "whsec_" prefix to
// use it here.) The specification asks for keys of 24 to 64 random bytes.
//
// # Receiving
//
//	body, _ := io.ReadAll(r.Body) // the raw body: a re-encoded JSON document would not verify
//	if err := webhook.Verify(secret, r.Header, body, 0); err != nil {
//		http.Error(w, err.Error(), http.StatusUnauthorized)
//		return
//	}
//	// Deduplicate by r.Header.Get(webhook.HeaderID): a delivery may arrive more than once.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The request headers of a webhook.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a webhook's timestamp may be from the receiver's clock, either way, when
// [Verify] is given no tolerance: the specification's recommendation.
const DefaultTolerance = 5 * time.Minute

// secretPrefix marks a secret serialized as the specification says: base64 after the prefix.
const secretPrefix = "whsec_"

// key returns the HMAC key secret stands for (see the package comment).
func key(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, secretPrefix); ok {
		k, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("webhook: a %s secret must be base64 after the prefix: %v", secretPrefix, err)
		}
		if len(k) == 0 {
			return nil, errors.New("webhook: the secret is empty")
		}
		return k, nil
	}
	if secret == "" {
		return nil, errors.New("webhook: the secret is empty")
	}
	return []byte(secret), nil
}

// Sign returns the webhook-signature value of one attempt: "v1," followed by the base64 HMAC-SHA256,
// keyed by secret, of id, timestamp (in Unix seconds) and body joined by full stops. The id must not
// be empty nor contain a full stop (the signed text could then be read two ways). It fails only for such
// an id or a malformed "whsec_" secret.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	k, err := key(secret)
	if err != nil {
		return "", err
	}
	if id == "" || strings.Contains(id, ".") {
		return "", fmt.Errorf("webhook: id %q must be non-empty and without a full stop", id)
	}
	return sign(k, id, strconv.FormatInt(timestamp.Unix(), 10), body), nil
}

func sign(k []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received webhook: its headers (see the package comment) and its raw body, against the
// shared secret. It fails when a header is missing, when the timestamp is further than tolerance from now
// (either way; tolerance <= 0 means [DefaultTolerance]), which stops a captured request from being
// replayed later, or when no "v1" signature in the header matches. Signatures of other versions are
// skipped, and comparisons take constant time.
func Verify(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	k, err := key(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("webhook: the %s, %s and %s headers are required", HeaderID, HeaderTimestamp, HeaderSignature)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: %s %q is not a Unix time in seconds", HeaderTimestamp, ts)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	now := time.Now()
	switch sent := time.Unix(unix, 0); {
	case now.Sub(sent) > tolerance:
		return fmt.Errorf("webhook: the timestamp is %s old, more than the tolerance of %s", now.Sub(sent).Round(time.Second), tolerance)
	case sent.Sub(now) > tolerance:
		return fmt.Errorf("webhook: the timestamp is %s in the future, more than the tolerance of %s", sent.Sub(now).Round(time.Second), tolerance)
	}
	want := []byte(sign(k, id, ts, body))
	for _, sig := range strings.Fields(sigs) {
		if version, _, _ := strings.Cut(sig, ","); version != "v1" {
			continue
		}
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("webhook: no signature matches")
}
