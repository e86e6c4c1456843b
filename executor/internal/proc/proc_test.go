package proc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

func TestEnviron(t *testing.T) {
	t.Setenv("PROC_TEST_A", "runner")
	env := Environ(isolation.Config{}, map[string]string{"PROC_TEST_A": "layer1", "PROC_TEST_B": "layer1"}, nil, map[string]string{"PROC_TEST_B": "layer3"})
	if got := Lookup(env, "PROC_TEST_A"); got != "layer1" {
		t.Errorf("PROC_TEST_A = %q, want layer1", got)
	}
	if got := Lookup(env, "PROC_TEST_B"); got != "layer3" {
		t.Errorf("PROC_TEST_B = %q, want layer3", got)
	}
	n := 0
	for _, kv := range env {
		if len(kv) > 12 && kv[:12] == "PROC_TEST_A=" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("PROC_TEST_A appears %d times, want once", n)
	}
	if Lookup(env, "PROC_TEST_NONE") != "" {
		t.Error("Lookup of an unset name is not empty")
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := dir + "/prog"
	if err := os.WriteFile(prog, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := LookPath("prog", "relative:"+dir); err != nil || got != prog {
		t.Errorf("LookPath(prog) = %q, %v; want %q", got, err, prog)
	}
	if got, err := LookPath("./x/y", ""); err != nil || got != "./x/y" {
		t.Errorf("LookPath(./x/y) = %q, %v; want it as is", got, err)
	}
	if _, err := LookPath("prog", "relative"); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("LookPath with only a relative PATH entry: error = %v, want ErrNotFound", err)
	}
}

func TestRunEdges(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	x, err := Run(ctx, Spec{Path: "/nonexistent", Args: []string{"x"}})
	if err != nil || x.End != Stopped || x.Code() != -1 || x.Description() != "stopped" || x.Pid != 0 {
		t.Errorf("Run with an ended context = %+v, %v; want Stopped without starting", x, err)
	}
	if _, err := Run(t.Context(), Spec{Path: "/nonexistent/prog", Args: []string{"prog"}}); err == nil {
		t.Error("Run of a missing program: want an error")
	}
	if _, err := Run(t.Context(), Spec{}); err == nil {
		t.Error("Run with an empty argv: want an error")
	}
}

// Finish returns at once when the program never started (Read never ran).
func TestPumpFinishWithoutRead(t *testing.T) {
	t.Parallel()
	p := NewStderrPump("ses_x", 0, nil)
	p.Start(t.Context(), orchestrator.DiscardEvents)
	done := make(chan struct{})
	go func() { p.Finish(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Finish hung")
	}
	if p.maxLine != MinStderrLine {
		t.Errorf("maxLine = %d, want it raised to %d", p.maxLine, MinStderrLine)
	}
}

// A pump reuses the reader of an earlier one (pooled): nothing the earlier one left buffered, such as a
// last line without its newline, reaches the next.
func TestPumpReaderReuse(t *testing.T) {
	lines := func(input string) []string {
		var got []string
		p := NewStderrPump("ses_x", MinStderrLine, nil)
		p.Start(t.Context(), orchestrator.EventSinkFunc(func(_ context.Context, events ...orchestrator.Event) error {
			for _, e := range events {
				var d stderrData
				if err := json.Unmarshal(e.Data, &d); err != nil {
					t.Error(err)
				}
				got = append(got, d.Line)
			}
			return nil
		}))
		p.Read(strings.NewReader(input))
		p.Finish()
		return got
	}
	for range 3 {
		if got := lines("a\n" + strings.Repeat("x", 2*MinStderrLine)); len(got) != 2 || got[0] != "a" {
			t.Fatalf("first pump's lines = %q", got)
		}
		if got := lines("b\nc"); !slices.Equal(got, []string{"b", "c"}) {
			t.Fatalf("next pump's lines = %q, want [b c]", got)
		}
	}
}
