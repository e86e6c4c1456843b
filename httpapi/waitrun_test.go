package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/internal/testkit/callbackcase"
)

// callbackEnv serves an in-process coordinator over HTTP and plays the callback case on it; the case's
// first run is held until release is closed.
func callbackEnv(t *testing.T, release <-chan struct{}, served orchestrator.Coordinator, coord *coordinator.Coordinator) (*httptest.Server, <-chan callbackcase.Played) {
	t.Helper()
	played := callbackcase.Play(t, coord, release)
	srv := httptest.NewServer(checkedHandler(t, NewHandler(served, Config{Tokens: testTokens})))
	t.Cleanup(srv.Close)
	return srv, played
}

// TestClientSyncStartLongWaitAnswersItsOwnRun: a sync StartRun whose wait exceeds the client's MaxWait
// goes on waiting after the first request; its answer is the run's own outcome, not the session's,
// which a callback resumed the moment the run ended.
func TestClientSyncStartLongWaitAnswersItsOwnRun(t *testing.T) {
	t.Parallel()
	coord := newCoordinator(t, coordinator.Config{})
	served := callbackcase.NewStartSignal(coord)
	srv, played := callbackEnv(t, served.Answered(), served, coord)
	client, err := NewClient(srv.URL, ClientConfig{Token: clientTok, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(t.Context(), orchestrator.StartRunParams{
		AgentName: callbackcase.Parent, Prompt: "delegate", Mode: orchestrator.ModeSync, Wait: time.Minute,
	}))
	callbackcase.CheckAnswer(t, client, "the sync answer", res, callbackcase.FirstRun(t, played))
}

// TestWaitRunOverHTTP: GET /runs/{id}/result answers with the run's own outcome, at once or after a
// wait, even once the session has moved on to a later run; an unknown run is 404 run_not_found.
func TestWaitRunOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	coord := newCoordinator(t, coordinator.Config{})
	release := make(chan struct{})
	srv, played := callbackEnv(t, release, coord, coord)
	client, err := NewClient(srv.URL, ClientConfig{Token: clientTok, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := must[*orchestrator.StartRunResult](t, "StartRun")(client.StartRun(ctx, orchestrator.StartRunParams{AgentName: callbackcase.Parent, Prompt: "delegate"}))

	now := must[*orchestrator.StartRunResult](t, "WaitRun(0)")(client.WaitRun(ctx, started.RunID, 0))
	if now.RunID != started.RunID || now.SessionID != started.SessionID || now.Status.Ended() || now.Result != nil {
		t.Errorf("WaitRun(0) of a live run = %+v, want its ids, a live status and no result", now)
	}
	close(release)
	// Several requests of at most MaxWait each, the run ending during one of them.
	res := must[*orchestrator.StartRunResult](t, "WaitRun")(client.WaitRun(ctx, started.RunID, time.Minute))
	first := callbackcase.FirstRun(t, played)
	callbackcase.CheckAnswer(t, client, "WaitRun", res, first)
	again := must[*orchestrator.StartRunResult](t, "WaitRun after the resume")(client.WaitRun(ctx, first, 0))
	callbackcase.CheckAnswer(t, client, "WaitRun after the resume", again, first)

	_, err = client.WaitRun(ctx, "run_unknown", time.Minute)
	if !errors.Is(err, orchestrator.ErrNotFound) || orchestrator.ErrorCode(err) != "run_not_found" {
		t.Errorf("WaitRun(unknown) = %v, want ErrNotFound run_not_found", err)
	}
	for _, q := range []string{"wait=soon", "wait=-1"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/runs/"+first+"/result?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+clientTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /runs/{id}/result?%s = %d, want 400", q, resp.StatusCode)
		}
	}
}
