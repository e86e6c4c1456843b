package coordinator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// runnerSecretTTL is how long VerifyRunnerSecret trusts a hash it read from the store. A secret revoked
// through this coordinator (its runner went offline or was removed) stops working at once; one revoked
// through another replica sharing the store, within this time.
const runnerSecretTTL = 10 * time.Second

// newRunnerSecret returns a fresh runner secret.
func newRunnerSecret() string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand panics rather than return an error)
	return ids.RunnerSecret + base64.RawURLEncoding.EncodeToString(raw[:])
}

// secretMatches reports, in constant time, whether secret hashes to stored.
func secretMatches(stored []byte, secret string) bool {
	h := sha256.Sum256([]byte(secret))
	return secret != "" && len(stored) == sha256.Size && subtle.ConstantTimeCompare(stored, h[:]) == 1
}

// VerifyRunnerSecret checks a runner's credential: secret must be the one the runner's latest registration
// returned, and the runner must not have gone offline since (going offline revokes it). It returns nil, an
// [orchestrator.ErrUnauthorized] error, or the store's error. The HTTP API calls it on every request a runner
// makes (package httpapi), so it answers from a small in-memory cache of the hashes it read — compared in
// constant time — and reads the store only on a miss: a secret that another coordinator replica sharing the
// store issued is accepted at once.
func (c *Coordinator) VerifyRunnerSecret(ctx context.Context, runnerID, secret string) error {
	invalid := func() error {
		return orchestrator.Errorf(orchestrator.ErrUnauthorized, "invalid_token",
			"the runner credential is not valid: the runner is unknown, went offline or was removed, or registered again since; register again")
	}
	if runnerID == "" || secret == "" {
		return invalid()
	}
	h := sha256.Sum256([]byte(secret))
	cached, ok, gen := c.secrets.Get(runnerID, time.Now())
	if ok && subtle.ConstantTimeCompare(cached[:], h[:]) == 1 {
		return nil
	}
	stored, err := c.store.GetRunnerSecretHash(ctx, runnerID)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return invalid()
	}
	if err != nil {
		return err
	}
	if !secretMatches(stored, secret) {
		return invalid()
	}
	c.secrets.Put(runnerID, h, gen, time.Now())
	return nil
}

// secretCacheMax bounds the cache of secret hashes.
const secretCacheMax = 4096
