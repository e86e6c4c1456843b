package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/store"
)

// openPolls returns how many long polls the handler counts open, in all.
func openPolls(h http.Handler) int {
	l := h.(*root).s.polls
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.n {
		n += v
	}
	return n
}

func waitOpenPolls(t *testing.T, h http.Handler, want int) {
	t.Helper()
	testkit.WaitForState(t, 30*time.Second, fmt.Sprintf("%d long polls open", want), func() (bool, string) {
		n := openPolls(h)
		return n == want, fmt.Sprintf("%d open", n)
	})
}

// hold starts a long poll (a wait for a session that does not end) with token, and returns the function
// that ends it.
func hold(t *testing.T, env *testEnv, token, path string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", env.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := env.srv.Client().Do(req)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("long poll %s: %v", path, err)
			}
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("long poll %s: %d %s", path, resp.StatusCode, b)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return func() { cancel(); <-done }
}

func TestLongPollsAreLimitedPerCredential(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{MaxLongPolls: 2}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	wait := "/sessions/" + res.SessionID + "/result?wait=5m"
	stream := "/sessions/" + res.SessionID + "/events/stream"

	stop1 := hold(t, env, clientTok, wait)
	stop2 := hold(t, env, clientTok, stream)
	waitOpenPolls(t, env.handler, 2)

	// A third long poll of the same token is refused, the stream route alike.
	for _, path := range []string{wait, stream, "/sessions/" + res.SessionID + "?wait=1s"} {
		rec := serve(env.handler, "GET", path, clientTok, nil)
		m := errorBody(t, rec, http.StatusTooManyRequests)
		if m["error"] != "too_many_long_polls" || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("GET %s: %v, Retry-After %q; want too_many_long_polls with Retry-After 1", path, m, rec.Header().Get("Retry-After"))
		}
	}
	// Other routes of the same token, and long polls of other tokens, are not limited by it.
	if rec := serve(env.handler, "GET", "/sessions", clientTok, nil); rec.Code != http.StatusOK {
		t.Errorf("GET /sessions: %d %s", rec.Code, rec.Body)
	}
	stop3 := hold(t, env, adminTok, wait)
	waitOpenPolls(t, env.handler, 3)

	// Ending one frees its place.
	stop1()
	waitOpenPolls(t, env.handler, 2)
	stop4 := hold(t, env, clientTok, wait)
	waitOpenPolls(t, env.handler, 3)
	for _, stop := range []func(){stop2, stop3, stop4} {
		stop()
	}
	waitOpenPolls(t, env.handler, 0)
}

// TestLongPollsWithoutTokensArePerAddress: an open API counts by client address.
func TestLongPollsWithoutTokensArePerAddress(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{Tokens: map[string]Role{}, MaxLongPolls: 1}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
	wait := "/sessions/" + res.SessionID + "/result?wait=5m"
	stop := hold(t, env, "", wait)
	waitOpenPolls(t, env.handler, 1)
	// Another connection from 127.0.0.1, whatever token it shows (none are configured), is refused.
	req, _ := http.NewRequest("GET", env.srv.URL+wait, nil)
	req.Header.Set("Authorization", "Bearer anything")
	resp, err := env.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second long poll from the same address: %d, want 429", resp.StatusCode)
	}
	// A request from another address is counted apart (httptest.NewRequest comes from 192.0.2.1).
	rec := serve(env.handler, "GET", "/sessions/"+res.SessionID+"/result?wait=10ms", "", nil)
	if rec.Code != http.StatusOK {
		t.Errorf("long poll from another address: %d %s", rec.Code, rec.Body)
	}
	stop()
}

// TestDefaultLongPollLimitLeavesRoom: a runner's poll and many sync waits of one client, at once, are far
// below the default.
func TestDefaultLongPollLimitLeavesRoom(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, coordinator.Config{})
	ctx := ctxT(t)
	must[*orchestrator.AgentInfo](t, "CreateAgent")(env.coord.CreateAgent(ctx, aiAgent("helper")))
	reg := must[*orchestrator.Registration](t, "RegisterRunner")(env.coord.RegisterRunner(ctx, registration("h")))
	var stops []func()
	stops = append(stops, hold(t, env, credential(reg), fmt.Sprintf("/runner/runs?runner_id=%s&max=0&wait=5m", reg.RunnerID)))
	const waits = 64
	var wg sync.WaitGroup
	for range waits {
		res := must[*orchestrator.StartRunResult](t, "StartRun")(env.coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "helper", Prompt: "p"}))
		stops = append(stops, hold(t, env, clientTok, "/sessions/"+res.SessionID+"/result?wait=5m"))
	}
	waitOpenPolls(t, env.handler, waits+1)
	for _, stop := range stops {
		wg.Go(stop)
	}
	wg.Wait()
}

// writeFailingStore fails CheckWrite while fail is set.
type writeFailingStore struct {
	store.Store
	mu   sync.Mutex
	fail error
}

func (s *writeFailingStore) CheckWrite(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail
}

func TestReady(t *testing.T) {
	t.Parallel()
	st := &writeFailingStore{Store: openStore(t, t.TempDir()+"/o.db")}
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(coord, Config{Tokens: testTokens})
	if rec := serve(h, "GET", "/ready", "", nil); rec.Code != http.StatusOK || rec.Body.String() != "{\"status\":\"ready\"}\n" {
		t.Errorf("GET /ready with a store that writes: %d %s", rec.Code, rec.Body)
	}
	st.mu.Lock()
	st.fail = errors.New("disk full")
	st.mu.Unlock()
	rec := serve(h, "GET", "/ready", "", nil)
	if m := errorBody(t, rec, http.StatusServiceUnavailable); m["error"] != "not_ready" {
		t.Errorf("GET /ready while writes fail: %v, want not_ready", m)
	}
	if rec := serve(h, "GET", "/health", "", nil); rec.Code != http.StatusOK {
		t.Errorf("GET /health while writes fail: %d; liveness does not depend on the store", rec.Code)
	}
	// A coordinator without the check (the gateway's, say) is ready.
	if rec := serve(NewHandler(struct{ orchestrator.Coordinator }{coord}, Config{}), "GET", "/ready", "", nil); rec.Code != http.StatusOK {
		t.Errorf("GET /ready of a coordinator without CheckWrite: %d %s", rec.Code, rec.Body)
	}
}
