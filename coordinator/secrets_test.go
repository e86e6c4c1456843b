package coordinator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// lockedBuffer is a log sink tests may read while the code under test writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func hostReg(host, secret string, bps ...*orchestrator.Blueprint) *orchestrator.RunnerRegistration {
	return &orchestrator.RunnerRegistration{Hostname: host, ProjectDir: "/work", ExecutorType: "deterministic", Blueprints: bps, RunnerSecret: secret}
}

func wantIdentityInUse(t *testing.T, what string, err error, runnerID string) {
	t.Helper()
	var e *orchestrator.Error
	if !errors.Is(err, orchestrator.ErrConflict) || !errors.As(err, &e) || e.Code != "runner_identity_in_use" || e.Details["runner_id"] != runnerID {
		t.Fatalf("%s: err = %v, want ErrConflict runner_identity_in_use for %s", what, err, runnerID)
	}
	if !strings.Contains(e.Message, "DELETE /runners/"+runnerID) || !strings.Contains(e.Message, "offline") {
		t.Errorf("%s: the message does not tell the operator what to do: %s", what, e.Message)
	}
}

// TestRunnerSecretGuardsIdentity: a registration returns a secret; registering under the id of a live
// runner that is online or stale without it is refused and changes nothing; with it, the runner keeps its
// secret; an offline runner's id may be taken without it, and that revokes the old secret.
func TestRunnerSecretGuardsIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	var logs lockedBuffer
	c := newCoordinator(t, coordinator.Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	a, err := c.RegisterRunner(ctx, hostReg("host-a", "", crawler()))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a.RunnerSecret, ids.RunnerSecret))
	if !strings.HasPrefix(a.RunnerSecret, ids.RunnerSecret) || err != nil || len(raw) != 32 {
		t.Fatalf("runner_secret %q: want %q and 32 random bytes, base64url (%v)", a.RunnerSecret, ids.RunnerSecret, err)
	}
	if err := c.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); err != nil {
		t.Fatalf("VerifyRunnerSecret of the issued secret: %v", err)
	}
	// The store has only the hash.
	h, err := st.GetRunnerSecretHash(ctx, a.RunnerID)
	if sum := sha256.Sum256([]byte(a.RunnerSecret)); err != nil || !bytes.Equal(h, sum[:]) {
		t.Fatalf("stored hash = %x, %v; want SHA-256 of the secret", h, err)
	}
	before, _ := st.GetRunner(ctx, a.RunnerID)
	run := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`)})
	if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 {
		t.Fatalf("poll = %+v, want the run", w)
	}

	// A hijack: same hostname, project directory and profile, no secret or a wrong one.
	for _, secret := range []string{"", "aors_not-the-secret", a.RunnerSecret + "x"} {
		_, err := c.RegisterRunner(ctx, hostReg("host-a", secret))
		wantIdentityInUse(t, "registration with secret "+secret, err, a.RunnerID)
	}
	after, _ := st.GetRunner(ctx, a.RunnerID)
	if !after.RegisteredAt.Equal(before.RegisteredAt) || after.Status != orchestrator.RunnerOnline {
		t.Fatalf("the refused registrations changed the runner: %+v, was %+v", after, before)
	}
	if r, _ := c.GetRun(ctx, run.RunID); r.Status != orchestrator.RunClaimed || r.RunnerID != a.RunnerID {
		t.Fatalf("the live runner's run after the refused registrations: %s held by %s", r.Status, r.RunnerID)
	}
	if ag, err := c.GetAgent(ctx, "web-crawler"); err != nil || ag.RunnerID != a.RunnerID {
		t.Fatalf("the live runner's agent after the refused registrations: %+v, %v", ag, err)
	}
	if err := c.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); err != nil {
		t.Fatalf("the live runner's secret after the refused registrations: %v", err)
	}

	// The runner itself registering again presents its secret and keeps it.
	again, err := c.RegisterRunner(ctx, hostReg("host-a", a.RunnerSecret, crawler()))
	if err != nil {
		t.Fatalf("registration with the runner's secret: %v", err)
	}
	if again.RunnerID != a.RunnerID || again.RunnerSecret != a.RunnerSecret {
		t.Fatalf("registration with the secret = %s %q, want the same id and secret", again.RunnerID, again.RunnerSecret)
	}

	// The runner holds a run again (registering again failed the one it held).
	run2 := start(t, c, orchestrator.StartRunParams{AgentName: "web-crawler", Parameters: json.RawMessage(`{"url":"https://example.com"}`)})
	if w := poll(t, c, a.RunnerID, 1); len(w.Runs) != 1 {
		t.Fatalf("poll = %+v, want the run", w)
	}

	// Stale (the sweep's doing): still the runner's; a stale runner comes back to its runs.
	if _, err := st.UpdateRunnerStatus(ctx, a.RunnerID, nil, orchestrator.RunnerStale, time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"", a.RunnerSecret + "x"} {
		_, err := c.RegisterRunner(ctx, hostReg("host-a", secret))
		wantIdentityInUse(t, "registration over a stale runner with secret "+secret, err, a.RunnerID)
	}
	if r, _ := c.GetRun(ctx, run2.RunID); r.Status != orchestrator.RunClaimed || r.RunnerID != a.RunnerID {
		t.Fatalf("the stale runner's run after the refused registrations: %s held by %s", r.Status, r.RunnerID)
	}
	if err := c.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); err != nil {
		t.Fatalf("the stale runner's secret after the refused registrations: %v", err)
	}
	// Stale without a heartbeat for longer than StaleAfter but not OfflineAfter: still refused.
	info, _ := st.GetRunner(ctx, a.RunnerID)
	info.LastHeartbeatAt = time.Now().UTC().Add(-91 * time.Second)
	if err := st.PutRunner(ctx, info); err != nil {
		t.Fatal(err)
	}
	_, err = c.RegisterRunner(ctx, hostReg("host-a", ""))
	wantIdentityInUse(t, "registration over a runner silent for 91 s", err, a.RunnerID)

	// Without a heartbeat for OfflineAfter (the sweep has not got to it yet): offline all the same. The id
	// may be taken without the secret, which revokes the old one.
	info.LastHeartbeatAt = time.Now().UTC().Add(-2 * time.Hour)
	if err := st.PutRunner(ctx, info); err != nil {
		t.Fatal(err)
	}
	b, err := c.RegisterRunner(ctx, hostReg("host-a", ""))
	if err != nil {
		t.Fatalf("registration over a runner without a heartbeat for OfflineAfter: %v", err)
	}
	if b.RunnerID != a.RunnerID || b.RunnerSecret == a.RunnerSecret || b.RunnerSecret == "" {
		t.Fatalf("registration over an offline runner = %s %q, want the same id and a new secret", b.RunnerID, b.RunnerSecret)
	}
	if err := c.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); !errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("the replaced secret: VerifyRunnerSecret = %v, want ErrUnauthorized", err)
	}
	if r, _ := c.GetRun(ctx, run2.RunID); r.Status != orchestrator.RunFailed {
		t.Fatalf("the previous incarnation's run after the takeover: %s, want failed", r.Status)
	}

	// An admin removes a live runner whose process is gone: its id is free at once.
	if err := c.DeregisterRunner(ctx, b.RunnerID); err != nil {
		t.Fatal(err)
	}
	b2, err := c.RegisterRunner(ctx, hostReg("host-a", ""))
	if err != nil {
		t.Fatalf("registration after an admin removed the runner: %v", err)
	}

	// Offline: deregistration revokes the secret at once; the id is free.
	if err := c.DeregisterRunner(ctx, b2.RunnerID); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyRunnerSecret(ctx, b2.RunnerID, b2.RunnerSecret); !errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("an offline runner's secret: VerifyRunnerSecret = %v, want ErrUnauthorized", err)
	}
	if _, err := c.RegisterRunner(ctx, hostReg("host-a", b2.RunnerSecret)); err != nil {
		t.Fatalf("registration over an offline runner: %v", err)
	}

	for _, tc := range []struct{ id, secret string }{
		{"", b2.RunnerSecret}, {b2.RunnerID, ""}, {"lnch_unknown", b2.RunnerSecret}, {"lnch_\x00", "aors_x"},
	} {
		if err := c.VerifyRunnerSecret(ctx, tc.id, tc.secret); !errors.Is(err, orchestrator.ErrUnauthorized) {
			t.Errorf("VerifyRunnerSecret(%q, %q) = %v, want ErrUnauthorized", tc.id, tc.secret, err)
		}
	}

	// Neither a secret nor its hash reaches the logs or a runner listing.
	list, _ := c.ListRunners(ctx)
	listed, _ := json.Marshal(list)
	for _, s := range []string{a.RunnerSecret, b.RunnerSecret, b2.RunnerSecret} {
		sum := sha256.Sum256([]byte(s))
		for _, leak := range []string{s, hex.EncodeToString(sum[:])} {
			if strings.Contains(logs.String(), leak) || bytes.Contains(listed, []byte(leak)) {
				t.Errorf("%q appears in the logs or in ListRunners", leak)
			}
		}
	}
}

// TestRunnerSecretAcrossReplicas: a secret issued through one coordinator is accepted at once by another
// sharing the store, even one that had the runner's previous secret cached.
func TestRunnerSecretAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	c1 := newCoordinator(t, coordinator.Config{Store: st})
	c2 := newCoordinator(t, coordinator.Config{Store: st})
	a := register(t, c1, "host-a")
	if err := c2.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); err != nil {
		t.Fatalf("replica 2 on replica 1's secret: %v", err)
	}
	if _, err := st.UpdateRunnerStatus(ctx, a.RunnerID, nil, orchestrator.RunnerOffline, time.Time{}); err != nil {
		t.Fatal(err)
	}
	b := register(t, c1, "host-a")
	if err := c2.VerifyRunnerSecret(ctx, b.RunnerID, b.RunnerSecret); err != nil {
		t.Fatalf("replica 2 on replica 1's new secret, with the old one cached: %v", err)
	}
	if err := c1.VerifyRunnerSecret(ctx, a.RunnerID, a.RunnerSecret); !errors.Is(err, orchestrator.ErrUnauthorized) {
		t.Fatalf("replica 1 on the replaced secret: %v, want ErrUnauthorized", err)
	}
}
