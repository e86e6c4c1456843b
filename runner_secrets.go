package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"sync"
	"time"
)

// RunnerSecretPrefix starts every runner secret ([Registration].RunnerSecret), so that a secret that leaks
// into a log or a repository can be recognised (and found by secret scanners).
const RunnerSecretPrefix = "aors_"

// runnerSecretTTL is how long VerifyRunnerSecret trusts a hash it read from the store. A secret revoked
// through this coordinator (its runner went offline or was removed) stops working at once; one revoked
// through another replica sharing the store, within this time.
const runnerSecretTTL = 10 * time.Second

// newRunnerSecret returns a fresh runner secret.
func newRunnerSecret() string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand panics rather than return an error)
	return RunnerSecretPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
}

// secretMatches reports, in constant time, whether secret hashes to stored.
func secretMatches(stored []byte, secret string) bool {
	h := sha256.Sum256([]byte(secret))
	return secret != "" && len(stored) == sha256.Size && subtle.ConstantTimeCompare(stored, h[:]) == 1
}

// VerifyRunnerSecret checks a runner's credential: secret must be the one the runner's latest
// registration returned, and the runner must not have gone offline since (going offline revokes it). It
// returns nil, an [ErrUnauthorized] error, or the store's error. The HTTP API calls it on every request a
// runner makes (package httpapi), so it answers from a small in-memory cache of the hashes it read —
// compared in constant time — and reads the store only on a miss: a secret that another coordinator
// replica sharing the store issued is accepted at once.
func (c *LocalCoordinator) VerifyRunnerSecret(ctx context.Context, runnerID, secret string) error {
	invalid := func() error {
		return Errorf(ErrUnauthorized, "invalid_token",
			"the runner credential is not valid: the runner is unknown, went offline or was removed, or registered again since; register again")
	}
	if runnerID == "" || secret == "" {
		return invalid()
	}
	h := sha256.Sum256([]byte(secret))
	ok, gen := c.secrets.check(runnerID, h, time.Now())
	if ok {
		return nil
	}
	stored, err := c.store.GetRunnerSecretHash(ctx, runnerID)
	if errors.Is(err, ErrNotFound) {
		return invalid()
	}
	if err != nil {
		return err
	}
	if !secretMatches(stored, secret) {
		return invalid()
	}
	c.secrets.put(runnerID, h, gen, time.Now())
	return nil
}

// secretCache holds the secret hashes VerifyRunnerSecret read, by runner id. The zero value is ready.
type secretCache struct {
	mu sync.Mutex
	m  map[string]cachedSecret
	// gen counts revocations: a hash read before one may be stale, and is not cached.
	gen uint64
}

type cachedSecret struct {
	hash [sha256.Size]byte
	at   time.Time
}

// secretCacheMax bounds the cache; past it, expired entries are dropped, and if that is not enough, all.
const secretCacheMax = 4096

// check reports whether h is the runner's cached, unexpired hash, and returns the revocation count to hand
// to put after a store read.
func (sc *secretCache) check(id string, h [sha256.Size]byte, now time.Time) (bool, uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, ok := sc.m[id]
	return ok && now.Sub(e.at) < runnerSecretTTL && subtle.ConstantTimeCompare(e.hash[:], h[:]) == 1, sc.gen
}

// put caches the runner's hash, unless a revocation happened since gen was read.
func (sc *secretCache) put(id string, h [sha256.Size]byte, gen uint64, now time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if gen != sc.gen {
		return
	}
	if sc.m == nil {
		sc.m = map[string]cachedSecret{}
	}
	if len(sc.m) >= secretCacheMax {
		for k, e := range sc.m {
			if now.Sub(e.at) >= runnerSecretTTL {
				delete(sc.m, k)
			}
		}
		if len(sc.m) >= secretCacheMax {
			clear(sc.m)
		}
	}
	sc.m[id] = cachedSecret{hash: h, at: now}
}

// forget drops the runner's cached hash: its secret was revoked or replaced.
func (sc *secretCache) forget(id string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	delete(sc.m, id)
	sc.gen++
}
