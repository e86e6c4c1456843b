package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/internal/ids"
)

// FuzzRunnerCredential throws arbitrary bearer tokens at a runner route: only the runner's own credential
// is taken, and nothing is a 5xx or a panic.
func FuzzRunnerCredential(f *testing.F) {
	env, _ := fuzzEnv(f)
	_, reg := env.runnerClient(f, registration("fuzz-runner"))
	cred := credential(reg)
	for _, s := range []string{
		cred, cred + "x", cred[:len(cred)-1], " " + cred + " ", reg.RunnerSecret, reg.RunnerID + ".", "." + reg.RunnerSecret,
		RunnerCredential(reg.RunnerID, ids.RunnerSecret), RunnerCredential("lnch_0000000000000000", reg.RunnerSecret),
		RunnerCredential(strings.ToUpper(reg.RunnerID), reg.RunnerSecret), reg.RunnerID + ".." + reg.RunnerSecret,
		"lnch_\x00." + reg.RunnerSecret, runnerTok, clientTok, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		rec := serve(env.handler, "GET", "/runner/runs?wait=0", tok, nil)
		checkAnswer(t, "GET", "/runner/runs", []byte(tok), rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
		own := strings.TrimSpace(tok) == cred
		if ok := rec.Code < 300; ok != own {
			t.Fatalf("token %q: %d %s; the runner's credential is %q", tok, rec.Code, rec.Body, cred)
		}
		if !own && strings.TrimSpace(tok) != adminTok && rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden {
			t.Fatalf("token %q: %d %s, want 401 or 403", tok, rec.Code, rec.Body)
		}
	})
}

// FuzzRunnerReports is FuzzDecodeReports with a runner's own credential: each report is that runner's or
// refused, and nothing is a 5xx.
func FuzzRunnerReports(f *testing.F) {
	env, _ := fuzzEnv(f)
	_, reg := env.runnerClient(f, registration("fuzz-runner"))
	for _, s := range []string{
		`{"reports":[{"run_id":"run_x","status":"completed","result":{"result_text":"x","exit_code":0}}]}`,
		`{"reports":[{"runner_id":"` + reg.RunnerID + `","run_id":"run_x","status":"running"},{"runner_id":"lnch_other","run_id":"run_y","status":"failed"}]}`,
		`{"reports":[null,{},{"status":7},{"runner_id":7}]}`,
		"", "{", "null", `{"reports":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(env.handler, "POST", "/runner/reports", credential(reg), body)
		checkAnswer(t, "POST", "/runner/reports", body, rec.Code, rec.Body.Bytes(), rec.Header().Get("Content-Type"))
	})
}
