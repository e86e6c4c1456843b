package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

func TestInboxApproveRejectAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlstore.New(ctx, filepath.Join(t.TempDir(), "orchestrator.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	coord, err := coordinator.New(coordinator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coord.CreateAgent(ctx, &orchestrator.Blueprint{Name: "deployer", Type: orchestrator.AgentTypeAgent}); err != nil {
		t.Fatal(err)
	}
	ao := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		app := &App{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv:   func(string) string { return "" },
			Connect:  func(string, string) (orchestrator.Coordinator, error) { return coord, nil },
			Terminal: func(any) bool { return false },
		}
		if code := app.Run(ctx, args); code != want {
			t.Fatalf("ao %s: exit %d, want %d; stdout %q stderr %q", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return out.String()
	}
	gate := func() *orchestrator.StartRunResult {
		res, err := coord.StartRun(ctx, orchestrator.StartRunParams{AgentName: "deployer", Prompt: "ship it", RequireApproval: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if out := ao(0, "inbox"); !strings.Contains(out, "Nothing waits") {
		t.Fatalf("empty inbox: %q", out)
	}
	a, b := gate(), gate()
	if out := ao(0, "inbox"); !strings.Contains(out, a.SessionID) || !strings.Contains(out, b.SessionID) || !strings.Contains(out, "approval") {
		t.Fatalf("inbox: %q", out)
	}
	ao(0, "approve", a.SessionID, "--comment", "looks fine")
	if s, _ := coord.GetSession(ctx, a.SessionID); s.Status != orchestrator.SessionPending {
		t.Fatalf("approved session: %s, want pending", s.Status)
	}
	ao(1, "approve", a.SessionID) // no open approval any more
	ao(0, "reject", b.SessionID, "--comment", "not today")
	if s, _ := coord.GetSession(ctx, b.SessionID); s.Status != orchestrator.SessionFailed || s.ErrorCode != "rejected" || !strings.Contains(s.Error, "not today") {
		t.Fatalf("rejected session: %+v", s)
	}

	// ao answer types -p values from the request's schema.
	c := gate()
	var inbox struct {
		InputRequests []*orchestrator.InputRequest `json:"input_requests"`
	}
	if err := json.Unmarshal([]byte(ao(0, "inbox", "--session", c.SessionID, "--json")), &inbox); err != nil || len(inbox.InputRequests) != 1 {
		t.Fatalf("inbox --json: %v %+v", err, inbox)
	}
	id := inbox.InputRequests[0].ID
	ao(2, "answer", id)
	ao(1, "answer", id, "-p", "approved=maybe") // not a boolean: refused by the schema
	out := ao(0, "answer", id, "-p", "approved=true", "-p", "comment=ok", "--json")
	var r orchestrator.InputRequest
	var got orchestrator.Approval
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != orchestrator.InputAnswered || json.Unmarshal(r.Answer, &got) != nil || got != (orchestrator.Approval{Approved: true, Comment: "ok"}) {
		t.Fatalf("ao answer --json: %q (%v)", out, err)
	}
}
