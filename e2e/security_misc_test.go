//go:build linux

package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// An open API (no tokens) that -insecure lets listen where other hosts can reach it is served, with a
// warning in the log rather than an info line nobody reads.
func TestInsecureOpenAPIWarns(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	port := strconv.Itoa(co.port)
	co.kill(t)
	co.opts.args = []string{"-addr", "0.0.0.0:" + port, "-insecure"}
	if err := co.launch(); err != nil {
		t.Fatalf("coordinator on 0.0.0.0 with -insecure: %v", err)
	}
	out := co.proc.output()
	var warned bool
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "open API") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no WARN line about the open API in the coordinator's log:\n%s", out)
	}
}

// Through a runner's gateway, a run that belongs to another session and a run that does not exist get the
// same answer, so an agent cannot learn which ids exist.
func TestGatewayForeignAndUnknownRunsReadAlike(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	co := c.startCoordinator(coordOpts{})
	c.startRunner(co, runnerOpts{name: "r1", blueprints: []string{testAgent("probe")}})
	a := co.admin()

	foreign := a.syncRun(map[string]any{"agent_name": "probe", "parameters": map[string]any{"tag": "foreign"}})
	unknown := "run_01jzzzzzzzzzzzzzzzzzzzzzzz"
	res := a.syncRun(map[string]any{"agent_name": "probe", "parameters": map[string]any{
		"get": "/runs/" + foreign.RunID + ",/runs/" + unknown + ",/sessions/" + foreign.SessionID + ",/sessions/ses_01jzzzzzzzzzzzzzzzzzzzzzzz",
	}})
	out := decodeAgentOutput(t, res.Result)
	if len(out.Gets) != 4 {
		t.Fatalf("gateway answers: %s, want 4", mustJSON(t, out.Gets))
	}
	// The message names the id asked for; apart from it, the two answers of each pair must be identical.
	norm := func(i int, id string) string {
		var e map[string]any
		if err := json.Unmarshal(out.Gets[i].Body, &e); err != nil {
			t.Fatalf("answer to %s: %s", out.Gets[i].Path, out.Gets[i].Body)
		}
		b, _ := json.Marshal(e)
		return strconv.Itoa(out.Gets[i].Status) + " " + strings.ReplaceAll(string(b), id, "ID")
	}
	for _, pair := range [][2]int{{0, 1}, {2, 3}} {
		f := norm(pair[0], strings.TrimPrefix(strings.TrimPrefix(out.Gets[pair[0]].Path, "/runs/"), "/sessions/"))
		u := norm(pair[1], strings.TrimPrefix(strings.TrimPrefix(out.Gets[pair[1]].Path, "/runs/"), "/sessions/"))
		if f != u {
			t.Errorf("foreign %s answered %s\nunknown %s answered %s\nwant the same answer", out.Gets[pair[0]].Path, f, out.Gets[pair[1]].Path, u)
		}
		if out.Gets[pair[0]].Status < 400 || out.Gets[pair[0]].Status == http.StatusInternalServerError {
			t.Errorf("foreign %s answered %d, want a 4xx", out.Gets[pair[0]].Path, out.Gets[pair[0]].Status)
		}
	}
}
